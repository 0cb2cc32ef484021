"""Which groups of two parsed trees `kary compare` may set side by side, and why not.

A step (event, topology, nodes, size) is compared only with the same step run
in the same setting: every field of the cell's identity as it ran (the one
definition of what shapes a number, experiments/model/identity.py
RUN_IDENTITY_FIELDS: backend, place, layout, links, image, Flux view, blob kind,
cluster, instance type, emulator faults, shared nodes, Flux version; the rest,
experiment, sizes, strategies and verify, are in the step itself), the Flux
knobs and whether the box was CPU-bound.  What the events table does not carry
comes from runs.csv, cell by cell.  A field one tree never recorded (a seed log,
a kary from before it said) is not held against the other.  A
step both trees ran, but never in one setting, makes the two trees differ:
real Flux in a box against the emulator measures the emulator, not a change.
Each tree's settings stay apart, so a tree holding a box at 200Mbit and a test
instance compares each with its own kind and never pools them.

With `allow_mixed`, a step that differs is compared anyway, every setting of
one side with every setting of the other, and each such pair is marked mixed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from analysis.tables.knobs import CPU_BOUND
from experiments.formats.cell_layout import size_text
from experiments.formats.events import event_sort_key, topology_order_key
from experiments.formats.parsed import KNOB_COLUMNS
from experiments.formats.parsed.load import cell_values
from experiments.model.identity import RUN_IDENTITY_FIELDS

__all__ = [
    "IDENTITY_COLUMNS",
    "RUN_AXES",
    "STEP_KEYS",
    "Matching",
    "Pair",
    "differences_text",
    "match_groups",
    "nothing_in_common",
    "setting_axes",
    "setting_text",
    "with_run_axes",
]

STEP_KEYS = ["event", "topo", "nodes", "size_bytes"]
# Where each field of a cell's identity as it ran is in the parsed tables: its column
# (the events table's, else runs.csv's), or None where the step already tells it
# (ping and distribute time other events; a size, a strategy, a verify is its own step).
IDENTITY_COLUMNS: dict[str, str | None] = {
    "experiment": None,
    "sizes": None,
    "strategies": None,
    "verify": None,
    "backend": "backend",
    "place": "place",
    "layout": "layout",
    "links": "links",
    # A box's queue is in its links' text (`100Mbit, fair queues`).
    "link_queue": None,
    "image": "image",
    "flux_view": "flux_view",
    "blob": "blob",
    "cluster": "cluster",
    "instance_type": "instance_type",
    "emulator_faults": "emulator_faults",
    "shared_nodes": "shared_nodes",
    "flux_version": "flux_version",
}
# Every column that shapes a step's numbers beside its design; one only where a table has it.
_AXES: list[str] = [
    *(column for name in RUN_IDENTITY_FIELDS if (column := IDENTITY_COLUMNS[name])),
    *KNOB_COLUMNS,
    CPU_BOUND,
]
# The runs.csv columns of the identity (the events table carries the others).
RUN_AXES = ["layout", "image", "flux_view", "instance_type", "emulator_faults", "shared_nodes",
            "flux_version"]  # fmt: skip
# Where "" is a run that did not record the field: an axis one tree never recorded is
# not held against the other.
_UNRECORDED = {"layout", "image", "flux_view", "instance_type", "shared_nodes", "flux_version"}
_NAMES = {
    "purge_target_size": "purge-target-size",
    CPU_BOUND: "CPU-bound",
    "flux_version": "Flux version",
    "flux_view": "Flux view",
    "instance_type": "instance type",
    "emulator_faults": "emulator faults",
    "shared_nodes": "shared nodes",
}
# What an empty value means on each axis ("" elsewhere: not recorded).
_EMPTY = {"links": "unshaped", "emulator_faults": "none", **dict.fromkeys(KNOB_COLUMNS, "default")}

Step = tuple[object, ...]  # (event, topo, nodes, size_bytes)
Setting = tuple[str, ...]  # a value per setting axis
GroupKey = tuple[Setting, Step]


def setting_axes(*frames: pd.DataFrame) -> list[str]:
    """The setting axes any of `frames` has a column for, in a fixed order; an axis
    where "" means not recorded only where every frame recorded it somewhere."""
    return [
        axis
        for axis in _AXES
        if any(axis in frame.columns for frame in frames)
        and (axis not in _UNRECORDED or all(_recorded(frame, axis) for frame in frames))
    ]


def _recorded(frame: pd.DataFrame, axis: str) -> bool:
    return axis in frame.columns and bool((frame[axis].fillna("").astype(str) != "").any())


def with_run_axes(events: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """The events with each cell's identity fields that only runs.csv holds (RUN_AXES)."""
    return events.assign(**{axis: cell_values(events, runs, axis) for axis in RUN_AXES})


@dataclass(frozen=True)
class Pair:
    """One comparison: a step, the setting it ran in on each side."""

    step: Step
    before: Setting
    after: Setting

    @property
    def mixed(self) -> bool:
        return self.before != self.after


@dataclass
class Matching:
    """What two trees' groups pair up as, what differs, and what is on one side only."""

    pairs: list[Pair] = field(default_factory=list)
    # Steps both ran, never in one setting: each with its settings before and after.
    differing: list[tuple[Step, list[Setting], list[Setting]]] = field(default_factory=list)
    common_steps: int = 0
    only_before: int = 0
    only_after: int = 0


def match_groups(
    before: Mapping[GroupKey, object], after: Mapping[GroupKey, object], allow_mixed: bool
) -> Matching:
    """Pair the groups (setting, step) of two trees (see the module docstring)."""
    steps_a, steps_b = _by_step(before), _by_step(after)
    matching = Matching()
    used_a: set[GroupKey] = set()
    used_b: set[GroupKey] = set()
    common = sorted(set(steps_a) & set(steps_b), key=_step_order)
    matching.common_steps = len(common)
    for step in common:
        mine, theirs = steps_a[step], steps_b[step]
        same = [setting for setting in mine if setting in theirs]
        if same:
            pairs = [Pair(step, setting, setting) for setting in same]
        else:
            matching.differing.append((step, mine, theirs))
            if not allow_mixed:
                continue
            pairs = [Pair(step, a, b) for a in mine for b in theirs]
        matching.pairs += pairs
        used_a.update((pair.before, step) for pair in pairs)
        used_b.update((pair.after, step) for pair in pairs)
    matching.only_before = len(set(before) - used_a)
    matching.only_after = len(set(after) - used_b)
    return matching


def _by_step(groups: Mapping[GroupKey, object]) -> dict[Step, list[Setting]]:
    found: dict[Step, list[Setting]] = {}
    for setting, step in groups:
        found.setdefault(step, []).append(setting)
    return {step: sorted(settings) for step, settings in found.items()}


def _step_order(step: Step) -> tuple[object, ...]:
    event, topo, nodes, size = step
    return (event_sort_key(str(event)), topology_order_key(str(topo)), nodes, size)


def _value(axis: str, value: str) -> str:
    return value or _EMPTY.get(axis, "not recorded")


def setting_text(axes: list[str], setting: Setting, shown: list[str]) -> str:
    """`place box, links 200Mbit` over the `shown` axes ("" when none is shown)."""
    values = dict(zip(axes, setting, strict=True))
    return ", ".join(f"{_NAMES.get(a, a)} {_value(a, values[a])}" for a in shown)


def differences_text(
    axes: list[str], differing: list[tuple[Step, list[Setting], list[Setting]]]
) -> str:
    """`backend (before flux; after local) and place (before box; after not recorded)`:
    each axis on which some differing step's settings disagree, with each side's values."""
    parts = []
    for i, axis in enumerate(axes):
        pairs = [(a[i], b[i]) for _, mine, theirs in differing for a in mine for b in theirs]
        if all(a == b for a, b in pairs):
            continue
        before = sorted({a for _, mine, _ in differing for a in (s[i] for s in mine)})
        after = sorted({b for _, _, theirs in differing for b in (s[i] for s in theirs)})
        parts.append(
            f"{_NAMES.get(axis, axis)} (before {', '.join(_value(axis, v) for v in before)}; "
            f"after {', '.join(_value(axis, v) for v in after)})"
        )
    return " and ".join([", ".join(parts[:-1]), parts[-1]] if len(parts) > 2 else parts)


def nothing_in_common(before: pd.DataFrame, after: pd.DataFrame) -> str:
    """Why two trees share no step, in one line: what each of them ran."""
    return (
        f"nothing to compare: no step of before ({_ran(before)}) is in after ({_ran(after)}); "
        "compare two parses of the same study"
    )


def _ran(events: pd.DataFrame) -> str:
    """`4 nodes; kary:2, binomial; 16M, 64M`, or `no timed steps`."""
    if events.empty:
        return "no timed steps"
    nodes = sorted({int(n) for n in events["nodes"]})
    topos = sorted({str(t) for t in events["topo"]}, key=topology_order_key)
    sizes = events.drop_duplicates("size_bytes").sort_values("size_bytes")["size_label"]
    return (
        f"{', '.join(map(str, nodes))} nodes; {', '.join(topos)}; "
        f"{', '.join(size_text(label) for label in sizes)}"
    )
