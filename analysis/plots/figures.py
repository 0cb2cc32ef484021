"""PNG plots of a parsed tree: readable, topologies in natural order, failures shown.

- time-vs-size-<event>.png: per event, median seconds against size, one line
  per topology, one panel per node count; bars are the median's interval
  (see analysis.tables.stats), their coverage in the title, and none where n < 3;
  red crosses count failed steps, never timed.  Where a Flux knob varies, each
  setting of it is a line of its own style, in the topology's colour.
- knob-<knob>-<event>.png: per distribute event and knob that varies, median
  seconds against the knob's values (analysis.plots.knobs), same bars.
- seconds-per-gb-<event>.png: per distribute event, median seconds per GiB
  (over sizes and iterations) against topology, one line per node count. No
  interval: different sizes are not repeated runs of one measurement.
- ping-latency-vs-hops.png: flux ping latency against route length.
- failures.png: failed steps per event and topology, when there are any.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from io import BytesIO
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, never a display

import numpy as np
import pandas as pd
import PIL.Image
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from analysis.plots.knobs import knob_plot
from analysis.plots.parts import (
    FAILED_COLOR,
    LINESTYLES,
    bars_note,
    caption_data,
    colors,
    data_note,
    errorbar,
    legend,
    mark_failures,
    with_source,
)
from analysis.plots.theme import DRAWING, colormap_palette, lut_palette
from analysis.read.workers import Forked, can_fork, usable_cores
from analysis.tables.blobs import distributes_archive
from analysis.tables.knobs import design_axes, setting_labels, setting_order_key, varying_knobs
from analysis.tables.parsed_dir import Parsed
from analysis.tables.stats import summarize
from experiments.files import write_atomic
from experiments.formats.cell_layout import size_text
from experiments.formats.events import SETUP_EVENTS, event_sort_key, topology_order_key

__all__ = ["PLOT_PREFIXES", "PendingPlots", "start_plots", "write_plots"]

PLOT_PREFIXES = ("time-vs-size-", "seconds-per-gb-", "knob-", "ping-latency-vs-hops", "failures")
_DPI = 110

# A plot: its file name and a function drawing its figure.
_Plot = tuple[str, Callable[[], Figure]]


def write_plots(parsed: Parsed, plot_dir: Path, jobs: int | None = None) -> list[Path]:
    """Draw every plot for `parsed` into plot_dir, replacing plots of an earlier parse."""
    return start_plots(parsed, plot_dir, jobs).wait()


class PendingPlots:
    """Plots being drawn in forked processes (or, where forking is unsafe, on `wait`)."""

    def __init__(self, plots: list[_Plot], plot_dir: Path, jobs: int) -> None:
        self._tasks = [partial(_draw, name, draw, plot_dir) for name, draw in plots]
        self._forked: Forked[Path] | None = None
        self._written: list[Path] | None = None
        workers = min(jobs, len(self._tasks))
        if workers > 1 and can_fork():
            self._forked = Forked(self._tasks, workers)

    def wait(self) -> list[Path]:
        """The PNGs written, in plan order, once all are drawn (a plot's error is raised)."""
        if self._written is None:
            if self._forked is not None:
                self._written = self._forked.results()
            else:
                self._written = [task() for task in self._tasks]
        return self._written


def start_plots(parsed: Parsed, plot_dir: Path, jobs: int | None = None) -> PendingPlots:
    """Start drawing every plot for `parsed` into plot_dir; `wait()` on the result.

    Earlier plots there are removed first. The plots are drawn in `jobs` forked
    processes (default: one per usable core), so the caller can do other work
    meanwhile; one process draws them in turn where forking is not safe.
    """
    plot_dir.mkdir(parents=True, exist_ok=True)
    for old in plot_dir.glob("*.png"):
        if old.name.startswith(PLOT_PREFIXES):
            old.unlink()
    return PendingPlots(_plan(parsed), plot_dir, usable_cores() if jobs is None else jobs)


def _plan(parsed: Parsed) -> list[_Plot]:
    """The plots to draw, each a task for one process.

    The failures plot goes first, as the one that used to import seaborn did;
    the order is otherwise the report's.
    """
    events = parsed.events
    steps = events[~events["event"].isin(SETUP_EVENTS)] if not events.empty else events
    summary = parsed.summary
    plots: list[_Plot] = []
    if not steps.empty and (steps["status"] == "failed").any():
        plots.append(("failures.png", partial(_failures, steps)))
    # A step no cell timed (every one failed or void: a failed study) has nothing to draw
    # against size; the failures plot and the report's failures section say what happened.
    summarised = set(summary["event"]) if not summary.empty else set()
    timed = set(steps.loc[steps["status"] == "ok", "event"]) if not steps.empty else set()
    for event in sorted(set(steps["event"]), key=event_sort_key):
        if event in summarised:
            time_vs_size = partial(_time_vs_size, summary, event)
            plots.append((f"time-vs-size-{_slug(event)}.png", time_vs_size))
        if event.startswith("distribute-") and event in timed:
            per_gb = partial(_seconds_per_gb, steps, event)
            plots.append((f"seconds-per-gb-{_slug(event)}.png", per_gb))
            for knob in varying_knobs(steps):
                effect = partial(_knob_effect, summary, event, knob)
                plots.append((f"knob-{knob}-{_slug(event)}.png", effect))
    if not parsed.ping.empty:
        plots.append(("ping-latency-vs-hops.png", partial(_ping_latency, parsed.ping)))
    return plots


def _draw(name: str, draw: Callable[[], Figure], plot_dir: Path) -> Path:
    """Draw one figure, write it and drop it: many events never hold many figures."""
    path = plot_dir / name
    with matplotlib.rc_context(DRAWING):
        write_atomic(path, _png(draw()))
    return path


def _png(figure: Figure) -> bytes:
    """The figure as PNG, drawn once.

    `savefig` lays a constrained figure out in a first draw and again in the
    one it saves; a single draw on an Agg canvas gives the same pixels.  The
    background is opaque, so the alpha channel is dropped, and zlib level 3
    compressed these plots faster than the default 6 (to within a few percent
    of the size).
    """
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    image = PIL.Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba())
    buffer = BytesIO()
    dpi = (figure.dpi, figure.dpi)
    image.convert("RGB").save(buffer, format="png", compress_level=3, dpi=dpi)
    return buffer.getvalue()


def _figure(figsize: tuple[float, float]) -> Figure:
    return Figure(figsize=figsize, dpi=_DPI, layout="constrained")


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def _topologies(values: pd.Series) -> list[str]:
    return sorted(set(values.astype(str)), key=topology_order_key)


def _panels(count: int) -> tuple[Figure, list[Axes]]:
    cols = min(count, 3)
    rows = -(-count // cols)
    # Panels small enough that the page shows three side by side near their drawn
    # size: wider ones were scaled down until their labels were too small to read.
    figure = _figure((max(3.9 * cols + 1.6, 6.4), 3.4 * rows + 1.0))
    axes = figure.subplots(rows, cols, squeeze=False)
    flat = list(axes.ravel())
    for extra in flat[count:]:
        extra.set_visible(False)
    return figure, flat[:count]


def _time_vs_size(summary: pd.DataFrame, event: str) -> Figure:
    rows = with_source(summary[summary["event"] == event])
    knobs = design_axes(rows)
    settings, orders = setting_labels(rows, knobs), setting_order_key(rows, knobs)
    rows = rows.assign(setting=settings)
    sources = sorted(set(rows["source_name"]))
    # A line style per (knob setting, source); a colour per topology.
    keyed = sorted(zip(orders, settings, rows["source_name"], strict=True))
    variants = list(dict.fromkeys((setting, source) for _, setting, source in keyed))
    node_counts = sorted(set(rows["nodes"]))
    topologies = _topologies(rows["topo"])
    palette = dict(zip(topologies, colors(len(topologies)), strict=True))
    figure, axes = _panels(len(node_counts))
    sizes = rows.drop_duplicates("size_bytes").sort_values("size_bytes")

    def label(topo: str, setting: str, source: str) -> str:
        named = f"{topo} · {setting}" if setting else topo
        return named if len(sources) == 1 else f"{named} [{source}]"

    for ax, nodes in zip(axes, node_counts, strict=True):
        panel = rows[rows["nodes"] == nodes]
        for topo in topologies:
            for number, (setting, source) in enumerate(variants):
                line = panel[
                    (panel["topo"] == topo)
                    & (panel["setting"] == setting)
                    & (panel["source_name"] == source)
                ]
                if line.empty:
                    continue
                line = line.sort_values("size_bytes")
                x = line["size_bytes"].to_numpy(dtype=float) / 2**30
                timed = line["n"].to_numpy() > 0
                style = LINESTYLES[number % len(LINESTYLES)]
                name = label(topo, setting, source)
                errorbar(ax, x[timed], line[timed], palette[topo], name, style)
                mark_failures(ax, x, line, palette[topo])
        ax.set_title(f"{nodes} nodes")
        ax.set_xlabel("blob size")
        ax.set_ylabel("seconds (median)")
        _size_axis(ax, sizes)
    order = [label(topo, *variant) for topo in topologies for variant in variants]
    legend(figure, axes, "topology, knobs" if knobs else "topology", order)
    # Three short lines: a one-panel figure is narrow, and one long line was clipped.
    figure.suptitle(
        f"{event}: time against size\n"
        f"{caption_data(figure, sources, distributes_archive(event))}\n"
        f"point: median over iterations · {bars_note(rows)} · x: failed steps",
        fontsize=10,
    )
    return figure


def _knob_effect(summary: pd.DataFrame, event: str, knob: str) -> Figure:
    plot = knob_plot(summary, event, knob)
    figure, axes = _panels(len(plot.panels))
    plot.draw(figure, axes)
    return figure


def _size_axis(ax: Axes, sizes: pd.DataFrame) -> None:
    x = sizes["size_bytes"].to_numpy(dtype=float) / 2**30
    if len(x) and x.max() / max(x.min(), 1e-12) >= 8:
        ax.set_xscale("log", base=2)
    if 0 < len(x) <= 12:
        ax.set_xticks(x)
        ax.set_xticklabels([size_text(label) for label in sizes["size_label"]], rotation=0)
        ax.minorticks_off()


def _seconds_per_gb(steps: pd.DataFrame, event: str) -> Figure:
    rows = with_source(steps[steps["event"] == event])
    rows["seconds_per_gb"] = rows["time_seconds"] / rows["size_gb"].astype(float)
    stats = summarize(rows, ["nodes", "topo", "source_name"], value="seconds_per_gb")
    sources = sorted(set(stats["source_name"]))
    topologies = _topologies(stats["topo"])
    position = {topo: i for i, topo in enumerate(topologies)}
    lines = sorted(set(zip(stats["nodes"], stats["source_name"], strict=True)))
    palette = lut_palette("rocket", len(lines))
    # Dodge the lines a little so their points do not hide each other.
    dodge = np.linspace(-0.12, 0.12, len(lines)) if len(lines) > 1 else [0.0]
    figure = _figure((max(7.5, 0.8 * len(topologies) + 4), 4.6))
    ax = figure.subplots()
    for color, (nodes, source), shift in zip(palette, lines, dodge, strict=True):
        line = stats[(stats["nodes"] == nodes) & (stats["source_name"] == source)].copy()
        line["pos"] = line["topo"].map(position)
        line = line.sort_values("pos")
        x = line["pos"].to_numpy(dtype=float) + shift
        timed = line["n"].to_numpy() > 0
        label = f"{nodes} nodes" if len(sources) == 1 else f"{nodes} nodes [{source}]"
        # Medians only: pooled over sizes, these are not repeats, so no interval.
        errorbar(ax, x[timed], line[timed].drop(columns=["ci_low", "ci_high"]), color, label)
        mark_failures(ax, x, line, color)
    ax.set_xticks(range(len(topologies)))
    ax.set_xticklabels(topologies, rotation=30 if len(topologies) > 6 else 0)
    ax.set_xlabel("topology (fan-out)")
    ax.set_ylabel("seconds per GiB (median)")
    ax.set_title(
        f"{event}: seconds per GiB against fan-out\n"
        "median over sizes and iterations; no interval: sizes are not repeated runs\n"
        f"{caption_data(figure, sources, distributes_archive(event))}",
        fontsize=10,
    )
    ax.legend(title="nodes", loc="center left", bbox_to_anchor=(1.0, 0.5))
    return figure


def _ping_latency(ping: pd.DataFrame) -> Figure:
    ok = ping[ping["status"] == "ok"].copy()
    services = sorted(set(ping["service"].astype(str)))
    figure, axes = _panels(max(len(services), 1))
    sizes = sorted(set(ok["message_size_mb"]))
    palette = dict(zip(sizes, lut_palette("mako", len(sizes)), strict=True))
    for ax, service in zip(axes, services, strict=False):
        part = ok[ok["service"] == service]
        for size in sizes:
            points = part[part["message_size_mb"] == size]
            if points.empty:
                continue
            medians = points.groupby("hops")["time_ms"].median()
            ax.scatter(points["hops"], points["time_ms"], s=12, alpha=0.45, color=palette[size])
            ax.plot(medians.index, medians.to_numpy(), marker="o", ms=4, color=palette[size],
                    label=f"{size:g} MiB")  # fmt: skip
        failed = int((ping[ping["service"] == service]["status"] == "failed").sum())
        title = f"flux ping {service}" + (f" ({failed} failed)" if failed else "")
        ax.set_title(title, color=FAILED_COLOR if failed else "black")
        ax.set_xlabel("hops (route length)")
        ax.set_ylabel("latency (ms)")
        if len(ok) and ok["time_ms"].max() / max(ok["time_ms"].min(), 1e-6) > 100:
            ax.set_yscale("log")
    legend(figure, axes, "pad", [f"{size:g} MiB" for size in sizes])
    sources = sorted(set(with_source(ping)["source_name"]))
    figure.suptitle(f"ping latency against hops; line: median ({data_note(sources)})", fontsize=10)
    return figure


def _failures(steps: pd.DataFrame) -> Figure:
    failed = steps[steps["status"] == "failed"]
    counts = failed.groupby(["event", "topo"]).size().rename("failed").reset_index()
    events = sorted(set(counts["event"]), key=event_sort_key)
    topologies = _topologies(counts["topo"])
    figure = _figure((max(6.0, 0.9 * len(events) + 3), 4.6))
    ax = figure.subplots()
    # Grouped bars as seaborn's barplot lays them out (0.8 wide per event, one
    # slot per topology), drawn with matplotlib alone: seaborn kept a reference
    # to the figure alive after it was written.
    found = {
        (e, t): int(n) for e, t, n in counts[["event", "topo", "failed"]].itertuples(index=False)
    }
    width = 0.8 / max(len(topologies), 1)
    for slot, (topo, colour) in enumerate(
        zip(topologies, colormap_palette("viridis", len(topologies)), strict=True)
    ):
        ax.bar(
            [i - 0.4 + width * (slot + 0.5) for i in range(len(events))],
            [found.get((event, topo), 0) for event in events],
            width=width,
            color=colour,
            label=topo,
        )
    ax.set_xticks(range(len(events)))
    ax.set_xticklabels(events, rotation=30, ha="right")
    ax.set_ylabel("failed steps")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("failed steps (no timing recorded)", fontsize=10)
    ax.legend(title="topology", loc="center left", bbox_to_anchor=(1.0, 0.5))
    return figure
