"""`kary run --emulator-fault`: checked like the emulator reads it, before anything runs.

The faults themselves, end to end through a run and a parse, are in
tests/emulator/test_emulator_faults.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from experiments.cli import app
from experiments.model.faults import parse_faults

runner = CliRunner()
SMALL = ["--exact-nodes", "5", "--topo", "kary:2", "--sizes", "1M"]


@pytest.mark.parametrize(
    ("texts", "by_rank"),
    [
        (["corrupt:3"], {3: {"corrupt": True}}),
        (["kill:1"], {1: {"kill_after_loads": 0}}),
        (["kill:4:17"], {4: {"kill_after_loads": 17}}),
        (
            ["corrupt:2", "kill:2:5", "kill:3"],
            {2: {"corrupt": True, "kill_after_loads": 5}, 3: {"kill_after_loads": 0}},
        ),
    ],
)
def test_faults_by_rank(texts: list[str], by_rank: dict[int, dict[str, object]]) -> None:
    # The one reader of the syntax, for the plan and the emulator's launcher alike.
    assert parse_faults(texts) == by_rank


SYNTAX = "expected corrupt:RANK or kill:RANK[:LOADS]"


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        *[
            (bad, f"invalid --emulator-fault {bad!r}: {SYNTAX}")
            # The emulator's launcher would crash on corrupt:3:1 (int('3:1')) and
            # read kill:-1 as a rank that never matches: refused here instead.
            for bad in (
                "boom:1",
                "corrupt",
                "corrupt:",
                "corrupt:3:1",
                "kill:-1",
                "kill:1:",
                "kill:1:x",
            )
        ],
        ("corrupt:5", "--emulator-fault corrupt:5: cell 5/kary-2/0 has no rank 5 (ranks 0-4)"),
    ],
)
def test_a_bad_fault_is_one_line_and_nothing_runs(tmp_path: Path, fault: str, message: str) -> None:
    for extra in ([], ["--dry-run"]):
        args = ["run", *SMALL, "--data-dir", str(tmp_path), "--emulator-fault", fault, *extra]
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert result.stderr == f"kary: error: {message}\n"
        assert result.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_the_same_fault_twice_on_one_rank_is_refused(tmp_path: Path) -> None:
    args = ["run", *SMALL, "--data-dir", str(tmp_path)]
    args += ["--emulator-fault", "kill:1", "--emulator-fault", "kill:1:3"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert (
        result.stderr == "kary: error: --emulator-fault kill:1:3: rank 1 already has a kill fault\n"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("backend", ["flux", "kubernetes"])
def test_faults_are_refused_on_any_other_backend(tmp_path: Path, backend: str) -> None:
    args = ["run", *SMALL, "--data-dir", str(tmp_path), "--backend", backend]
    result = runner.invoke(app, [*args, "--emulator-fault", "corrupt:3", "--yes"])
    assert result.exit_code == 2
    assert result.stderr == (
        "kary: error: --emulator-fault injects faults into the emulator: local backend only\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_fault_without_backend_picks_the_emulator_even_with_flux_on_path(
    tmp_path: Path, answering_flux: Path
) -> None:
    args = ["run", *SMALL, "--data-dir", str(tmp_path / "raw"), "--dry-run", "--json"]
    plain = runner.invoke(app, args)
    faulty = runner.invoke(app, [*args, "--emulator-fault", "kill:2:1"])
    assert plain.exit_code == faulty.exit_code == 0, faulty.output
    assert json.loads(plain.stdout)["backend"] == "flux"
    plan = json.loads(faulty.stdout)
    assert plan["backend"] == "local"
    assert plan["emulator_faults"] == ["kill:2:1"]
    assert "emulator_faults" not in json.loads(plain.stdout)


def test_the_dry_run_says_the_cells_are_fault_injected(tmp_path: Path) -> None:
    args = ["run", *SMALL, "--data-dir", str(tmp_path), "--dry-run", "--backend", "local"]
    args += ["--emulator-fault", "corrupt:3", "--emulator-fault", "kill:1:2"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == (
        "emulator faults: corrupt:3, kill:1:2 (a testing aid: these cells test the template, "
        "they measure nothing)"
    )
    assert list(tmp_path.iterdir()) == []


def test_plan_does_not_take_the_run_only_flag(tmp_path: Path) -> None:
    args = ["plan", *SMALL, "--data-dir", str(tmp_path), "--emulator-fault", "corrupt:3"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert result.stderr.startswith("kary: error: No such option: --emulator-fault")
