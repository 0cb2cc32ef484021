"""`kary model check`: each sweep predicted from the others, actual against the interval."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cost_history_samples import TRUE_FLUX, truth_seconds, write_sweep
from typer.testing import CliRunner

from experiments.cli import app
from experiments.estimate.model_check import check_sweeps, load_check_sweeps

runner = CliRunner()


def _sweeps(root: Path, factors: dict[int, float]) -> list[Path]:
    return [
        write_sweep(root / f"parsed-{n}", TRUE_FLUX, n, factor=f, seed=n)
        for n, f in factors.items()
    ]


def test_each_sweep_is_predicted_from_the_others(tmp_path: Path) -> None:
    dirs = _sweeps(tmp_path, {4: 1.0, 8: 1.0, 12: 1.0, 16: 1.0})
    rows = check_sweeps(load_check_sweeps(dirs, {}))
    assert [r.trained_on for r in rows] == [3, 3, 3, 3]
    assert all(r.compared == "wall" for r in rows)
    assert [r.actual for r in rows] == pytest.approx([truth_seconds(d) for d in dirs])
    assert all(r.inside for r in rows)
    middle = [r for r in rows if r.sweep.endswith(("parsed-8", "parsed-12"))]
    assert all(not r.extrapolated and r.width < 2 for r in middle)
    # Flat on 16 nodes: fan-out 15, more than any tree in the history.
    assert rows[-1].extrapolated[0].startswith("16 nodes, history has 4-12: ")


def test_a_sweep_far_slower_than_the_others_falls_outside(tmp_path: Path) -> None:
    dirs = _sweeps(tmp_path, {4: 1.0, 8: 2.5, 12: 1.0, 16: 1.0})
    rows = {Path(r.sweep).name: r for r in check_sweeps(load_check_sweeps(dirs, {}))}
    assert not rows["parsed-8"].inside
    assert rows["parsed-8"].error < -0.4


def test_the_command_prints_the_table_and_the_summary(tmp_path: Path) -> None:
    dirs = _sweeps(tmp_path, {4: 1.0, 8: 1.0, 12: 1.0})
    result = runner.invoke(app, ["model", "check", *map(str, dirs)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split()[:4] == ["sweep", "cells", "compared", "predicted"]
    row = next(line for line in lines if line.startswith(str(dirs[1])))
    assert " wall " in row and " yes " in row
    assert lines[-1].startswith("3 of 3 sweeps inside their 80% interval")
    data = json.loads(runner.invoke(app, ["model", "check", "--json", *map(str, dirs)]).stdout)
    assert [r["inside"] for r in data["rows"]] == [True, True, True]
    assert data["rows"][0]["low_seconds"] < data["rows"][0]["high_seconds"]


def test_the_seed_trees_compare_their_timed_steps_or_a_known_total(
    flux_distribute: Path,
) -> None:
    eks = flux_distribute / "parsed-eks-exact-6"
    gke = flux_distribute / "parsed-gke-max-6"
    rows = check_sweeps(load_check_sweeps([eks, gke], {str(eks): 9716.0}))
    assert [r.compared for r in rows] == ["total", "steps"]
    assert rows[0].actual == 9716.0
    # Nothing says the two seed sweeps ran on the same machines: each is another
    # environment for the other, and the plan says so.
    assert any(t.startswith("another environment") for t in rows[1].extrapolated)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{missing}", "{one}"], "no parsed directory"),
        (["{one}"], "needs at least two sweeps"),
        (["{one}", "{two}", "--total", "9716"], "invalid --total '9716'"),
        (["{one}", "{two}", "--total", "elsewhere=10"], "--total names elsewhere"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    one, two = _sweeps(tmp_path, {4: 1.0, 8: 1.0})
    paths = {"missing": tmp_path / "nowhere", "one": one, "two": two}
    result = runner.invoke(app, ["model", "check", *(a.format(**paths) for a in args)])
    assert result.exit_code == 2
    assert result.stderr.startswith("kary: error: ") and message in result.stderr
    assert result.stderr.count("\n") == 1
