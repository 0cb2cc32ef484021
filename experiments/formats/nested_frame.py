"""The `KARY-NESTED {json}` line: how the nested driver frames each cell in one log.

In the nested layout on Kubernetes one MiniCluster runs every cell of a node
count, one after another, as nested Flux instances, and rank 0's log (the only
output kary can read without exec) holds them all.  templates/nested_driver.sh.j2
prints, per cell,

    KARY-NESTED {"event": "begin", "seq": 1, "cell": "30/kary:2/0"}
    KARY-NESTED {"event": "job", "seq": 2, "cell": "30/kary:2/0", "jobid": "f2AbC..."}
    ... the cell's own output (its KARY lines, flux overlay status, ...) ...
    KARY-NESTED {"event": "end", "seq": 3, "cell": "30/kary:2/0", "rc": 0,
                 "result": "COMPLETED", "hosts": "mc-0-[0-29]", "seconds": 81.2,
                 "lines": 212}

and `{"event": "finished", "seq": N}` after the last cell (a driver fed more
cells, formats/nested_bundle, says `why` it stopped waiting for them).  `end` may carry
`error` (the job could not be submitted) instead of a job's rc; `result` is
Flux's (COMPLETED, FAILED, TIMEOUT, CANCELED); `ended_at_status: true` says the
driver killed the job once its entrypoint had left its exit status (`rc`, then
the entrypoint's; Flux's result FAILED) rather than wait for its brokers' rc3,
and `CellFrame.output` leaves out what the kill printed.  `split_frames` is the one
reader: the text between a cell's begin and end lines is that cell's log,
exactly as rank 0 of a per-cell MiniCluster would have printed it.

Two fields let kary tell a routine log rotation from a loss (issue 44, item 1:
the kubelet rotates a container's log at `containerLogMaxSize`, 10 MiB by
default, and the API then serves the new file only).  `seq` counts the
driver's frames from 1 over its life, so a gap (or a restart at 1) says frames
were lost (`frame_sequence`); `lines` is how many lines the cell's job printed
(counted as they passed), so a cell that lost lines between its frames says so
(`CellFrame.lines_lost`).  A driver rendered before them prints neither, and
kary then treats any rotation as a loss, as it did.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from experiments.initial_exit import without_kill_noise

__all__ = [
    "FRAME_PREFIX",
    "TIMEOUT_RESULT",
    "CellFrame",
    "Frames",
    "driver_began",
    "format_frame",
    "frame_sequence",
    "split_frames",
]

FRAME_PREFIX = "KARY-NESTED"
# Flux's result for a job its time limit ended.
TIMEOUT_RESULT = "TIMEOUT"

_FRAME = re.compile(rf"^{FRAME_PREFIX}[ \t]+(\{{.*\}})[ \t]*$")


@dataclass
class CellFrame:
    """One cell's part of the driver's log: its text, its job and how it ended."""

    cell: str
    text: str = ""
    jobid: str | None = None
    end: dict[str, Any] | None = None
    # Lines of text after the job frame: what the job printed, as far as the log holds it.
    printed: int = 0

    @property
    def ended(self) -> bool:
        return self.end is not None

    @property
    def output(self) -> str:
        """The cell's text as its job printed it: without what the driver's kill at the
        cell's exit status added after its last line (the end frame's `ended_at_status`)."""
        if self.end is not None and self.end.get("ended_at_status") is True:
            return without_kill_noise(self.text)
        return self.text

    @property
    def timed_out(self) -> bool:
        return self.end is not None and self.end.get("result") == TIMEOUT_RESULT

    @property
    def lines_lost(self) -> int:
        """How many of the lines the end frame says the job printed the log lacks (0 when
        it holds them all, or the driver did not count)."""
        counted = self.end.get("lines") if self.end is not None else None
        if not isinstance(counted, int) or isinstance(counted, bool):
            return 0
        return max(0, counted - self.printed)


@dataclass
class Frames:
    """Every cell the log has begun (in order), and whether the driver finished."""

    cells: dict[str, CellFrame]
    finished: bool = False
    # Why a fed driver finished (no batch came, one would not unpack); None otherwise.
    finished_why: str | None = None


def format_frame(event: str, cell: str | None = None, seq: int | None = None, **fields: Any) -> str:
    """A frame line exactly as the driver prints it (tests build their logs with it)."""
    record: dict[str, Any] = {"event": event}
    if seq is not None:
        record["seq"] = seq
    if cell is not None:
        record["cell"] = cell
    record.update(fields)
    return f"{FRAME_PREFIX} {json.dumps(record)}"


def split_frames(log: str) -> Frames:
    """The log cut into cells by its frame lines; lines outside any frame are dropped.

    A frame line that is not JSON is kept as text of the cell it falls in: the
    cell's own output might print anything, and only the driver's lines count.
    """
    frames = Frames({})
    current: CellFrame | None = None
    lines: list[str] = []
    job_seen = False  # the current cell's job frame came: its lines are the job's
    for line in log.splitlines(keepends=True):
        record = _record(line)
        if record is None:
            if current is not None:
                lines.append(line)
                if job_seen:
                    current.printed += 1
            continue
        event, cell = record.get("event"), record.get("cell")
        if event == "finished":
            frames.finished = True
            why = record.get("why")
            frames.finished_why = str(why) if why else None
        elif event == "begin" and isinstance(cell, str):
            current, lines, job_seen = CellFrame(cell), [], False
            frames.cells[cell] = current
        elif current is not None and cell == current.cell:
            if event == "job":
                job_seen = True
                current.jobid = str(record.get("jobid") or "") or None
            elif event == "end":
                current.text, current.end = "".join(lines), record
                current = None
    if current is not None:  # the cell still running: what it printed so far
        current.text = "".join(lines)
    return frames


def driver_began(log: str) -> bool:
    """The driver framed a cell: it runs, so the outer instance's brokers all joined
    (Flux starts the initial program only once they have)."""
    return FRAME_PREFIX in log and bool(split_frames(log).cells)


def frame_sequence(line: str) -> int | None:
    """The `seq` of a frame line; None for any other line (or a frame without one)."""
    if FRAME_PREFIX not in line:
        return None
    record = _record(line)
    seq = record.get("seq") if record is not None else None
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else None


def _record(line: str) -> dict[str, Any] | None:
    match = _FRAME.match(line.strip())
    if match is None:
        return None
    try:
        record = json.loads(match.group(1))
    except json.JSONDecodeError:
        return None
    return record if isinstance(record, dict) else None
