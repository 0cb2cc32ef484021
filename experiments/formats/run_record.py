"""run.json: the record of one cell in the raw tree.

A cell is done only when its run.json says `succeeded`.  The record is written
atomically (temp + rename), so a crash leaves the old record or the new one.
Format versions are stamped; a newer or unknown format is refused clearly.

`read_record` is the one reader of run.json, for the runner, the plan and
analysis alike.  A record it cannot use raises `UnreadableRecord` (a
UserError, so the runner stops with one line); analysis catches it and notes
the cell instead, since one bad file must not stop a parse.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from experiments.errors import UserError
from experiments.files import write_atomic
from experiments.formats.cell_layout import LOG_NAME, MINICLUSTER_NAME, RECORD_NAME, Knobs

__all__ = [
    "KARY_SPANS",
    "LOG_NAME",
    "MINICLUSTER_NAME",
    "RECORD_FORMAT",
    "RECORD_NAME",
    "CellState",
    "KarySpans",
    "RunRecord",
    "UnreadableRecord",
    "now_iso",
    "read_record",
    "write_record",
]

RECORD_FORMAT = 1
# run.json "place" of a flux-backend cell: a `flux start --test-size` instance kary
# started, a job nested in the Flux allocation of FLUX_URI, or a box (brokers in
# network namespaces of their own on this machine, over shaped links).
TEST_INSTANCE = "test-instance"
ALLOCATION = "allocation"
BOX = "box"
PLACES = (BOX, TEST_INSTANCE, ALLOCATION)
# run.json "layout": a cluster (a MiniCluster, or a test instance here) per cell,
# or one per node count with each cell a nested Flux instance inside it.
PER_CELL = "per-cell"
NESTED = "nested"
LAYOUTS = (NESTED, PER_CELL)

# `preempted`: the cell lost a node to preemption (a Spot VM reclaimed, a node deleted):
# never timed, and run again by the next run, as an `interrupted` one is.
CellState = Literal[
    "pending", "running", "succeeded", "failed", "timeout", "interrupted", "preempted"
]


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class RunRecord(BaseModel):
    """What run.json holds. Unknown keys are kept, so newer runners' extras survive."""

    model_config = ConfigDict(extra="allow")

    format: int = RECORD_FORMAT
    cell: str
    nodes: int
    topo: str
    iteration: int
    state: CellState = "pending"
    started: str | None = None
    finished: str | None = None
    backend: str
    cluster: str | None = None
    instance_type: str | None = None
    image: str | None = None
    flux_version: str | None = None
    template_hash: str | None = None
    # The commit (12 hex, `-dirty` when tracked files differed) of the kary checkout that
    # ran the cell (experiments/version.py); None: an installed kary, or before kary said.
    kary_commit: str | None = None
    sizes: list[int] = []
    strategies: list[str] = []
    error: str | None = None
    # What each size's blob held (formats/blobs.py); None: recorded before kary said.
    blob: str | None = None
    seed: int | None = None
    # Flux knobs the cell set (cell_layout.Knobs); None: Flux's default.
    chunksize: int | None = None
    mmap: bool | None = None
    purge_target_size: int | None = None
    # The sweep file the cell was planned from, and the sha256 of its bytes; a
    # copy is kept in the raw tree (cell_layout.sweep_copy_path).
    sweep_file: str | None = None
    sweep_sha256: str | None = None
    # Where the cell's time went, in seconds (KarySpans): what kary did around Flux's
    # own steps.  None: recorded before kary said.
    kary_seconds: dict[str, float] | None = None

    @property
    def knobs(self) -> Knobs:
        return Knobs(self.chunksize, self.mmap, self.purge_target_size)


# run.json `kary_seconds`, in the order a cell spends them: the runner's own parts, then
# what the backend says of its call (experiments/backends/entry_stamps.py), which
# `backend` holds.  `record` is the log and manifest written; the final run.json write,
# which holds these figures, cannot time itself.
KARY_SPANS = (
    "render",
    "prepare",
    "backend",
    "instance_start",
    "entrypoint",
    "instance_stop",
    "judge",
    "record",
)


@dataclass
class KarySpans:
    """The runner's seconds for one cell: rendering it, setting its folder up (an earlier
    attempt moved aside, the manifest and the `running` record written), the backend's
    call, judging the log, and writing the log."""

    render: float = 0.0
    prepare: float = 0.0
    backend: float = 0.0
    judge: float = 0.0
    record: float = 0.0

    def as_record(self, backend_spans: Mapping[str, float]) -> dict[str, float]:
        """run.json's `kary_seconds`: these and the backend's, in KARY_SPANS order,
        rounded to the millisecond."""
        known = {**backend_spans, **vars(self)}
        return {name: round(known[name], 3) for name in KARY_SPANS if name in known}


class UnreadableRecord(UserError):
    """A run.json this kary cannot use: `reason` says why, `newer` when only its format is."""

    def __init__(self, path: Path, reason: str, newer: bool = False) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
        self.newer = newer


def read_record(cell_dir: Path) -> RunRecord | None:
    """The cell's record, or None when it has none.

    A damaged, invalid or newer-format record raises UnreadableRecord.
    """
    path = Path(cell_dir) / RECORD_NAME
    try:
        raw: Any = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:  # ValueError: bad JSON or bad UTF-8
        raise UnreadableRecord(path, f"not readable JSON ({_first_line(err)})") from None
    if not isinstance(raw, dict):
        raise UnreadableRecord(path, f"not a JSON object but {type(raw).__name__}")
    fmt = raw.get("format", RECORD_FORMAT)
    if not isinstance(fmt, int) or isinstance(fmt, bool):
        raise UnreadableRecord(path, f"format {fmt!r} is not a version number")
    if fmt > RECORD_FORMAT:
        raise UnreadableRecord(
            path, f"format {fmt} is newer than this kary's {RECORD_FORMAT}: upgrade kary", True
        )
    try:
        return RunRecord.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UnreadableRecord(path, f"not a valid run record: {where}: {first['msg']}") from None


def _first_line(err: Exception) -> str:
    return str(err).splitlines()[0] if str(err) else type(err).__name__


def write_record(cell_dir: Path, record: RunRecord) -> None:
    write_atomic(Path(cell_dir) / RECORD_NAME, record.model_dump_json(indent=2) + "\n")
