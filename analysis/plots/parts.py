"""What every plot draws the same way: median lines with their intervals, failures, sources.

Marks on axes only; figures are made and written by analysis.plots.figures.
"""

from __future__ import annotations

import textwrap

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.typing import ColorType

from analysis.plots.theme import COLORBLIND, colormap_palette
from analysis.tables.sources import data_note, source_names

__all__ = [
    "FAILED_COLOR",
    "LINESTYLES",
    "bars_note",
    "caption_data",
    "colors",
    "data_note",
    "errorbar",
    "legend",
    "mark_failures",
    "with_source",
]

FAILED_COLOR = "#d62728"


def with_source(frame: pd.DataFrame) -> pd.DataFrame:
    """Add `source_name`: where the timings come from (backend/cluster, place and links,
    or flux-distribute's logs); each source is a line of its own, never pooled with another."""
    return frame.assign(source_name=source_names(frame))


LINESTYLES = ("-", "--", ":", "-.")


def caption_data(figure: Figure, sources: list[str], archive: bool = False) -> str:
    """`data_note` wrapped to the figure's width: several sources (a box and a test
    instance, zero blobs beside random) make one line longer than a narrow figure."""
    width = max(60, int(figure.get_figwidth() * 13))
    return textwrap.fill(data_note(sources, archive), width, break_long_words=False)


def bars_note(rows: pd.DataFrame) -> str:
    """What the bars are, with the coverage they actually have (it depends on n)."""
    coverages = sorted(set(rows["ci_coverage"].dropna().astype(float)))
    if not coverages:
        return "no bars: fewer than 3 runs"
    low, high = f"{coverages[0]:.0%}", f"{coverages[-1]:.0%}"
    covers = low if low == high else f"{low}–{high}"
    return f"bars: its interval, {covers} coverage"


def colors(count: int) -> list[ColorType]:
    # Distinct hues while they last; a sequential map once there are too many.
    if count <= len(COLORBLIND):
        return [matplotlib.colors.to_rgb(c) for c in COLORBLIND[:count]]
    return list(colormap_palette("viridis", count))


def errorbar(
    ax: Axes,
    x: np.ndarray,
    line: pd.DataFrame,
    color: ColorType,
    label: str,
    style: str = "-",
) -> None:
    """The medians as a line; bars only where there is an interval (n >= 3), never a
    zero-length bar that would read as a very sure value."""
    median = line["median"].to_numpy(dtype=float)
    ax.plot(x, median, color=color, label=label, marker="o", ms=4, lw=1.4, linestyle=style)
    if "ci_low" not in line:
        return
    low = line["ci_low"].to_numpy(dtype=float)
    high = line["ci_high"].to_numpy(dtype=float)
    has_ci = ~np.isnan(low)
    if has_ci.any():
        yerr = np.vstack([median[has_ci] - low[has_ci], high[has_ci] - median[has_ci]])
        ax.errorbar(
            x[has_ci], median[has_ci], yerr=yerr, fmt="none", ecolor=color, capsize=3, lw=1.4
        )


def mark_failures(ax: Axes, x: np.ndarray, line: pd.DataFrame, color: ColorType) -> None:
    failed = line["failed"].to_numpy()
    if not failed.any():
        return
    median = line["median"].to_numpy(dtype=float)
    for xi, count, yi in zip(x, failed, median, strict=True):
        if count == 0:
            continue
        # No timing exists for a failed step: mark it at the median when there
        # is one, else on the axis floor, and say how many failed.
        y = yi if not np.isnan(yi) else 0.0
        ax.scatter([xi], [y], marker="x", s=60, color=FAILED_COLOR, zorder=5)
        ax.annotate(f"{count} failed", (xi, y), textcoords="offset points", xytext=(4, 4),
                    fontsize=7, color=FAILED_COLOR)  # fmt: skip


def legend(figure: Figure, axes: list[Axes], title: str, order: list[str]) -> None:
    found: dict[str, Artist] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            found.setdefault(label, handle)
    labels = [label for label in order if label in found]
    handles = [found[label] for label in labels]
    if handles:
        figure.legend(handles, labels, title=title, loc="outside right center")
