"""run.json's `kary_seconds`: where a cell's time went; written by the runner, read old and new."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from benchmark_scripts import load_benchmark
from fake_backend import FakeBackend, fake_log

from experiments.backends import RunResult
from experiments.backends.entry_stamps import entry_spans, stamped
from experiments.execution.runner import run_plan
from experiments.formats.kary_line import format_kary_line
from experiments.formats.run_record import KARY_SPANS, RECORD_NAME, read_record
from experiments.model.plan import Cell, ExperimentSpec, plan_experiment
from experiments.model.render import Rendered, RenderOptions

MIB = 2**20
RUNNER_SPANS = ["render", "prepare", "backend", "judge", "record"]


def _run_one(data_dir: Path, backend: FakeBackend) -> dict[str, float]:
    spec = ExperimentSpec(exact_nodes=4, topos=["kary:2"], sizes=[16 * MIB], data_dir=data_dir)
    run_plan(plan_experiment(spec), backend, RenderOptions())
    record = read_record(data_dir / "4/kary-2/0")
    assert record is not None and record.state == "succeeded"
    assert record.kary_seconds is not None
    return record.kary_seconds


def test_every_cell_records_the_runners_spans(tmp_path: Path) -> None:
    spans = _run_one(tmp_path, FakeBackend())
    assert list(spans) == RUNNER_SPANS
    assert all(isinstance(v, float) and v >= 0 for v in spans.values())


def test_the_backends_spans_join_the_runners_in_the_order_a_cell_spends_them(
    tmp_path: Path,
) -> None:
    def handler(cell: Cell, rendered: Rendered, timeout: float | None) -> RunResult:
        given = {"instance_stop": 0.25, "entrypoint": 2.5, "instance_start": 1.5}
        return RunResult(fake_log(cell), 0, spans=given)

    spans = _run_one(tmp_path, FakeBackend(handler))
    assert list(spans) == list(KARY_SPANS)
    assert (spans["instance_start"], spans["entrypoint"], spans["instance_stop"]) == (
        1.5,
        2.5,
        0.25,
    )


def test_a_record_written_before_kary_seconds_still_reads(tmp_path: Path) -> None:
    old = {
        "format": 1,
        "cell": "4/kary-2/0",
        "nodes": 4,
        "topo": "kary:2",
        "iteration": 0,
        "state": "succeeded",
        "backend": "local",
        "wall_seconds": 3.2,
    }
    (tmp_path / RECORD_NAME).write_text(json.dumps(old))
    record = read_record(tmp_path)
    assert record is not None and record.state == "succeeded"
    assert record.kary_seconds is None


def test_the_stamped_entrypoint_keeps_its_own_name_and_exit_status(tmp_path: Path) -> None:
    entrypoint = tmp_path / "entrypoint.sh"
    entrypoint.write_text('echo "$0"\nexit 3\n')
    done = subprocess.run(["bash", str(stamped(entrypoint))], capture_output=True, text=True)
    assert done.returncode == 3
    assert done.stdout.strip() == str(entrypoint)
    spans = entry_spans(tmp_path, called=0.0, returned=4e9)
    assert set(spans) == {"instance_start", "entrypoint", "instance_stop"}
    assert spans["entrypoint"] >= 0


def test_missing_stamps_give_no_span_rather_than_a_guess(tmp_path: Path) -> None:
    assert entry_spans(tmp_path, called=100.0, returned=200.0) == {}
    (tmp_path / "entry.began").write_text("150.5\n")
    assert entry_spans(tmp_path, called=100.0, returned=200.0) == {"instance_start": 50.5}


def test_the_overhead_benchmark_splits_a_cell_into_parts_that_add_up() -> None:
    split = load_benchmark("cell_overhead").split
    steps = {
        "generate-blob": 0.5,
        "create-archive": 1.0,
        "distribute-all-nodes": 2.0,
        "verify-distribute-all-nodes": 0.25,
        "delete-archive-all-nodes": 0.125,
        "clean-all-nodes": 0.0625,
    }
    label = "16M"
    log = "\n".join(
        format_kary_line({"event": e, "size": label, "size_bytes": 16 * MIB, "seconds": s, "rc": 0})
        for e, s in steps.items()
    )
    spans = {"render": 0.1, "prepare": 0.1, "backend": 10.0, "judge": 0.1, "record": 0.1}
    spans.update(instance_start=3.0, entrypoint=5.0, instance_stop=1.5)
    got = split(spans, log)
    assert got["flux_steps"] == 3.125 and got["generation"] == 0.5
    assert (got["verify"], got["clean"]) == (0.25, 0.0625)
    assert got["entrypoint_untimed"] == 5.0 - 3.9375 and got["backend_other"] == 0.5
    parts = [k for k in got if k not in ("wall", "flux_steps", "generation", "kary")]
    assert sum(got[k] for k in parts) == pytest.approx(got["kary"])
    assert got["kary"] == pytest.approx(10.4 - 3.125 - 0.5)
    assert split({"render": 0.1}, log) is None
