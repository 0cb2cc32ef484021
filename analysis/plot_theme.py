"""The look of kary's plots: seaborn's "whitegrid" theme and palettes, without importing seaborn.

Importing seaborn imports scipy.stats, about 0.7 s of CPU before the first
plot; the theme is a fixed set of rcParams and the palettes fixed lists, so
they are written out here. tests/analysis/test_analysis_plots.py checks them
against seaborn itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import matplotlib as mpl
import numpy as np
from cycler import cycler
from matplotlib.colors import to_rgb

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

__all__ = ["COLORBLIND", "THEME", "colormap_palette", "seaborn_palette"]

# seaborn's "deep" (the colour cycle of its theme) and "colorblind" palettes.
_DEEP = (
    "#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3",
    "#937860", "#DA8BC3", "#8C8C8C", "#CCB974", "#64B5CD",
)  # fmt: skip
COLORBLIND = (
    "#0173B2", "#DE8F05", "#029E73", "#D55E00", "#CC78BC",
    "#CA9161", "#FBAFE4", "#949494", "#ECE133", "#56B4E9",
)  # fmt: skip

# What `seaborn.set_theme(style="whitegrid", context="notebook")` sets, less
# `image.cmap` (seaborn's "rocket", which exists only once seaborn is imported;
# no kary plot draws an image).
THEME: dict[RcKeyType, Any] = {
    # style "whitegrid"
    "figure.facecolor": "white",
    "axes.labelcolor": ".15",
    "xtick.direction": "out",
    "ytick.direction": "out",
    "xtick.color": ".15",
    "ytick.color": ".15",
    "axes.axisbelow": True,
    "grid.linestyle": "-",
    "text.color": ".15",
    "font.family": ["sans-serif"],
    "font.sans-serif": [
        "Arial",
        "DejaVu Sans",
        "Liberation Sans",
        "Bitstream Vera Sans",
        "sans-serif",
    ],
    "lines.solid_capstyle": "round",
    "patch.edgecolor": "w",
    "patch.force_edgecolor": True,
    "xtick.top": False,
    "ytick.right": False,
    "axes.grid": True,
    "axes.facecolor": "white",
    "axes.edgecolor": ".8",
    "grid.color": ".8",
    "axes.spines.left": True,
    "axes.spines.bottom": True,
    "axes.spines.right": True,
    "axes.spines.top": True,
    "xtick.bottom": False,
    "ytick.left": False,
    # context "notebook"
    "axes.linewidth": 1.25,
    "grid.linewidth": 1,
    "lines.linewidth": 1.5,
    "lines.markersize": 6,
    "patch.linewidth": 1,
    "xtick.major.width": 1.25,
    "ytick.major.width": 1.25,
    "xtick.minor.width": 1,
    "ytick.minor.width": 1,
    "xtick.major.size": 6,
    "ytick.major.size": 6,
    "xtick.minor.size": 4,
    "ytick.minor.size": 4,
    "font.size": 12,
    "axes.labelsize": 12,
    "axes.titlesize": 12,
    "xtick.labelsize": 11,
    "ytick.labelsize": 11,
    "legend.fontsize": 11,
    "legend.title_fontsize": 12,
    # palette "deep"
    "axes.prop_cycle": cycler(color=[to_rgb(c) for c in _DEEP]),
}


def colormap_palette(name: str, count: int) -> list[tuple[float, float, float]]:
    """`count` colours spread over a matplotlib colormap, ends left out (seaborn's rule)."""
    bins = np.linspace(0, 1, count + 2)[1:-1]
    return [tuple(rgb) for rgb in mpl.colormaps[name](bins)[:, :3]]


def seaborn_palette(name: str, count: int) -> list[tuple[float, float, float]]:
    """A palette only seaborn has ("rocket", "mako"); imports seaborn (and scipy) on first use."""
    import seaborn as sns

    return list(sns.color_palette(name, count))
