"""The runner's ledger: where each planned cell stands in the raw tree.

A plan lists every cell of a sweep; whether a cell still has to run is a fact
about the raw tree, read here from each cell's run.json:

- `succeeded`: done, skipped (and not priced);
- `failed` or `timeout`: skipped unless --rerun-failed, so a broken template is
  not paid for twice by accident;
- `running`, `interrupted` or no record: runs (again).

`force` runs every cell again; the runner keeps the old results aside.
A cell recorded by another experiment (a ping cell where a distribution was
planned, or the other way round) is a UserError: one raw tree, one experiment.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from experiments.errors import UserError
from experiments.formats.run_record import RunRecord, read_record
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
        if record is not None:
            _same_experiment(cell, record, data_dir)
        state = record.state if record is not None else "pending"
        if state == "succeeded":
            done.append(cell)
        elif state in ("failed", "timeout") and not rerun_failed:
            failed.append(cell)
        else:
            to_run.append(cell)
    return Ledger(to_run=to_run, done=done, failed=failed)


def _same_experiment(cell: Cell, record: RunRecord, data_dir: Path) -> None:
    """A cell's directory may hold only its own experiment's results (run.json's `experiment`)."""
    recorded = getattr(record, "experiment", None) or "distribute"
    if recorded != cell.experiment:
        raise UserError(
            f"{data_dir}/{cell.id} holds a {recorded} run, and this plan runs {cell.experiment}: "
            "use another --data-dir for it"
        )
