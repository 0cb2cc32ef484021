"""Where a cell lives in the raw tree, and how sizes and Flux knobs are labelled.

A cell is one (nodes, topology, links, Flux knobs, iteration).  Its id is its path
below the raw root, `<nodes>/<topology dir>/<iteration>` (`30/kary-16/0`), the
seed's layout, so the runner writes it and analysis reads it back from the
path alone.  ':' is not portable in paths, so `kary:16` becomes the
directory `kary-16`.

Flux's knobs (`Knobs`) a cell may set:

- chunksize: `flux archive create --chunksize N`, the largest content blob
  (Flux's default 1M; 0 is one blob per file);
- mmap: `flux archive create --mmap`, rank 0 maps the file instead of copying it;
- purge_target_size: each broker's content cache, `flux module reload content
  purge-target-size=N` (Flux's default 16M).

A knob left None is not set: Flux's default applies and no name mentions it,
so a tree whose cells set no knob keeps flux-distribute's layout.  A cell that sets
any has one more directory, between its topology and its iteration, naming
each knob it sets: `30/kary-16/chunksize-256K_mmap-on_purge-16M/0` (`_`
between knobs, only letters, digits and `-` within one, so that the id with
`/` made `_` is still a Kubernetes label value).

A cell on shaped links (the box, or the emulator's paced links) has one more
directory, between its topology and its knobs, naming its links in canonical
units: `8/kary-2/bw-100Mbit_lat-5ms/0`.  A study swept over link speeds into one
raw tree keeps each speed's cells apart, never one speed's cells taken as
another's; unshaped cells keep flux-distribute's layout.

A cell whose blobs are not kary's random ones (`--blob zeros`, flux-distribute's; see
formats/blobs.py) has one more, after its network's: `8/kary-2/blob-zeros/0`, so a
study of both kinds shares one tree and never takes one kind's cells for the other's.

A run planned from a sweep file keeps a copy of it at `sweeps/<sha256>.yaml`
below the raw root; each cell's run.json names it by that hash.

A billed sweep's smoke cell (experiments/model/smoke.py) is kept apart, in
`smoke/` below the raw root (`smoke/<nodes>/<topology dir>/0`), marked by a
hidden `.kary-smoke` file; `kary parse` never reads it as the study's cells.

A size label is the shortest exact binary unit (`16M`, `1G`); flux-distribute's logs
label sizes as a bare number of GB (`1` .. `10`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from experiments.formats.blobs import BLOB_KINDS, DEFAULT_BLOB

__all__ = [
    "KNOB_NAMES",
    "LOG_NAME",
    "MINICLUSTER_NAME",
    "NO_KNOBS",
    "RECORD_NAME",
    "SMOKE_DIR",
    "SMOKE_MARKER",
    "SWEEPS_DIR",
    "Knobs",
    "blob_dirname",
    "blob_from_dirname",
    "blob_of_path",
    "cell_dir",
    "cell_id",
    "cell_of_path",
    "format_size",
    "knob_label",
    "knob_label_order",
    "knobs_from_dirname",
    "knobs_from_labels",
    "knobs_of_path",
    "network_dirname",
    "network_from_dirname",
    "network_of_path",
    "size_from_label",
    "size_text",
    "smoke_root",
    "sweep_copy_path",
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


def cell_id(
    nodes: int,
    topo: str,
    iteration: int,
    knobs: Knobs | None = None,
    network: str | None = None,
    blob: str | None = None,
) -> str:
    """`30/kary-16/0` (`30/kary-16/chunksize-256K/0` with knobs, `8/kary-2/bw-100Mbit/0`
    on shaped links, `8/kary-2/blob-zeros/0` with flux-distribute's zero blobs): the cell's
    path below the raw root, and its name everywhere."""
    knob_dir = knobs.dirname() if knobs is not None else None
    levels = [
        str(nodes),
        topology_dirname(topo),
        network,
        blob_dirname(blob),
        knob_dir,
        str(iteration),
    ]
    return "/".join(level for level in levels if level)


def cell_dir(data_dir: Path, cell: str) -> Path:
    """`<data>/<nodes>/<topology dir>[/<network dir>][/<blob dir>][/<knob dir>]/<iteration>`:
    where the files of the cell whose id is `cell` (cell_id) go."""
    return Path(data_dir).joinpath(*cell.split("/"))


def cell_of_path(parts: Sequence[str]) -> tuple[int | None, str | None, int | None]:
    """(nodes, topo, iteration) that a cell directory's last path parts say; None where not.

    `["30", "kary-16", "0"]` -> (30, "kary:16", 0); a knob directory before the
    iteration is passed over (`knobs_of_path` reads it), and a network directory
    before that (`network_of_path`).  Any depth below the raw root is read, so a
    tree kept one folder down still parses.
    """
    parts, _ = _settings_of_path(parts)
    iteration = _whole(parts[-1]) if len(parts) >= 1 else None
    topo = topo_from_dirname(parts[-2]) if len(parts) >= 2 else None
    nodes = _whole(parts[-3]) if len(parts) >= 3 else None
    return nodes, topo, iteration


def _settings_of_path(parts: Sequence[str]) -> tuple[list[str], dict[str, Any]]:
    """A cell path without its setting directories, and what they say: peeled from the
    iteration outwards, each there or not (knobs, then blob, then network)."""
    parts, found = list(parts), {}
    readers = (
        ("knobs", knobs_from_dirname),
        ("blob", blob_from_dirname),
        ("network", network_from_dirname),
    )
    for name, read in readers:
        value = read(parts[-2]) if len(parts) >= 2 else None
        if value is not None:
            found[name] = value
            del parts[-2]
    return parts, found


def network_of_path(parts: Sequence[str]) -> dict[str, str] | None:
    """The links a cell directory's path names ({"bw": "100Mbit", ...}); None when none."""
    return _settings_of_path(parts)[1].get("network")


def blob_of_path(parts: Sequence[str]) -> str | None:
    """The blob kind a cell directory's path names (`zeros`); None when it names none."""
    return _settings_of_path(parts)[1].get("blob")


def knobs_of_path(parts: Sequence[str]) -> Knobs:
    """The knobs a cell directory's path names; NO_KNOBS when none."""
    knobs: Knobs = _settings_of_path(parts)[1].get("knobs", NO_KNOBS)
    return knobs


# The files of a cell directory (run.json is experiments.formats.run_record's).
RECORD_NAME = "run.json"
LOG_NAME = "topology-experiment.out"
MINICLUSTER_NAME = "minicluster.yaml"

# A sweep file's copy, kept beside the cells it planned: <data>/sweeps/<sha256>.yaml.
SWEEPS_DIR = "sweeps"


def sweep_copy_path(data_dir: Path, sha256: str) -> Path:
    """Where the raw tree keeps the sweep file whose bytes have this sha256."""
    return Path(data_dir) / SWEEPS_DIR / f"{sha256}.yaml"


# The smoke cell's own tree, <data>/smoke/, and the file that marks it at any depth
# (a tree copied one folder down keeps its smoke cells out of the parse too).
SMOKE_DIR = "smoke"
SMOKE_MARKER = ".kary-smoke"


def smoke_root(data_dir: Path) -> Path:
    """Where a raw tree keeps its smoke cells, apart from the study's."""
    return Path(data_dir) / SMOKE_DIR


def _whole(text: str) -> int | None:
    return int(text) if text.isdigit() and text.isascii() else None


_FACTORS = (("T", 2**40), ("G", 2**30), ("M", 2**20), ("K", 2**10))
# A size no binary unit divides but a decimal one does (`--sizes 10GB`): `10GB`.
_SI_FACTORS = (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("KB", 10**3))


def format_size(size: int) -> str:
    """Bytes -> the shortest exact label: 536870912 -> `512M`, 1073741824 -> `1G`,
    10**10 -> `10GB` (binary units first, as model/units.py reads them)."""
    labels = [
        f"{size // factor}{unit}"
        for units in (_FACTORS, _SI_FACTORS)
        for unit, factor in units
        if size % factor == 0
    ]
    # The largest unit of each kind divides first; min keeps the first of equal lengths.
    return min(labels, key=len) if labels else f"{size}B"


# `16M`, `1G`, `1.5G`; a bare number is flux-distribute's GB label (`1` .. `10`).
_SIZE_LABEL = re.compile(r"^(?P<num>[0-9]+(?:\.[0-9]+)?)(?P<unit>[KMGT]B|[KMGTB]?)$")
_UNIT = {"": 2**30, "B": 1, **dict(_FACTORS), **dict(_SI_FACTORS)}


@lru_cache(maxsize=4096)
def size_from_label(label: str) -> int | None:
    """Bytes for a size label: `16M` -> 16777216; flux-distribute's bare `1` means 1 GiB.

    flux-distribute's `1gb.txt` blobs are taken as 2**30 bytes; None when unreadable.
    """
    match = _SIZE_LABEL.match(label)
    if match is None:
        return None
    size = float(match.group("num")) * _UNIT[match.group("unit")]
    return int(size) if size >= 1 and size == int(size) else None


def size_text(label: object) -> str:
    """`1` (flux-distribute's bare GB label) -> `1G`, so it reads beside kary's `16M`."""
    text = str(label)
    return f"{text}G" if text.isdigit() else text


# ---- Flux knobs --------------------------------------------------------------

# In the order every spelling lists them.
KNOB_NAMES = ("chunksize", "mmap", "purge_target_size")
_KNOB_DIR_PREFIX = {"chunksize": "chunksize", "mmap": "mmap", "purge_target_size": "purge"}
_ON_OFF = {True: "on", False: "off"}


def knob_label(name: str, value: int | bool | None) -> str:
    """A knob's value as tables and directory names write it: `256K`, `on`; "" when unset."""
    if value is None:
        return ""
    if name == "mmap":
        return _ON_OFF[bool(value)]
    return "0" if value == 0 else format_size(int(value))


def knob_label_order(label: str) -> tuple[int, int]:
    """The order knob labels read in: unset ("") first, then off, on, then sizes ascending."""
    fixed = {"": (0, 0), "off": (1, 0), "on": (1, 1), "0": (2, 0)}
    return fixed.get(label) or (3, size_from_label(label) or 0)


@dataclass(frozen=True)
class Knobs:
    """The Flux knobs one cell sets (see the module doc); None leaves Flux's default."""

    chunksize: int | None = None
    mmap: bool | None = None
    purge_target_size: int | None = None

    def values(self) -> dict[str, int | bool | None]:
        return {name: getattr(self, name) for name in KNOB_NAMES}

    def labels(self) -> dict[str, str]:
        """{knob: label} for every knob, "" where unset: the parsed tables' knob columns."""
        return {name: knob_label(name, value) for name, value in self.values().items()}

    def dirname(self) -> str | None:
        """`chunksize-256K_mmap-on`: the cell's knob directory; None when it sets no knob."""
        parts = [
            f"{_KNOB_DIR_PREFIX[name]}-{knob_label(name, value)}"
            for name, value in self.values().items()
            if value is not None
        ]
        return "_".join(parts) or None

    def text(self) -> str:
        """`chunksize 256K, mmap on` for titles and legends; "" when no knob is set."""
        return ", ".join(
            f"{name.replace('_', '-')} {label}" for name, label in self.labels().items() if label
        )


NO_KNOBS = Knobs()


def knobs_from_labels(labels: Mapping[str, object]) -> Knobs | None:
    """{knob: label}, as `Knobs.labels` writes them (missing or "" is unset) -> Knobs;
    None when a label is not one kary writes."""
    parts = []
    for name in KNOB_NAMES:
        label = labels.get(name, "")
        if not isinstance(label, str):
            return None
        if label:
            parts.append(f"{_KNOB_DIR_PREFIX[name]}-{label}")
    return knobs_from_dirname("_".join(parts)) if parts else NO_KNOBS


_KNOB_PART = re.compile(r"^(?P<prefix>chunksize|mmap|purge)-(?P<label>[0-9A-Za-z]+)$")
_KNOB_BY_PREFIX = {prefix: name for name, prefix in _KNOB_DIR_PREFIX.items()}


def knobs_from_dirname(name: str) -> Knobs | None:
    """`chunksize-256K_mmap-on` -> Knobs; None when the name is not a knob directory."""
    values: dict[str, int | bool] = {}
    for part in name.split("_"):
        match = _KNOB_PART.match(part)
        if match is None:
            return None
        knob, label = _KNOB_BY_PREFIX[match.group("prefix")], match.group("label")
        if knob in values:
            return None
        if knob == "mmap":
            if label not in _ON_OFF.values():
                return None
            values[knob] = label == "on"
        elif label == "0":
            values[knob] = 0
        else:
            size = size_from_label(label)
            # A bare number is flux-distribute's GB label; a knob's label always has its unit.
            if size is None or label.isdigit():
                return None
            values[knob] = size
    return Knobs(**values)  # type: ignore[arg-type]


# ---- shaped links ------------------------------------------------------------

# A network directory's parts, in order: `bw-100Mbit_lat-5ms_rootbw-1Gbit_group-4_groupbw-1Gbit`.
NETWORK_PARTS = ("bw", "lat", "rootbw", "group", "groupbw")
_NETWORK_PART = re.compile(r"^(?P<key>bw|lat|rootbw|group|groupbw)-(?P<label>[0-9A-Za-z]+)$")
_BITS = (("Tbit", 10**12), ("Gbit", 10**9), ("Mbit", 10**6), ("Kbit", 10**3), ("bit", 1))
_NANOS = (("s", 10**9), ("ms", 10**6), ("us", 10**3), ("ns", 1))


def bandwidth_label(bytes_per_s: float) -> str:
    """Bytes/s -> the largest whole tc unit of bits/s: 12.5e6 -> `100Mbit`."""
    bits = round(bytes_per_s * 8)
    return next(f"{bits // f}{unit}" for unit, f in _BITS if bits % f == 0)


def latency_label(seconds: float) -> str:
    """Seconds -> the largest whole unit: 0.0005 -> `500us`."""
    nanos = round(seconds * 1e9)
    return next(f"{nanos // f}{unit}" for unit, f in _NANOS if nanos % f == 0)


def network_dirname(
    bandwidth: float | None = None,
    latency: float | None = None,
    root_bandwidth: float | None = None,
    group_size: int | None = None,
    group_bandwidth: float | None = None,
) -> str | None:
    """The directory that keeps cells on shaped links apart from others (None: unshaped).

    Cells of one study at 100 and 200 Mbit/s share one raw tree side by side, as
    cells with other Flux knobs do; the values are canonical (bytes/s and
    seconds made whole units), so `100mbit` and `100Mbit` are one directory.
    """
    labels = {
        "bw": bandwidth_label(bandwidth) if bandwidth else None,
        "lat": latency_label(latency) if latency else None,
        "rootbw": bandwidth_label(root_bandwidth) if root_bandwidth else None,
        "group": str(group_size) if group_size else None,
        "groupbw": bandwidth_label(group_bandwidth) if group_bandwidth else None,
    }
    return "_".join(f"{key}-{label}" for key, label in labels.items() if label) or None


def network_from_dirname(name: str) -> dict[str, str] | None:
    """`bw-100Mbit_lat-5ms` -> {"bw": "100Mbit", "lat": "5ms"}; None when not a network dir."""
    found: dict[str, str] = {}
    for part in name.split("_"):
        match = _NETWORK_PART.match(part)
        if match is None or match.group("key") in found:
            return None
        found[match.group("key")] = match.group("label")
    return found


# ---- blob kind -----------------------------------------------------------------

_BLOB_DIR = re.compile(r"^blob-(?P<kind>[a-z]+)$")


def blob_dirname(kind: str | None) -> str | None:
    """`blob-zeros`: the directory of cells whose blobs are not kary's random ones
    (formats/blobs.py); None for random blobs, so a random study keeps flux-distribute's layout."""
    return None if kind in (None, DEFAULT_BLOB) else f"blob-{kind}"


def blob_from_dirname(name: str) -> str | None:
    """`blob-zeros` -> `zeros`; None when the name is not a blob directory."""
    match = _BLOB_DIR.match(name)
    return match.group("kind") if match and match.group("kind") in BLOB_KINDS else None
