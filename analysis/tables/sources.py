"""Where a table's timings come from, as one label per (backend, cluster, place, links,
blob kind), and the Flux version and templates where those vary in the table.

The label is what the report groups by before it ranks anything: a box cell at
200Mbit, a box cell at 100Mbit and a test-instance cell of one design are three
sources, never one, so no verdict, plot line or comparison mixes them.  Zero
blobs (formats/blobs.py) are a source of their own too, named on the label
(`seed logs, zero blobs`): their times measure each rank's disk writes, and are
never ranked against random blobs'.  Random blobs, kary's own, add nothing.
"""

from __future__ import annotations

from typing import Any

from experiments.formats.blobs import DEDUPLICATED, DEFAULT_BLOB
from experiments.formats.parsed import RAN_COLUMNS

__all__ = ["data_note", "deduplicated", "flux_kind", "source_label", "source_names"]

# How a place reads in a label: `box on flux:vm`, `test instance on flux:vm`.
_PLACE_WORDS = {"box": "box", "test-instance": "test instance", "allocation": "allocation"}


def source_label(
    backend: object,
    cluster: object,
    place: object = "",
    links: object = "",
    blob: object = "",
    ran: str = "",
) -> str:
    """Where timings come from: `local:vm`, `kubernetes/gke-30`, `seed logs`, and with a
    place or links `box on flux:vm, links 200Mbit` or `local:vm, links 200Mbit`; with
    `ran` (`Flux 0.88.0`) that; with blobs other than random, `seed logs, zero blobs`."""
    host = _host(_text(backend), _text(cluster))
    place, links, blob = _text(place), _text(links), _text(blob)
    label = f"{_PLACE_WORDS.get(place, place)} on {host}" if place else host
    label = f"{label}, links {links}" if links else label
    label = f"{label}, {ran}" if ran else label
    return f"{label}, {_blob_words(blob)}" if blob and blob != DEFAULT_BLOB else label


def _blob_words(blob: str) -> str:
    return "zero blobs" if blob == "zeros" else f"{blob} blobs"


def deduplicated(source: str) -> bool:
    """The source's blobs collapse to a few distinct chunks (zeros): its archive times
    measure each rank's disk writes."""
    return any(source.endswith(f", {_blob_words(kind)}") for kind in DEDUPLICATED)


def _host(backend: str, cluster: str) -> str:
    if not backend and not cluster:
        return "seed logs"
    if not cluster or cluster.startswith(f"{backend}:"):  # local:HOST names itself
        return cluster or backend
    return f"{backend}/{cluster}"


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def source_names(frame: Any) -> list[str]:
    """Per row of a table (a DataFrame: not imported, as the parse's workers import this
    module and never pandas), its source label; a column it lacks counts as empty."""
    # As numpy object arrays: a pandas string column's tolist() steps through the
    # column one element at a time.
    columns = [
        frame[name].to_numpy(dtype=object) if name in frame.columns else [""] * len(frame)
        for name in ("backend", "cluster", "place", "links", "blob")
    ]
    ran = _ran_texts(frame)
    # A table of 200,000 events has a handful of sources: each is worked out once.
    labels: dict[tuple[object, ...], str] = {}
    names = []
    for row in zip(*columns, ran, strict=True):
        label = labels.get(row)
        if label is None:
            backend, cluster, place, links, blob, text = row
            label = labels[row] = source_label(backend, cluster, place, links, blob, ran=text)
        names.append(label)
    return names


# How a varying Flux version or template hash reads in a label.
_RAN_WORDS = {"flux_version": "Flux {}", "template_hash": "templates {}"}


def _ran_texts(frame: Any) -> list[str]:
    """Per row, `Flux 0.88.0, templates 1a2b` over the RAN_COLUMNS whose value varies in
    the table (another Flux or template is another benchmark: never one source); "" for
    every row where none does, so a table of one Flux and one template reads as before."""
    varying = [
        name
        for name in RAN_COLUMNS
        if name in frame.columns and len({_text(v) for v in frame[name].unique()}) > 1
    ]
    if not varying:
        return [""] * len(frame)
    columns = zip(*(frame[name].to_numpy(dtype=object) for name in varying), strict=True)
    return [
        ", ".join(
            _RAN_WORDS[name].format(_text(value) or "not recorded")
            for name, value in zip(varying, values, strict=True)
        )
        for values in columns
    ]


def flux_kind(source: str) -> str:
    """`emulated Flux`, `real Flux`, or "" (flux-distribute's logs, Kubernetes: no more known)."""
    if source.startswith("local"):
        return "emulated Flux"
    if source.startswith("flux") or source.split(" on ")[0] in _PLACE_WORDS.values():
        return "real Flux"
    return ""


def data_note(sources: list[str], archive: bool = False) -> str:
    """`data: box on flux:vm, links 200Mbit (real Flux)`: the emulator's timings are its
    own, and a box is not a test instance, so every plot and verdict names where it ran.
    A zero-blob source is named so (`seed logs, zero blobs`), and where the times are an
    archive's distribution (`archive`), what they measure: each rank's disk writes."""
    notes = []
    for source in sources:
        said = [flux_kind(source)] if flux_kind(source) else []
        if archive and deduplicated(source):
            said.append("deduplicated: each rank's disk writes")
        notes.append(f"{source} ({'; '.join(said)})" if said else source)
    # Labels hold commas (`links 200Mbit, rank 0 1Gbit`): sources are set apart by `;`.
    return "data: " + "; ".join(notes)
