"""The runner's ledger: which planned cells still run, from each cell's run.json."""

from __future__ import annotations

from pathlib import Path

from experiments.execution.ledger import read_ledger
from experiments.formats.run_record import RunRecord, write_record
from experiments.model.plan import ExperimentSpec, plan_experiment


def _spec(tmp_path: Path, **kwargs: object) -> ExperimentSpec:
    return ExperimentSpec(data_dir=tmp_path / "raw", **kwargs)  # type: ignore[arg-type]


def test_done_and_failed_cells_are_skipped_until_asked(tmp_path: Path) -> None:
    spec = _spec(tmp_path, exact_nodes=4, topos=["kary:1", "kary:2", "binomial"])
    cells = plan_experiment(spec).cells
    for cell, state in zip(cells, ["succeeded", "failed", "interrupted"], strict=True):
        record = RunRecord(
            cell=cell.id, nodes=4, topo=cell.topo, iteration=0, backend="local", state=state
        )  # type: ignore[arg-type]
        write_record(cell.raw_dir(spec.data_dir), record)
    ledger = read_ledger(cells, spec.data_dir)
    assert [c.topo for c in ledger.done] == ["kary:1"]
    assert [c.topo for c in ledger.failed] == ["kary:2"]
    assert [c.topo for c in ledger.to_run] == ["binomial"]  # interrupted: resumed
    rerun = read_ledger(cells, spec.data_dir, rerun_failed=True)
    assert [c.topo for c in rerun.to_run] == ["kary:2", "binomial"]
    assert rerun.done == ledger.done and rerun.failed == []
    assert read_ledger(cells, spec.data_dir, force=True).to_run == cells
