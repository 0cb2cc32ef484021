"""The runner against a fake backend: ledger, skip, resume, force, timeouts, interrupts."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from fake_backend import FakeBackend, fake_log

from experiments.backends import BackendError, RunResult
from experiments.execution.ledger import read_ledger
from experiments.execution.runner import REPLACED_DIR, RunSummary, default_timeout, run_plan
from experiments.formats.run_record import LOG_NAME, MINICLUSTER_NAME, read_record
from experiments.model.plan import Cell, ExperimentSpec, Plan, plan_experiment
from experiments.model.render import Rendered, RenderOptions
from experiments.version import kary_commit

MIB = 2**20


def _plan(data_dir: Path, topos: tuple[str, ...] = ("kary:1", "kary:2")) -> Plan:
    spec = ExperimentSpec(exact_nodes=4, topos=list(topos), sizes=[16 * MIB], data_dir=data_dir)
    return plan_experiment(spec)


def _run(plan: Plan, backend: FakeBackend, **kw: Any) -> RunSummary:
    return run_plan(plan, backend, RenderOptions(), **kw)


def _cell_files(data_dir: Path, cell_id: str) -> set[str]:
    return {p.name for p in (data_dir / cell_id).iterdir()}


def test_cells_that_succeed_are_recorded_with_log_and_minicluster(tmp_path: Path) -> None:
    backend = FakeBackend()
    summary = _run(_plan(tmp_path), backend)
    assert summary.exit_code == 0 and summary.count("succeeded") == 2
    assert backend.ups == 1 and backend.downs == 1
    for cell_id in ("4/kary-1/0", "4/kary-2/0"):
        assert _cell_files(tmp_path, cell_id) == {"run.json", LOG_NAME, MINICLUSTER_NAME}
        record = read_record(tmp_path / cell_id)
        assert record is not None
        assert record.state == "succeeded" and record.error is None
        assert record.backend == "fake" and record.sizes == [16 * MIB]
        assert record.flux_version == "0.66.0" and record.template_hash
        assert record.kary_commit == kary_commit() and "kary_commit" in record.model_fields_set
        assert record.started and record.finished
        extra = record.model_extra or {}
        assert extra["steps"] == 2 and extra["failed_steps"] == []


def test_succeeded_cells_are_skipped_untouched(tmp_path: Path) -> None:
    _run(_plan(tmp_path, ("kary:1",)), FakeBackend())
    record = tmp_path / "4/kary-1/0/run.json"
    before = (record.read_bytes(), record.stat().st_mtime_ns)
    backend = FakeBackend()
    plan = _plan(tmp_path)
    summary = _run(plan, backend)
    assert [c.id for c, _, _ in backend.calls] == ["4/kary-2/0"]
    assert summary.skipped_done == 1
    assert (record.read_bytes(), record.stat().st_mtime_ns) == before


def test_a_failed_step_fails_the_cell_with_the_reason(tmp_path: Path) -> None:
    def handler(cell: Cell, rendered: Rendered, timeout: float | None) -> RunResult:
        return RunResult(fake_log(cell, failed={"distribute-all-nodes"}), rc=1)

    summary = _run(_plan(tmp_path, ("kary:2",)), FakeBackend(handler))
    assert summary.exit_code == 1
    record = read_record(tmp_path / "4/kary-2/0")
    assert record is not None and record.state == "failed"
    assert record.error == (
        "1 of 2 steps failed: distribute-all-nodes 16M (rc 1); the entrypoint exited with 1"
    )
    assert "4/kary-2/0: failed: 1 of 2 steps failed" in summary.text()


def test_failed_cells_stay_failed_until_rerun_failed_which_keeps_the_old_attempt(
    tmp_path: Path,
) -> None:
    _run(_plan(tmp_path, ("kary:2",)), FakeBackend(lambda c, r, t: RunResult("", rc=2)))
    assert _run(_plan(tmp_path, ("kary:2",)), FakeBackend()).skipped_failed == 1
    plan = _plan(tmp_path, ("kary:2",))
    summary = _run(plan, FakeBackend(), ledger=read_ledger(plan.cells, tmp_path, rerun_failed=True))
    assert summary.count("succeeded") == 1
    moved = list((tmp_path / REPLACED_DIR).glob("*/4/kary-2/0/run.json"))
    assert len(moved) == 1 and json.loads(moved[0].read_text())["state"] == "failed"


def test_force_moves_old_results_aside_and_never_deletes(tmp_path: Path) -> None:
    _run(_plan(tmp_path, ("kary:2",)), FakeBackend())
    old_log = (tmp_path / "4/kary-2/0" / LOG_NAME).read_text()
    plan = _plan(tmp_path, ("kary:2",))
    ledger = read_ledger(plan.cells, tmp_path, force=True)
    assert [c.id for c in ledger.to_run] == ["4/kary-2/0"]
    backend = FakeBackend(lambda c, r, t: RunResult(fake_log(c, seconds=9.0), rc=0))
    _run(plan, backend, ledger=ledger)
    kept = list((tmp_path / REPLACED_DIR).glob(f"*/4/kary-2/0/{LOG_NAME}"))
    assert [p.read_text() for p in kept] == [old_log]
    assert '"seconds": 9.0' in (tmp_path / "4/kary-2/0" / LOG_NAME).read_text()


def test_timeout_and_backend_errors_are_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    def handler(cell: Cell, rendered: Rendered, timeout: float | None) -> RunResult:
        if cell.topo == "kary:1":
            return RunResult("partial\n", rc=None, timed_out=True, error="timed out after 7 s")
        raise BackendError("lost the cluster")

    summary = _run(_plan(tmp_path, ("kary:1", "kary:2", "kary:3")), FakeBackend(handler))
    states = [(o.cell.id, o.state) for o in summary.outcomes]
    assert states == [("4/kary-1/0", "timeout"), ("4/kary-2/0", "failed"), ("4/kary-3/0", "failed")]
    timeout_record = read_record(tmp_path / "4/kary-1/0")
    assert timeout_record is not None and timeout_record.error == "timed out after 7 s"
    assert (tmp_path / "4/kary-1/0" / LOG_NAME).read_text() == "partial\n"
    failed = read_record(tmp_path / "4/kary-2/0")
    assert failed is not None and failed.error == (
        "fake backend: lost the cluster; the log has no KARY step lines"
    )
    assert summary.exit_code == 1


def test_timeout_per_cell_defaults_to_the_prediction(tmp_path: Path) -> None:
    backend = FakeBackend()
    _run(_plan(tmp_path), backend, predicted={"4/kary-1/0": 10.0, "4/kary-2/0": 200.0})
    assert [t for _, _, t in backend.calls] == [300.0, 800.0]
    assert default_timeout(1000.0) == 4000.0
    backend = FakeBackend()
    _run(_plan(tmp_path / "b"), backend, timeout=12.5)
    assert [t for _, _, t in backend.calls] == [12.5, 12.5]


def test_secrets_are_redacted_before_the_log_is_written(tmp_path: Path) -> None:
    def handler(cell: Cell, rendered: Rendered, timeout: float | None) -> RunResult:
        cert = 'curve\n    public-key = "pub"\n    secret-key = "Zq9*s3cr3t!"\n'
        return RunResult(cert + "key AKIAIOSFODNN7EXAMPLE\n" + fake_log(cell), rc=0)

    _run(_plan(tmp_path, ("kary:2",)), FakeBackend(handler))
    log = (tmp_path / "4/kary-2/0" / LOG_NAME).read_text()
    assert "s3cr3t" not in log and "AKIAIOSFODNN7EXAMPLE" not in log
    assert 'public-key = "pub"' in log and "secret-key = <redacted>" in log


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_an_interrupt_marks_the_cell_tears_down_and_a_rerun_finishes_the_rest(
    tmp_path: Path, how: str
) -> None:
    def handler(cell: Cell, rendered: Rendered, timeout: float | None) -> RunResult:
        if cell.topo == "kary:2":
            if how == "ctrl-c":
                raise KeyboardInterrupt
            os.kill(os.getpid(), signal.SIGTERM)
        return RunResult(fake_log(cell), rc=0)

    backend = FakeBackend(handler)
    plan = _plan(tmp_path, ("kary:1", "kary:2", "kary:3"))
    summary = _run(plan, backend)
    assert summary.interrupted and summary.exit_code == 130
    assert backend.downs == 1
    assert [(o.cell.id, o.state) for o in summary.outcomes] == [
        ("4/kary-1/0", "succeeded"),
        ("4/kary-2/0", "interrupted"),
    ]
    assert summary.not_started == 1
    interrupted = read_record(tmp_path / "4/kary-2/0")
    assert interrupted is not None and interrupted.state == "interrupted"
    assert not (tmp_path / "4/kary-3/0").exists()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL

    again = FakeBackend()
    summary = _run(_plan(tmp_path, ("kary:1", "kary:2", "kary:3")), again)
    assert [c.id for c, _, _ in again.calls] == ["4/kary-2/0", "4/kary-3/0"]
    assert summary.exit_code == 0 and summary.skipped_done == 1


def test_before_cell_can_stop_the_sweep(tmp_path: Path) -> None:
    backend = FakeBackend()
    summary = _run(
        _plan(tmp_path, ("kary:1", "kary:2")),
        backend,
        before_cell=lambda i, cell: "spending cap reached" if i == 1 else None,
    )
    assert len(backend.calls) == 1 and summary.not_started == 1
    assert summary.stopped_because == "spending cap reached" and summary.exit_code == 1


def test_summary_json_lists_every_cell(tmp_path: Path) -> None:
    summary = _run(_plan(tmp_path), FakeBackend())
    data = summary.to_json()
    assert data["succeeded"] == 2 and data["skipped"] == {"done": 0, "failed": 0}
    assert [c["cell"] for c in data["cells"]] == ["4/kary-1/0", "4/kary-2/0"]
    assert data["cells"][0]["step_seconds"] == 1.0


@pytest.mark.parametrize("uses_image", [True, False])
def test_run_json_names_the_image_only_where_cells_run_in_it(
    tmp_path: Path, uses_image: bool
) -> None:
    pinned = "ubuntu:noble@sha256:" + "a" * 64

    class ImageBackend(FakeBackend):
        pass

    ImageBackend.uses_image = uses_image
    run_plan(_plan(tmp_path, ("kary:2",)), ImageBackend(), RenderOptions(image=pinned))
    record = json.loads((tmp_path / "4/kary-2/0/run.json").read_text())
    if uses_image:
        assert record["image"] == pinned and record["image_digest"] == "sha256:" + "a" * 64
        assert record["flux_view"]
    else:  # the flux on hand ran it: no image to name
        assert record["image"] is None and "image_digest" not in record


def test_a_cell_whose_lost_capacity_did_not_come_back_stops_the_sweep(tmp_path: Path) -> None:
    """RunResult.stop (a node's replacement not Ready within its bound): the cell is
    recorded as it ended, and no later cell is handed to the backend."""

    def handler(cell: Cell, rendered: Rendered, timeout: float | None) -> RunResult:
        return RunResult("", rc=137, error="node lost", stop="the replacement did not come")

    backend = FakeBackend(handler)
    summary = _run(_plan(tmp_path, ("kary:1", "kary:2", "kary:3")), backend)
    assert len(backend.calls) == 1 and summary.not_started == 2
    assert summary.stopped_because == "the replacement did not come"
    assert read_record(tmp_path / "4/kary-1/0").state == "failed"
