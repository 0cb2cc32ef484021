"""The knob plot: does a Flux knob (chunksize, mmap, the cache size) change a distribution?

`knob-<knob>-<event>.png`, per distribute event and per knob that takes more
than one value: x is the knob's values (Flux's default first, then off/on or
by size), y the median seconds over iterations with summary.csv's interval
bars, as time-vs-size draws them; one panel per node count and size, one line
per topology (and setting of the other knobs that vary).  analysis.plots.figures makes
the figure; this module says what goes in it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from analysis.plots.parts import (
    bars_note,
    caption_data,
    colors,
    errorbar,
    legend,
    mark_failures,
    with_source,
)
from analysis.tables.blobs import distributes_archive
from analysis.tables.knobs import design_axes, knob_value_text, setting_labels
from experiments.formats.cell_layout import knob_label_order, size_text
from experiments.formats.events import topology_order_key

__all__ = ["KnobPlot", "knob_plot"]

_WHAT = {
    "chunksize": "flux archive create --chunksize",
    "mmap": "flux archive create --mmap",
    "purge_target_size": "content cache per broker (purge-target-size)",
}


@dataclass(frozen=True)
class KnobPlot:
    """The rows of one knob plot, and its panels: (nodes, size in bytes, size label)."""

    knob: str
    event: str
    rows: pd.DataFrame
    panels: list[tuple[int, int, str]]

    def draw(self, figure: Figure, axes: list[Axes]) -> None:
        """Draw into `axes`, one per panel, of `figure`."""
        rows, knob = self.rows, self.knob
        values = sorted(set(rows[knob].astype(str)), key=knob_label_order)
        position = {value: i for i, value in enumerate(values)}
        lines = _line_order(rows)
        palette = dict(zip(lines, colors(len(lines)), strict=True))
        for ax, (nodes, size, label) in zip(axes, self.panels, strict=True):
            panel = rows[(rows["nodes"] == nodes) & (rows["size_bytes"] == size)]
            for name in lines:
                line = panel[panel["line"] == name]
                if line.empty:
                    continue
                line = line.assign(pos=line[knob].astype(str).map(position)).sort_values("pos")
                x = line["pos"].to_numpy(dtype=float)
                timed = line["n"].to_numpy() > 0
                errorbar(ax, x[timed], line[timed], palette[name], name)
                mark_failures(ax, x, line, palette[name])
            ax.set_xticks(range(len(values)))
            ax.set_xticklabels([knob_value_text(v) for v in values])
            ax.set_xlim(-0.5, len(values) - 0.5)
            ax.set_title(f"{nodes} nodes · {size_text(label)}")
            ax.set_xlabel(knob.replace("_", "-"))
            ax.set_ylabel("seconds (median)")
        legend(figure, axes, "topology", lines)
        sources = sorted(set(rows["source_name"]))
        figure.suptitle(
            f"{self.event}: does {knob.replace('_', '-')} matter? ({_WHAT[knob]})\n"
            f"{caption_data(figure, sources, distributes_archive(self.event))}\n"
            f"point: median over iterations · {bars_note(rows)} · x: failed steps",
            fontsize=10,
        )


def knob_plot(summary: pd.DataFrame, event: str, knob: str) -> KnobPlot:
    """What the plot of `knob` for `event` shows, from summary.csv's rows."""
    rows = with_source(summary[summary["event"] == event])
    others = [k for k in design_axes(rows) if k != knob]
    names = rows["topo"].astype(str).to_numpy(dtype=object)
    settings = np.array(setting_labels(rows, others), dtype=object)
    names = np.where(settings != "", names + " · " + settings, names)
    if rows["source_name"].nunique() > 1:
        names = names + " [" + rows["source_name"].astype(str).to_numpy(dtype=object) + "]"
    rows = rows.assign(line=names)
    panels = sorted(
        {(int(n), int(s), str(label)) for n, s, label in
         zip(rows["nodes"], rows["size_bytes"], rows["size_label"], strict=True)}
    )  # fmt: skip
    return KnobPlot(knob, event, rows, panels)


def _line_order(rows: pd.DataFrame) -> list[str]:
    """Lines by topology order first, then by name."""
    first = rows.drop_duplicates("line")
    keyed = zip(first["topo"].astype(str), first["line"].astype(str), strict=True)
    return [line for _, line in sorted(keyed, key=lambda t: (topology_order_key(t[0]), t[1]))]
