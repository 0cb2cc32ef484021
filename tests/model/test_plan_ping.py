"""Planning the ping experiment and the direct strategy: cells, sizes, what is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from experiments.cli import app
from experiments.errors import UserError
from experiments.execution.ledger import read_ledger
from experiments.formats.run_record import RunRecord, write_record
from experiments.model.plan import PING_SIZES, ExperimentSpec, plan_experiment

MIB = 2**20
runner = CliRunner()


def _spec(tmp_path: Path, **kwargs: object) -> ExperimentSpec:
    return ExperimentSpec(
        data_dir=tmp_path / "raw", exact_nodes=4, topos=["kary:1", "kary:2"], **kwargs
    )  # type: ignore[arg-type]


def test_a_ping_plan_pings_and_distributes_nothing(tmp_path: Path) -> None:
    plan = plan_experiment(_spec(tmp_path, experiment="ping", strategies=["all", "direct"]))
    assert [(c.topo, c.experiment, c.strategies) for c in plan.cells] == [
        ("kary:1", "ping", ()),
        ("kary:2", "ping", ()),
    ]
    assert plan.sizes == PING_SIZES["local"] == [MIB, 16 * MIB]
    assert plan.record_fields(plan.cells[0])["experiment"] == "ping"
    # A distribution's run.json stays as it was: no experiment key.
    distribute = plan_experiment(_spec(tmp_path, strategies=["all", "direct"]))
    assert distribute.cells[0].strategies == ("all", "direct")
    assert "experiment" not in distribute.record_fields(distribute.cells[0])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"experiment": "pong"}, "unknown experiment 'pong': choose from distribute, ping"),
        ({"experiment": "ping", "sizes": [2**31]}, "size 2G is too large for the ping"),
        ({"strategies": ["all", "http"]}, "unknown strategy 'http'"),
    ],
)
def test_what_cannot_run_is_one_line(
    tmp_path: Path, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(UserError, match=message):
        plan_experiment(_spec(tmp_path, **kwargs))


def test_a_raw_tree_holds_one_experiment_per_cell(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    cell = plan_experiment(spec).cells[0]
    record = RunRecord(
        cell=cell.id, nodes=4, topo=cell.topo, iteration=0, backend="local", state="succeeded"
    )  # type: ignore[arg-type]
    write_record(cell.raw_dir(spec.data_dir), record)
    pings = plan_experiment(_spec(tmp_path, experiment="ping")).cells
    with pytest.raises(UserError, match="holds a distribute run, and this plan runs ping"):
        read_ledger(pings, spec.data_dir)
    assert read_ledger(pings, spec.data_dir, force=True).to_run == pings
    assert [c.id for c in read_ledger(plan_experiment(spec).cells, spec.data_dir).done] == [cell.id]


def test_plan_and_render_take_experiment_ping(tmp_path: Path) -> None:
    cell = ["--experiment", "ping", "--topo", "kary:1", "--sizes", "4K"]
    where = ["--backend", "local", "--data-dir", str(tmp_path)]
    planned = runner.invoke(app, ["plan", *cell, "--exact-nodes", "4", *where, "--json"])
    assert planned.exit_code == 0, planned.output
    (planned_cell,) = json.loads(planned.stdout)["cells"]
    assert (planned_cell["id"], planned_cell["strategies"]) == ("4/kary-1/0", [])
    rendered = runner.invoke(
        app, ["render", *cell, "--nodes", "4", "--out", str(tmp_path / "cell")]
    )
    assert rendered.exit_code == 0, rendered.output
    entrypoint = (tmp_path / "cell" / "entrypoint.sh").read_text()
    assert 'kary_ping "$service" "$rank" 4K 4096' in entrypoint
    wrong = runner.invoke(app, ["plan", "--experiment", "pong", "--exact-nodes", "4"])
    assert wrong.exit_code == 2
    assert "unknown experiment 'pong'" in wrong.output and "Traceback" not in wrong.output
