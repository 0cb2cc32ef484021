"""The `KARY-NESTED {json}` line: how the nested driver frames each cell in one log.

In the nested layout on Kubernetes one MiniCluster runs every cell of a node
count, one after another, as nested Flux instances, and rank 0's log (the only
output kary can read without exec) holds them all.  templates/nested_driver.sh.j2
prints, per cell,

    KARY-NESTED {"event": "begin", "cell": "30/kary:2/0"}
    KARY-NESTED {"event": "job", "cell": "30/kary:2/0", "jobid": "f2AbC..."}
    ... the cell's own output (its KARY lines, flux overlay status, ...) ...
    KARY-NESTED {"event": "end", "cell": "30/kary:2/0", "rc": 0, "result": "COMPLETED",
                 "hosts": "mc-0-[0-29]", "seconds": 81.2}

and `{"event": "finished"}` after the last cell.  `end` may carry `error` (the
job could not be submitted) instead of a job's rc; `result` is Flux's
(COMPLETED, FAILED, TIMEOUT, CANCELED).  `split_frames` is the one reader:
the text between a cell's begin and end lines is that cell's log, exactly as
rank 0 of a per-cell MiniCluster would have printed it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["FRAME_PREFIX", "TIMEOUT_RESULT", "CellFrame", "Frames", "format_frame", "split_frames"]

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

    @property
    def ended(self) -> bool:
        return self.end is not None

    @property
    def timed_out(self) -> bool:
        return self.end is not None and self.end.get("result") == TIMEOUT_RESULT


@dataclass
class Frames:
    """Every cell the log has begun (in order), and whether the driver finished."""

    cells: dict[str, CellFrame]
    finished: bool = False


def format_frame(event: str, cell: str | None = None, **fields: Any) -> str:
    """A frame line exactly as the driver prints it (tests build their logs with it)."""
    record: dict[str, Any] = {"event": event}
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
    for line in log.splitlines(keepends=True):
        record = _record(line)
        if record is None:
            if current is not None:
                lines.append(line)
            continue
        event, cell = record.get("event"), record.get("cell")
        if event == "finished":
            frames.finished = True
        elif event == "begin" and isinstance(cell, str):
            current, lines = CellFrame(cell), []
            frames.cells[cell] = current
        elif current is not None and cell == current.cell:
            if event == "job":
                current.jobid = str(record.get("jobid") or "") or None
            elif event == "end":
                current.text, current.end = "".join(lines), record
                current = None
    if current is not None:  # the cell still running: what it printed so far
        current.text = "".join(lines)
    return frames


def _record(line: str) -> dict[str, Any] | None:
    match = _FRAME.match(line.strip())
    if match is None:
        return None
    try:
        record = json.loads(match.group(1))
    except json.JSONDecodeError:
        return None
    return record if isinstance(record, dict) else None
