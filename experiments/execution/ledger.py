"""The runner's ledger: where each planned cell stands in the raw tree.

A plan lists every cell of a sweep; whether a cell still has to run is a fact
about the raw tree, read here from each cell's run.json:

- `succeeded`: done, skipped (and not priced);
- `failed` or `timeout`: skipped unless --rerun-failed, so a broken template is
  not paid for twice by accident;
- `running`, `interrupted` or no record: runs (again).

`force` runs every cell again; the runner keeps the old results aside.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from experiments.formats.run_record import read_record
from experiments.model.plan import Cell

__all__ = ["Ledger", "read_ledger"]


@dataclass(frozen=True)
class Ledger:
    """`to_run` in plan order; `done` succeeded before; `failed` failed before (skipped)."""

    to_run: list[Cell]
    done: list[Cell]
    failed: list[Cell]


def read_ledger(
    cells: Sequence[Cell], data_dir: Path, rerun_failed: bool = False, force: bool = False
) -> Ledger:
    """Sort `cells` by what their run.json in `data_dir` says (see the module doc)."""
    to_run: list[Cell] = []
    done: list[Cell] = []
    failed: list[Cell] = []
    for cell in cells:
        record = None if force else read_record(cell.raw_dir(data_dir))
        state = record.state if record is not None else "pending"
        if state == "succeeded":
            done.append(cell)
        elif state in ("failed", "timeout") and not rerun_failed:
            failed.append(cell)
        else:
            to_run.append(cell)
    return Ledger(to_run=to_run, done=done, failed=failed)
