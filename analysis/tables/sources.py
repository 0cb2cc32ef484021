"""Where a table's timings come from, as one label per (backend, cluster, place, links).

The label is what the report groups by before it ranks anything: a box cell at
200Mbit, a box cell at 100Mbit and a test-instance cell of one design are three
sources, never one, so no verdict, plot line or comparison mixes them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["data_note", "flux_kind", "source_label", "source_names"]

# How a place reads in a label: `box on flux:vm`, `test instance on flux:vm`.
_PLACE_WORDS = {"box": "box", "test-instance": "test instance", "allocation": "allocation"}


def source_label(backend: object, cluster: object, place: object = "", links: object = "") -> str:
    """Where timings come from: `local:vm`, `kubernetes/gke-30`, `seed logs`, and with a
    place or links `box on flux:vm, links 200Mbit` or `local:vm, links 200Mbit`."""
    host = _host(_text(backend), _text(cluster))
    place, links = _text(place), _text(links)
    label = f"{_PLACE_WORDS.get(place, place)} on {host}" if place else host
    return f"{label}, links {links}" if links else label


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
    columns = [
        frame[name].tolist() if name in frame.columns else [""] * len(frame)
        for name in ("backend", "cluster", "place", "links")
    ]
    return [source_label(*values) for values in zip(*columns, strict=True)]


def flux_kind(source: str) -> str:
    """`emulated Flux`, `real Flux`, or "" (the seed's logs, Kubernetes: no more known)."""
    if source.startswith("local"):
        return "emulated Flux"
    if source.startswith("flux") or source.split(" on ")[0] in _PLACE_WORDS.values():
        return "real Flux"
    return ""


def data_note(sources: list[str]) -> str:
    """`data: box on flux:vm, links 200Mbit (real Flux)`: the emulator's timings are its
    own, and a box is not a test instance, so every plot and verdict names where it ran."""
    notes = [f"{s} ({flux_kind(s)})" if flux_kind(s) else s for s in sources]
    # Labels hold commas (`links 200Mbit, rank 0 1Gbit`): sources are set apart by `;`.
    return "data: " + "; ".join(notes)
