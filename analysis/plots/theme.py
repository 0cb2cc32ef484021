"""The look of kary's plots: seaborn's "whitegrid" theme and palettes, without importing seaborn.

Importing seaborn imports scipy.stats, about 0.7 s of CPU before the first
plot; the theme is a fixed set of rcParams and the palettes fixed tables, so
they are written out here. tests/analysis/test_analysis_plots.py checks them
against seaborn itself; no plot imports seaborn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import matplotlib as mpl
import numpy as np
from cycler import cycler
from matplotlib.colors import to_rgb

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

__all__ = ["COLORBLIND", "DRAWING", "THEME", "colormap_palette", "lut_palette"]

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


# Beyond seaborn's theme, two settings every kary plot draws with.  A title sits
# on its axes: placing it "automatically" measured every tick label of every
# axes again on each draw (a sixth of a plot's time) only to clear ticks drawn
# on top, which these plots never have.  And no offset text ("+1e4") on an axis
# of seconds.
DRAWING = {**THEME, "axes.titley": 1.0, "axes.formatter.useoffset": False}


def colormap_palette(name: str, count: int) -> list[tuple[float, float, float]]:
    """`count` colours spread over a matplotlib colormap, ends left out (seaborn's rule)."""
    bins = np.linspace(0, 1, count + 2)[1:-1]
    return [tuple(rgb) for rgb in mpl.colormaps[name](bins)[:, :3]]


def lut_palette(name: str, count: int) -> list[tuple[float, float, float]]:
    """`count` colours of seaborn's "rocket" or "mako" colormap, picked as seaborn does."""
    table = _LUTS[name]
    bins = np.linspace(0, 1, count + 2)[1:-1]
    # A 256-entry colormap maps x to entry floor(256 x), as matplotlib's does.
    return [table[min(int(x * 256), 255)] for x in bins]


def _unhex(text: str) -> list[tuple[float, float, float]]:
    return [to_rgb("#" + text[i : i + 6]) for i in range(0, len(text), 6)]


# seaborn's "rocket" and "mako" colormaps (seaborn, BSD-3-Clause, (c) Michael
# Waskom), 256 entries each, to 8 bits a channel: as drawn, the same pixels.
_ROCKET = (
    "03051a04051a05061b06071c07071d08081e0a091f0b09200d0a210e0b22100b23110c24130d25140e26"
    "160e27170f28180f291a102a1b112b1d112c1e122d20122e211330221331241432251433271534281535"
    "2a16362b16372d17382e173930173a31183b33183c34193d35193e37193f381a403a1a413c1a423d1a42"
    "3f1b43401b44421b45431c46451c47461c48481c48491d494b1d4a4c1d4b4e1d4b501d4c511e4d531e4d"
    "541e4e561e4f581e4f591e505b1e515c1e515e1f52601f52611f53631f53641f54661f54681f55691f55"
    "6b1f566d1f566e1f57701f57711f57731f58751f58761f58781f597a1f597b1f597d1f5a7f1e5a811e5a"
    "821e5a841e5a861e5b871e5b891e5b8b1d5b8c1d5b8e1d5b901d5b921c5b931c5b951c5b971c5b981b5b"
    "9a1b5b9c1b5b9e1a5b9f1a5ba11a5ba3195ba4195ba6195aa8185aaa185aab185aad1759af1759b01759"
    "b21758b41658b51657b71657b91657ba1656bc1656bd1655bf1654c11754c21753c41753c51852c71951"
    "c81951ca1a50cb1b4fcd1c4ece1d4ecf1e4dd11f4cd2204cd3214bd5224ad62449d72549d82748d92847"
    "db2946dc2b46dd2c45de2e44df2f44e03143e13342e23442e33641e43841e53940e63b40e73d3fe83f3f"
    "e8403ee9423eea443eeb463eeb483eec4a3eec4c3eed4e3eed503eee523fee543fef5640ef5840ef5a41"
    "f05c42f05e42f06043f16244f16445f16646f26747f26948f26b49f26d4bf26f4cf3714df3734ef37450"
    "f37651f37852f47a54f47c55f47d57f47f58f4815af4835bf4845df4865ef58860f58a61f58b63f58d64"
    "f58f66f59067f59269f5946bf5966cf5976ef59970f69b71f69c73f69e75f6a077f6a178f6a37af6a47c"
    "f6a67ef6a880f6a981f6ab83f6ad85f6ae87f6b089f6b18bf6b38df6b48ff6b691f6b893f6b995f6bb97"
    "f6bc99f6be9bf6bf9df6c19ff7c2a2f7c4a4f7c6a6f7c7a8f7c9aaf7caacf7ccaff7cdb1f7cfb3f7d0b5"
    "f8d1b8f8d3baf8d4bcf8d6bef8d7c0f8d9c3f8dac5f8dcc7f9ddc9f9dfcbf9e0cdf9e2d0f9e3d2f9e5d4"
    "fae6d6fae8d8fae9dafaebdd"
)
_MAKO = (
    "0b04050d04060e05080f060910060a11070c12080d13090f140910150a12160b13170c15180d16190e18"
    "1a0e191b0f1a1c101c1d111d1e111f1f122020132221142322142523152624162825172926172b27182d"
    "28192e291930291a312a1b332b1c352c1c362d1d382e1e392e1e3b2f1f3d30203e312140312142322243"
    "33234534244734254835254a35264c36274d37284f372851382953382a54392b563a2c583a2c593b2d5b"
    "3b2e5d3b2f5f3c30603c31623d31643d32663e33673e34693e356b3f366d3f366f3f3770403872403974"
    "403a76403b78403c79413d7b413e7d413e7f413f8041408241418441428541438741448840468a40478b"
    "40488d40498e3f4a8f3f4b903f4c923e4d933e4f943e50953d51953d52963c53973c55983b56983b5799"
    "3b589a3a599a3a5b9b3a5c9b395d9c395e9c385f9c38619d38629d38639d37649e37659e37669e37689f"
    "36699f366a9f366b9f366ca0366da0366fa03670a03671a03572a13573a13574a13575a13576a23578a2"
    "3579a2357aa2357ba3357ca3357da3357ea4347fa43480a43482a43483a53484a53485a53486a53487a6"
    "3488a63489a6348ba6348ca7348da7348ea7348fa73490a83491a83492a83493a83495a93496a93497a9"
    "3498a93499aa349aaa359baa359caa359eaa359fab35a0ab35a1ab36a2ab36a3ab36a4ab37a5ac37a6ac"
    "37a8ac38a9ac38aaac39abac39acac3aadac3aaead3bafad3cb1ad3cb2ad3db3ad3eb4ad3fb5ad3fb6ad"
    "40b7ad41b8ad42b9ad43baad44bcad45bdad46bead47bfad48c0ad49c1ad4bc2ad4cc3ad4dc4ad4fc5ad"
    "50c6ad52c7ad53c9ad55caad57cbad59ccad5bcdad5ecdad60ceac62cfac65d0ad68d1ad6ad2ad6dd3ad"
    "70d4ad73d4ad76d5ae79d6ae7cd6af7fd7af82d8b085d9b188d9b18bdab28edbb391dbb494dcb596ddb5"
    "99ddb69cdeb79edfb8a1dfb9a4e0bba6e1bca9e1bdabe2beaee3c0b0e4c1b2e4c2b5e5c4b7e6c5b9e6c7"
    "bbe7c8bee8cac0e9ccc2e9cdc4eacfc6ebd1c8ecd2caedd4ccedd6ceeed7d0efd9d2f0dbd4f1dcd6f1de"
    "d8f2e0daf3e1dcf4e3def5e5"
)
_LUTS = {"rocket": _unhex("".join(_ROCKET)), "mako": _unhex("".join(_MAKO))}
