"""The analysis plots, inlined: PNGs from the parsed directory's plots/ as data: URIs.

A directory parsed with --no-plots has none: they are drawn into a temporary
folder with `analysis.plots.figures.write_plots`, the same code `kary parse` runs.
"""

from __future__ import annotations

import base64
import struct
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from analysis.tables.blobs import deduplicated_rows, distributes_archive
from analysis.tables.parsed_dir import Parsed
from experiments.formats.events import event_sort_key

__all__ = ["Plot", "collect_plots"]


@dataclass(frozen=True)
class Plot:
    """One inlined image and where it goes on the page."""

    name: str
    title: str
    uri: str
    width: int
    height: int
    main: bool  # distribution events and failures are shown; other steps fold away


def _png_size(data: bytes) -> tuple[int, int]:
    if data[:8] != b"\x89PNG\r\n\x1a\n" or len(data) < 24:
        return (0, 0)
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


def _event_of(stem: str) -> str:
    """The event a plot file shows ("" for the failures and ping plots)."""
    for prefix in ("seconds-per-gb-", "time-vs-size-"):
        if stem.startswith(prefix):
            return stem[len(prefix) :]
    return stem[len("knob-") :].partition("-")[2] if stem.startswith("knob-") else ""


def _describe(stem: str) -> tuple[str, bool, tuple[object, ...]]:
    """(title, main, sort key) for a plot file name."""
    for prefix, kind, rank in (
        ("seconds-per-gb-", "seconds per GiB against fan-out", 1),
        ("time-vs-size-", "time against size", 0),
    ):
        if stem.startswith(prefix):
            event = stem[len(prefix) :]
            main = event.startswith("distribute-")
            return f"{event}: {kind}", main, (0 if main else 1, event_sort_key(event), rank)
    if stem.startswith("knob-"):
        # knob-<knob>-<event>: the knob is one of kary's, none has a '-' in its name.
        knob, _, event = stem[len("knob-") :].partition("-")
        title = f"{event}: does {knob.replace('_', '-')} matter?"
        return title, True, (0, event_sort_key(event), 2)
    if stem == "failures":
        return "failed steps", True, (-1,)
    if stem.startswith("ping-latency"):
        return "ping latency against hops", True, (0, (99, ""), 9)
    return stem, False, (2, (99, stem), 0)


def _read(plot_dir: Path) -> list[Plot]:
    keyed = []
    for path in plot_dir.glob("*.png"):
        data = path.read_bytes()
        title, main, order = _describe(path.stem)
        width, height = _png_size(data)
        uri = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
        keyed.append(((order, path.stem), Plot(path.stem, title, uri, width, height, main)))
    return [plot for _, plot in sorted(keyed, key=lambda kv: kv[0])]


def collect_plots(parsed: Parsed, parsed_dir: Path) -> list[Plot]:
    """The parse's plots in reading order; drawn afresh when the directory has none."""
    plot_dir = Path(parsed_dir) / "plots"
    if plot_dir.is_dir() and any(plot_dir.glob("*.png")):
        return _with_blobs(_read(plot_dir), parsed)
    if parsed.events.empty and parsed.ping.empty:
        return []
    from analysis.plots.figures import write_plots  # matplotlib is slow to import

    with tempfile.TemporaryDirectory(prefix="kary-report-") as tmp:
        write_plots(parsed, Path(tmp))
        return _with_blobs(_read(Path(tmp)), parsed)


def _with_blobs(plots: list[Plot], parsed: Parsed) -> list[Plot]:
    """A caption of an event some of whose rows had zero blobs says so, and for an archive's
    distribution what its times measure."""
    events = parsed.events
    if events.empty:
        return plots
    dedup = deduplicated_rows(events)
    zeros = set(events.loc[dedup, "event"].astype(str).unique())
    if not zeros:
        return plots
    others = set(events.loc[~dedup, "event"].astype(str).unique())
    labelled = []
    for plot in plots:
        event = _event_of(plot.name)
        if event in zeros:
            note = "zero blobs" + (" on lines of their own" if event in others else "")
            if distributes_archive(event):
                note += " (deduplicated: each rank's disk writes)"
            plot = replace(plot, title=f"{plot.title} · {note}")
        labelled.append(plot)
    return labelled
