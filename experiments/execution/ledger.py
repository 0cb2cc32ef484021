"""The runner's ledger: where each planned cell stands in the raw tree.

A plan lists every cell of a sweep; whether a cell still has to run is a fact
about the raw tree, read here from each cell's run.json:

- `succeeded`: done, skipped (and not priced);
- `failed` or `timeout`: skipped unless --rerun-failed, so a broken template is
  not paid for twice by accident;
- `running`, `interrupted`, `preempted` (the cell lost a node to preemption:
  nothing of it was timed) or no record: runs (again); the runner sets the
  old record aside first.

A cell is skipped only when it ran as the plan would run it: a recorded cell
whose identity (model/identity.py: sizes, backend, place, links, ...) differs
from the planned one stops the plan with one line, since skipping it would mix
two studies in one tree and running it would replace the other study's numbers.
`force` runs every cell again; the runner keeps the old results aside.
A cell recorded by another experiment (a ping cell where a distribution was
planned, or the other way round) is a UserError: one raw tree, one experiment.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from experiments.errors import UserError
from experiments.formats.run_record import RunRecord, read_record
from experiments.model.identity import (
    StudySettings,
    identity_differences,
    identity_problem,
    recorded_identity,
)
from experiments.model.plan import Cell

__all__ = ["Ledger", "read_ledger"]


@dataclass(frozen=True)
class Ledger:
    """`to_run` in plan order; `done` succeeded before; `failed` failed before (skipped).

    `other_template`: done cells whose benchmark template differs from the plan's.
    """

    to_run: list[Cell]
    done: list[Cell]
    failed: list[Cell]
    other_template: list[Cell] = field(default_factory=list)


def read_ledger(
    cells: Sequence[Cell],
    data_dir: Path,
    rerun_failed: bool = False,
    force: bool = False,
    settings: StudySettings | None = None,
    template_hash: str | None = None,
) -> Ledger:
    """Sort `cells` by what their run.json in `data_dir` says (see the module doc).

    With `settings`, a skipped cell whose recorded identity differs is a UserError.
    """
    to_run: list[Cell] = []
    done: list[Cell] = []
    failed: list[Cell] = []
    other_template: list[Cell] = []
    differing: list[tuple[str, list[str]]] = []
    skipped = 0
    for cell in cells:
        record = None if force else read_record(cell.raw_dir(data_dir))
        if record is not None:
            _same_experiment(cell, record, data_dir)
        state = record.state if record is not None else "pending"
        if record is not None and settings is not None and _skips(state, rerun_failed):
            skipped += 1
            differences = identity_differences(settings.identity(cell), recorded_identity(record))
            if differences:
                differing.append((cell.id, differences))
        if state == "succeeded":
            done.append(cell)
            if _other_template(record, template_hash):
                other_template.append(cell)
        elif state in ("failed", "timeout") and not rerun_failed:
            failed.append(cell)
        else:
            to_run.append(cell)
    if differing:
        raise identity_problem(differing, skipped, data_dir)
    return Ledger(to_run=to_run, done=done, failed=failed, other_template=other_template)


def _other_template(record: RunRecord | None, template_hash: str | None) -> bool:
    """Whether a record names a benchmark template other than the plan's."""
    recorded = record.template_hash if record is not None else None
    return bool(template_hash and recorded and recorded != template_hash)


def _skips(state: str, rerun_failed: bool) -> bool:
    """Whether a cell in `state` is skipped (so its identity must match the plan's)."""
    return state == "succeeded" or (state in ("failed", "timeout") and not rerun_failed)


def _same_experiment(cell: Cell, record: RunRecord, data_dir: Path) -> None:
    """A cell's directory may hold only its own experiment's results (run.json's `experiment`)."""
    recorded = getattr(record, "experiment", None) or "distribute"
    if recorded != cell.experiment:
        raise UserError(
            f"{data_dir}/{cell.id} holds a {recorded} run, and this plan runs {cell.experiment}: "
            "use another --data-dir for it"
        )
