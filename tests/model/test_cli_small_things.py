"""Small CLI promises (issue 42, item 17): a failure's reason stays on its line when piped,
flags that would be dropped are refused, lists read as lists, help names every key, and a
file that is not YAML is one line."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from experiments.cli import app
from experiments.execution.progress import RichReporter
from experiments.execution.summary import CellOutcome
from experiments.model.cell_filter import FILTER_KEYS
from experiments.model.plan import Cell

runner = CliRunner()
REASON = "1 of 6 steps failed: verify-distribute-all-nodes 2M (rc 1); the entrypoint exited with 1"


def test_a_failed_cells_reason_stays_on_its_line_when_piped() -> None:
    out = io.StringIO()
    reporter = RichReporter(Console(file=out, width=80, force_terminal=False))
    cell = Cell(5, "kary:2", 0, (2 << 20,), ("all",))
    reporter.cell_finished(0, CellOutcome(cell, "failed", 5.2, error=REASON))
    (line,) = out.getvalue().splitlines()
    assert line == f"FAILED 5/kary-2/0 in 5.2 s: {REASON}"


def _plan(tmp_path: Path, *args: str) -> tuple[int, str]:
    base = ["plan", "--backend", "local", "--exact-nodes", "5", "--data-dir", str(tmp_path)]
    result = runner.invoke(app, [*base, *args])
    return result.exit_code, result.output


def test_sizes_with_a_size_range_is_refused_not_half_ignored(tmp_path: Path) -> None:
    code, output = _plan(tmp_path, "--sizes", "1M", "--max-size", "2")
    assert (code, output) == (
        2,
        "kary: error: --sizes lists the sizes; --min-size / --max-size give a range of GB "
        "instead: use one or the other\n",
    )


def test_topo_takes_a_comma_list_as_strategy_does(tmp_path: Path) -> None:
    code, output = _plan(tmp_path, "--topo", "kary:1,kary:2", "--sizes", "1M")
    assert code == 0, output
    assert output.startswith("kary plan: 2 cells to run")
    assert "5/kary-1/0" in output and "5/kary-2/0" in output


def test_parse_help_names_every_only_key() -> None:
    result = runner.invoke(app, ["parse", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert f"(keys: {', '.join(FILTER_KEYS)};" in " ".join(result.output.split())
    assert "blob" in FILTER_KEYS


def test_a_cluster_file_that_is_not_yaml_is_one_line(tmp_path: Path) -> None:
    # A README given by mistake: PyYAML's own message spans three lines and a caret.
    page = tmp_path / "README.md"
    page.write_text("# kary\n\nIt answers: one question: how long\n")
    code, output = _plan(tmp_path, "--cluster", str(page))
    assert (code, output) == (
        2,
        f"kary: error: cluster file {page} is not valid YAML (line 3, column 25): "
        "mapping values are not allowed here\n",
    )


def test_kary_version_prints_the_version_and_the_console_script_too(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from experiments.cli import main
    from experiments.version import __version__

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.startswith(f"kary {__version__}")
    main(["--version"])  # the console script's fast path: no command module imported
    assert capsys.readouterr().out.startswith(f"kary {__version__}")


def test_kary_help_says_which_command_to_run_first() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "Start with `kary plan" in result.stdout and "then `kary run`" in result.stdout


def test_a_fan_out_past_the_node_count_is_said_to_be_the_flat_tree(tmp_path: Path) -> None:
    # kary:99 at 8 nodes is accepted (flux-core takes it) but is kary:7 (issue 60, 12).
    result = runner.invoke(
        app, ["plan", "--exact-nodes", "8", "--topo", "kary:99", "--data-dir", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert "note: kary:99 at 8 nodes is the flat tree (every rank a child of rank 0), " in (
        result.output
    )
    exact = runner.invoke(
        app, ["plan", "--exact-nodes", "8", "--topo", "kary:7", "--data-dir", str(tmp_path)]
    )
    assert "flat tree" not in exact.output


def test_every_command_checks_its_data_folder_first_with_one_line(tmp_path: Path) -> None:
    """A data dir that is a file, or cannot be written, is one line and exit 2 before any
    plan is printed or anything started (issue 60, item 9); race said 'not readable
    JSON ([Errno 20] Not a directory)' and an unwritable one was found mid-run."""
    afile = tmp_path / "afile"
    afile.write_text("")
    sweep = ["--exact-nodes", "4", "--topo", "kary:1,kary:2", "--sizes", "1M"]
    for command in ("plan", "run", "race"):
        result = runner.invoke(app, [command, *sweep, "--data-dir", str(afile)])
        assert result.exit_code == 2, (command, result.output)
        assert result.output.strip() == (
            f"kary: error: --data-dir {afile} is a file: name a folder for the raw tree"
        ), command
        # /proc takes no new folder, even from root: refused before the plan prints.
        nowhere = runner.invoke(app, [command, *sweep, "--data-dir", "/proc/kary-no/raw"])
        assert nowhere.exit_code == 2 and "cannot be written" in nowhere.output, command
        assert "topologies" not in nowhere.output and "predicted" not in nowhere.output
    parsed = runner.invoke(app, ["parse", "--data", str(afile), "--out", str(tmp_path / "p")])
    assert parsed.exit_code == 2
    assert (
        parsed.output.strip()
        == f"kary: error: --data {afile} is a file: name the raw tree's folder"
    )
