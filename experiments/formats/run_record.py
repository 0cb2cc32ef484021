"""run.json: the record of one cell in the raw tree.

A cell is done only when its run.json says `succeeded`.  The record is written
atomically (temp + rename), so a crash leaves the old record or the new one.
Format versions are stamped; a newer or unknown format is refused clearly.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from experiments.errors import UserError
from experiments.files import write_atomic

__all__ = [
    "LOG_NAME",
    "MINICLUSTER_NAME",
    "RECORD_FORMAT",
    "RECORD_NAME",
    "CellState",
    "RunRecord",
    "now_iso",
    "read_record",
    "write_record",
]

RECORD_FORMAT = 1
# run.json "place" of a flux-backend cell: a `flux start --test-size` instance kary
# started, or a job nested in the Flux allocation of FLUX_URI.
TEST_INSTANCE = "test-instance"
ALLOCATION = "allocation"
RECORD_NAME = "run.json"
LOG_NAME = "topology-experiment.out"
MINICLUSTER_NAME = "minicluster.yaml"

CellState = Literal["pending", "running", "succeeded", "failed", "timeout", "interrupted"]


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
    sizes: list[int] = []
    strategies: list[str] = []
    error: str | None = None
    seed: int | None = None


def read_record(cell_dir: Path) -> RunRecord | None:
    """The cell's record, or None when it has none. A damaged record is a UserError."""
    path = Path(cell_dir) / RECORD_NAME
    try:
        raw: Any = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UserError(f"{path} is not a readable run record: {err}") from None
    if isinstance(raw, dict) and raw.get("format", RECORD_FORMAT) > RECORD_FORMAT:
        raise UserError(
            f"{path} has format {raw['format']}, newer than this kary's {RECORD_FORMAT}: "
            "upgrade kary"
        )
    try:
        return RunRecord.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UserError(f"{path} is not a valid run record: {where}: {first['msg']}") from None


def write_record(cell_dir: Path, record: RunRecord) -> None:
    write_atomic(Path(cell_dir) / RECORD_NAME, record.model_dump_json(indent=2) + "\n")
