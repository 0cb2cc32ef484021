"""Where a cell lives in the raw tree, and how sizes are labelled in names and logs.

A cell is one (nodes, topology, iteration).  Its id is its path below the raw
root, `<nodes>/<topology dir>/<iteration>` (`30/kary-16/0`), the seed's layout,
so the runner writes it and analysis reads it back from the path alone.  ':'
is not portable in paths, so `kary:16` becomes the directory `kary-16`.

A size label is the shortest exact binary unit (`16M`, `1G`); the seed's logs
label sizes as a bare number of GB (`1` .. `10`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

__all__ = [
    "cell_dir",
    "cell_id",
    "cell_of_path",
    "format_size",
    "size_from_label",
    "size_text",
    "topo_from_dirname",
    "topology_dirname",
]


def topology_dirname(topo: str) -> str:
    """`kary:2` -> `kary-2`: the raw tree's directory name; `topo_from_dirname` reads it back."""
    return topo.replace(":", "-")


_DIRNAME = re.compile(r"^(?P<scheme>kary|mincrit)-(?P<k>[0-9]+)$|^(?P<plain>binomial|mincrit)$")


def topo_from_dirname(name: str) -> str | None:
    """`kary-2` -> `kary:2`, `binomial` -> `binomial`; None for anything else."""
    match = _DIRNAME.match(name)
    if match is None:
        return None
    if match.group("plain"):
        return match.group("plain")
    return f"{match.group('scheme')}:{int(match.group('k'))}"


def cell_id(nodes: int, topo: str, iteration: int) -> str:
    """`30/kary-16/0`: the cell's path below the raw root, and its name everywhere."""
    return f"{nodes}/{topology_dirname(topo)}/{iteration}"


def cell_dir(data_dir: Path, nodes: int, topo: str, iteration: int) -> Path:
    """`<data>/<nodes>/<topology dir>/<iteration>`: where a cell's files go."""
    return Path(data_dir) / str(nodes) / topology_dirname(topo) / str(iteration)


def cell_of_path(parts: Sequence[str]) -> tuple[int | None, str | None, int | None]:
    """(nodes, topo, iteration) that a cell directory's last path parts say; None where not.

    `["30", "kary-16", "0"]` -> (30, "kary:16", 0).  Any depth below the raw
    root is read, so a tree kept one folder down still parses.
    """
    iteration = _whole(parts[-1]) if len(parts) >= 1 else None
    topo = topo_from_dirname(parts[-2]) if len(parts) >= 2 else None
    nodes = _whole(parts[-3]) if len(parts) >= 3 else None
    return nodes, topo, iteration


def _whole(text: str) -> int | None:
    return int(text) if text.isdigit() and text.isascii() else None


_FACTORS = (("T", 2**40), ("G", 2**30), ("M", 2**20), ("K", 2**10))


def format_size(size: int) -> str:
    """Bytes -> the shortest exact label: 536870912 -> `512M`, 1073741824 -> `1G`."""
    for unit, factor in _FACTORS:
        if size % factor == 0:
            return f"{size // factor}{unit}"
    return f"{size}B"


# `16M`, `1G`, `1.5G`; a bare number is the seed's GB label (`1` .. `10`).
_SIZE_LABEL = re.compile(r"^(?P<num>[0-9]+(?:\.[0-9]+)?)(?P<unit>[KMGTB]?)$")
_UNIT = {"": 2**30, "B": 1, **dict(_FACTORS)}


@lru_cache(maxsize=4096)
def size_from_label(label: str) -> int | None:
    """Bytes for a size label: `16M` -> 16777216; the seed's bare `1` means 1 GiB.

    The seed's `1gb.txt` blobs are taken as 2**30 bytes; None when unreadable.
    """
    match = _SIZE_LABEL.match(label)
    if match is None:
        return None
    size = float(match.group("num")) * _UNIT[match.group("unit")]
    return int(size) if size >= 1 and size == int(size) else None


def size_text(label: object) -> str:
    """`1` (the seed's bare GB label) -> `1G`, so it reads beside kary's `16M`."""
    text = str(label)
    return f"{text}G" if text.isdigit() else text
