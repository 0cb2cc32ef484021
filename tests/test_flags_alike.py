"""Flags alike across commands (issue 60, item 8): one name, one meaning, everywhere."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from experiments.cli import app

REPO = Path(__file__).resolve().parent.parent
DESIGNS = str(REPO / "designs" / "kary-designs.json")
LOCAL = ["--backend", "local", "--exact-nodes", "4"]


def _kary(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_the_design_file_is_designs_and_the_old_data_still_works_and_says_so(
    tmp_path: Path,
) -> None:
    data_dir = ["--data-dir", str(tmp_path / "raw")]
    code, out, err = _kary("plan", *LOCAL, "--designs", DESIGNS, *data_dir)
    assert code == 0, err
    old_code, old_out, old_err = _kary("plan", *LOCAL, "--data", DESIGNS, *data_dir)
    assert old_code == 0 and old_out == out
    assert f"--data {DESIGNS} is the design file's old flag: say --designs {DESIGNS}" in old_err
    both = _kary("plan", *LOCAL, "--data", DESIGNS, "--designs", DESIGNS, *data_dir)
    assert both[0] == 2 and "--data is the old name of --designs: give one" in both[2]
    # A folder given as the design file is named by the flag's new name.
    folder = _kary("plan", *LOCAL, "--designs", str(tmp_path), *data_dir)
    assert folder[0] == 2 and "--designs names a design file" in folder[2]


def test_a_race_without_nodes_asks_for_what_race_takes(tmp_path: Path) -> None:
    code, _, err = _kary(
        "race", "--backend", "local", "--topo", "kary:1,kary:2", "--sizes", "4M",
        "--data-dir", str(tmp_path / "race"),
    )  # fmt: skip
    assert code == 2
    assert "give --exact-nodes N" in err and "--max-nodes" not in err


def test_race_takes_max_hours_beside_max_cost(tmp_path: Path) -> None:
    code, out, err = _kary(
        "race", *LOCAL, "--topo", "kary:1,kary:2", "--sizes", "4M", "--max-hours", "2",
        "--max-cost", "5", "--dry-run", "--data-dir", str(tmp_path / "race"),
    )  # fmt: skip
    assert code == 0, err
    assert "expected" in out


def test_every_command_that_takes_one_node_count_takes_exact_nodes(tmp_path: Path) -> None:
    for flag in ("--exact-nodes", "--nodes"):
        shown = _kary("designs", "show", flag, "3", "--topo", "kary:2")
        assert shown[0] == 0 and "2 flux-sample-2" in shown[1]
        rendered = _kary("render", flag, "4", "--topo", "kary:2", "--out", str(tmp_path / flag))
        assert rendered[0] == 0, rendered[2]
        assert (tmp_path / flag / "entrypoint.sh").is_file()


def test_a_flag_a_command_lacks_gets_a_suggestion_that_helps() -> None:
    code, _, err = _kary("race", "--exact-nodes", "4", "--iter", "2")
    assert code == 2
    assert "kary race has no --iters: a race runs blocks, not iterations" in err
    assert "--cluster" not in err and "--yes" not in err
    typo = _kary("run", "--exact-nodes", "4", "--sise", "4M")
    assert typo[0] == 2 and "did you mean --sizes?" in typo[2]
    parse = _kary("parse", "--data-dir", "x")
    assert parse[0] == 2 and "parse reads the raw tree from --data" in parse[2]
