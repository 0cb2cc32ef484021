"""A sweep's axes: what each may hold, and how a matrix and a zip become points.

Axes are nodes, topo, blob (what each blob holds: random or zeros; see
experiments.formats.blobs) and Flux's knobs (chunksize, mmap, purge_target_size;
see experiments.formats.cell_layout).  A sweep's `matrix` runs every
combination of its axes; its `zip` axes vary together (same length, the i-th
values make one row); every matrix combination runs with every zip row, as
Ramble's matrices and zips and PerfKitBenchmarker's flag_matrix do.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from experiments.errors import UserError
from experiments.formats.blobs import BLOB_KINDS, check_blob
from experiments.formats.cell_layout import KNOB_NAMES, Knobs, knob_label
from experiments.model.topology import parse_topology
from experiments.model.units import parse_size
from experiments.model.validate import node_count

__all__ = ["AXES", "KNOB_NAMES", "axis_text", "axis_value", "knob_flag", "knobs_of", "points"]

AXES = ("nodes", "topo", "blob", *KNOB_NAMES)
# flux-core reads --chunksize as an int and purge-target-size as a uint32.
_LIMITS = {"chunksize": 2**31 - 1, "purge_target_size": 2**32 - 1}


def axis_value(axis: str, raw: object) -> Any:
    """One value of `axis`, checked and made canonical (sizes in bytes, `kary:02` -> `kary:2`).

    A UserError names the axis and the value, never where it came from: the
    caller (a flag, a line of a sweep file) adds that.
    """
    if axis == "nodes":
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise UserError(f"invalid nodes {raw!r}: must be a whole number")
        return node_count(raw, "nodes")
    if axis == "topo":
        if not isinstance(raw, str):
            raise UserError(f"invalid topo {raw!r}: expected e.g. kary:2, binomial or mincrit")
        return str(parse_topology(raw.strip()))
    if axis == "blob":
        if not isinstance(raw, str):
            raise UserError(f"invalid blob {raw!r}: choose from {', '.join(BLOB_KINDS)}")
        return check_blob(raw)
    if axis == "mmap":
        if not isinstance(raw, bool):
            raise UserError(f"invalid mmap {raw!r}: must be true or false")
        return raw
    if axis in _LIMITS:
        return _knob_size(axis, raw)
    raise UserError(f"unknown axis {axis!r}: choose from {', '.join(AXES)}")


def knob_flag(axis: str, value: Any) -> Any:
    """A knob flag's value (`--chunksize 256K`) checked as its axis; None when not given."""
    if value is None:
        return None
    try:
        return axis_value(axis, value)
    except UserError as err:
        raise UserError(f"--{axis.replace('_', '-')}: {err}") from None


def _knob_size(axis: str, raw: object) -> int:
    flag = axis.replace("_", "-")
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        raise UserError(f"invalid {flag} {raw!r}: expected a size such as 256K or 1M")
    if axis == "chunksize" and raw in (0, "0"):
        return 0  # flux-core: one blob per file
    size = raw if isinstance(raw, int) else parse_size(raw)
    if not 1 <= size <= _LIMITS[axis]:
        raise UserError(
            f"invalid {flag} {raw!r}: Flux takes 1 byte to {_LIMITS[axis]:,} bytes"
            + (" (or 0: one blob per file)" if axis == "chunksize" else "")
        )
    return size


def axis_text(axis: str, value: Any) -> str:
    """A value as a person writes it: `256K`, `on`, `kary:2`, `30`."""
    return knob_label(axis, value) if axis in KNOB_NAMES else str(value)


def points(
    matrix: Mapping[str, Sequence[Any]], zipped: Mapping[str, Sequence[Any]]
) -> list[dict[str, Any]]:
    """Every point of the sweep: each matrix combination with each zip row, values checked.

    The matrix varies its axes in AXES order, the last fastest (nodes, then
    topo, then the knobs), whatever order the file lists them in.  No axis at
    all is one empty point.
    """
    for axis in matrix:
        if axis in zipped:
            raise UserError(f"axis {axis} is both in the matrix and in the zip: give it once")
    checked = {axis: _axis_values(axis, values) for axis, values in {**matrix, **zipped}.items()}
    lengths = {axis: len(checked[axis]) for axis in zipped}
    if len(set(lengths.values())) > 1:
        listed = ", ".join(f"{axis} {count}" for axis, count in lengths.items())
        raise UserError(f"zip axes need the same number of values: {listed}")
    rows: list[dict[str, Any]] = [{}]
    if zipped:
        names = list(zipped)
        columns = [checked[axis] for axis in names]
        rows = [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]
    crossed = [axis for axis in AXES if axis in matrix]
    combos = itertools.product(*(checked[axis] for axis in crossed))
    return [{**dict(zip(crossed, combo, strict=True)), **row} for combo in combos for row in rows]


def _axis_values(axis: str, values: Sequence[Any]) -> list[Any]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise UserError(f"axis {axis}: expected a list of values, e.g. [{_example(axis)}]")
    if not values:
        raise UserError(f"axis {axis} has no values")
    checked = [axis_value(axis, value) for value in values]
    seen: set[Any] = set()
    for raw, value in zip(values, checked, strict=True):
        if value in seen:
            raise UserError(f"axis {axis} lists {raw!r} twice")
        seen.add(value)
    return checked


def _example(axis: str) -> str:
    examples = {"nodes": "4, 6", "topo": "kary:1, kary:2", "mmap": "false, true"}
    return (examples | {"blob": "random, zeros"}).get(axis, "256K, 1M")


def knobs_of(point: Mapping[str, Any], default: Knobs) -> Knobs:
    """The knobs of a point: its knob axes, and `default`'s values for the others."""
    values = {name: point.get(name, value) for name, value in default.values().items()}
    return Knobs(**values)
