"""A nested layout's group: one MiniCluster, the cells its driver runs, and what the
frames of rank 0's log say of a cell (nested.py runs them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from experiments.backends.base import QueuedCell
from experiments.backends.kubernetes.group_health import Look
from experiments.backends.kubernetes.log_follow import LogFollower
from experiments.backends.kubernetes.pod_watch import PodWatch
from experiments.formats.nested_frame import CellFrame, Frames, split_frames
from experiments.model.log_budget import cell_log_bytes, group_budget, split_by_budget
from experiments.model.render_nested import NestedMiniCluster

if TYPE_CHECKING:
    from experiments.model.plan import Cell

__all__ = [
    "CellEnded",
    "CellOverdue",
    "Group",
    "cell_ended",
    "cell_text",
    "fitting_log_budget",
    "frames_lost",
    "limit_seconds",
    "lines_lost",
    "queued_log_bytes",
    "unfinished_error",
    "within_log_budget",
]


class CellEnded(Exception):
    """The log shows the awaited cell's end (or the driver's): stop waiting."""

    def __init__(self, seen: Look) -> None:
        super().__init__()
        self.seen = seen


class CellOverdue(Exception):
    """The awaited cell outran its limit (and the grace) since its job frame."""

    def __init__(self, seen: Look) -> None:
        super().__init__()
        self.seen = seen


@dataclass
class Group:
    """One MiniCluster of the layout and the cells its driver runs, in order."""

    name: str
    nodes: int
    manifest: NestedMiniCluster
    pods: PodWatch
    created: str
    delivered: list[str] = field(default_factory=list)
    # Rank 0's log as followed so far (made once rank 0's pod exists).
    follower: LogFollower | None = None
    # Each rank's pod uid and restart count when first seen: a change breaks the group.
    identity: dict[int, tuple[str, int]] = field(default_factory=dict)
    # A held group's feed ConfigMap (feed.py), the batches fed so far and their cells.
    feed: str | None = None
    batches: int = 0
    fed: list[str] = field(default_factory=list)
    # What its cells' logs add up to (model/log_budget), fed cells included.
    log_bytes: int = 0

    @property
    def cell_ids(self) -> tuple[str, ...]:
        """Every cell its driver runs, in order: the manifest's, then those fed to it."""
        return self.manifest.cell_ids + tuple(self.fed)

    def record(self, cell_id: str) -> dict[str, Any]:
        return {
            "name": self.name,
            "nodes": self.nodes,
            "created": self.created,
            "cells": len(self.cell_ids),
            "cell_index": self.cell_ids.index(cell_id),
            **({"feed": self.feed, "batches": self.batches} if self.feed is not None else {}),
            # Rotations of rank 0's log that lost no frame, so far (log_follow).
            "log_rotations": self.follower.rotations if self.follower is not None else 0,
        }


def cell_text(group: Group, cell: Cell) -> str:
    """What the cell printed, as rank 0's log was followed so far."""
    if group.follower is None:
        return ""
    return (split_frames(group.follower.text).cells.get(cell.id) or CellFrame(cell.id)).text


def frames_lost(frames: Frames, order: tuple[str, ...], cell_id: str) -> str | None:
    """Why rank 0's log as read cannot hold the cell's frames any more: it has frames of
    cells the driver runs after it (or its end) and none of the cell's own.  The lines
    were lost before kary read them: the kubelet rotated the log."""
    if cell_id in frames.cells or cell_id not in order:
        return None
    later = set(order[order.index(cell_id) + 1 :])
    if frames.finished_why is not None and not later & set(frames.cells):
        return f"the nested driver finished before cell {cell_id} began: {frames.finished_why}"
    if frames.finished or later & set(frames.cells):
        return (
            f"rank 0's log shows what the driver did after cell {cell_id} but no frame of "
            "it: its lines were lost before kary read them (the kubelet rotated the log)"
        )
    return None


def lines_lost(frame: CellFrame) -> str | None:
    """Why the cell's log cannot be trusted whole: its end frame counts more lines than
    the log holds between its job and end frames.  The log was rotated past lines kary
    had not read (with no frame among them: log_follow lets such a rotation pass)."""
    lost = frame.lines_lost
    if not lost or frame.end is None:
        return None
    return (
        f"rank 0's log lacks {lost} of the {frame.end.get('lines')} lines cell {frame.cell}'s "
        "job printed: the kubelet rotated the log past lines kary had not read"
    )


def cell_ended(frames: Frames, cell_id: str) -> bool:
    frame = frames.cells.get(cell_id)
    return frame is not None and frame.ended


def limit_seconds(queued: QueuedCell, fallback: float) -> int:
    """The cell's limit in whole seconds for `flux batch --time-limit`, rounded up (a
    limit of 0 would be no limit at all)."""
    return max(1, math.ceil(queued.timeout if queued.timeout is not None else fallback))


def queued_log_bytes(cells: list[QueuedCell]) -> int:
    """What the cells' logs add to rank 0's (model/log_budget's estimate)."""
    return sum(_log_bytes(q) for q in cells)


def _log_bytes(queued: QueuedCell) -> int:
    cell = queued.cell
    return cell_log_bytes(cell.experiment, cell.nodes, len(cell.sizes), len(cell.strategies))


def fitting_log_budget(cells: list[QueuedCell], used: int) -> list[QueuedCell]:
    """The leading cells a held group whose log already holds `used` bytes can still
    take within its budget; none when not even the first fits (a new group takes it)."""
    room = group_budget() - used
    taken: list[QueuedCell] = []
    for queued in cells:
        room -= _log_bytes(queued)
        if room < 0:
            break
        taken.append(queued)
    return taken


def within_log_budget(cells: list[QueuedCell], budget: int | None = None) -> list[QueuedCell]:
    """The leading cells whose log, together, stays within a group's budget (half the
    kubelet's rotation size, model/log_budget): the rest go to the next group, so a
    node count's long sweep does not rotate rank 0's log under kary."""
    sizes = [_log_bytes(q) for q in cells]
    groups = split_by_budget(sizes, group_budget() if budget is None else budget)
    return cells[: groups[0]] if groups else cells


def unfinished_error(
    cell_id: str,
    name: str,
    limit: float,
    grace_s: float,
    outcome: object,
    log_error: str | None,
) -> tuple[str, bool]:
    """Why a cell whose end frame never came failed, and whether that is a timeout:
    no outcome means its limit (and grace) passed; else the group's driver ended."""
    if outcome is None:
        return (
            f"cell {cell_id} did not end within {limit:g} s (+{grace_s:g} s) in "
            f"MiniCluster {name}, which was deleted",
            True,
        )
    why = outcome[1] if isinstance(outcome, tuple) and outcome[1] else "its driver ended"
    error = f"MiniCluster {name} ended before cell {cell_id} did: {why}"
    if log_error:
        error += f"; {log_error}"
    return error, False
