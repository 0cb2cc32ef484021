"""What a new user met in twenty minutes (issue 36, items 8 and 9): each a line and exit 2,
or the hint that was missing."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from experiments.cli import app

runner = CliRunner()
PLAN = ["plan", "--backend", "local", "--sizes", "16M"]


def _one_line_error(args: list[str], expected: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output
    assert expected in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        # kary:9 at 8 nodes is the flat tree kary:7 builds: one tree timed twice.
        (
            ["--exact-nodes", "8", "--topo", "kary:7", "--topo", "kary:9"],
            "kary:9 at 8 nodes builds the same tree as kary:7",
        ),
        (["--exact-nodes", "4", "--designs", "{tmp}"], "is a folder: the raw tree kary run writes"),
        (
            ["--exact-nodes", "4", "--topo", "kary:2", "--designs", "{tmp}/d.json"],
            "--topo gives the topologies and --designs a design file: drop one",
        ),
        # An unset shell variable, not a wish for the default sizes.
        (["--exact-nodes", "4", "--topo", "kary:2", "--sizes", ""], "invalid sizes ''"),
        (
            ["--exact-nodes", "4", "--topo", "kary:2", "--data-dir", "{tmp}/afile"],
            "afile is a file: name a folder for the raw tree",
        ),
    ],
)
def test_a_plan_that_cannot_mean_what_it_says_is_one_line(
    tmp_path: Path, extra: list[str], expected: str
) -> None:
    (tmp_path / "afile").write_text("x")
    (tmp_path / "d.json").write_text('[{"nodes": 4, "topo": "kary:1"}]')
    _one_line_error([*PLAN, *(a.replace("{tmp}", str(tmp_path)) for a in extra)], expected)


def test_a_misspelt_sweep_file_key_gets_a_did_you_mean(tmp_path: Path) -> None:
    study = tmp_path / "study.yaml"
    study.write_text("nodes: 4\ntopo: [kary:2]\niteration: 2\n")
    _one_line_error(["plan", str(study)], "unknown key 'iteration' (did you mean 'iterations'?)")
    study.write_text("matrix:\n  chunksise: [256K]\n")
    _one_line_error(["plan", str(study)], "unknown axis 'chunksise' (did you mean 'chunksize'?)")


def test_a_report_into_a_folder_writes_report_html_there(tmp_path: Path) -> None:
    raw, parsed, out = tmp_path / "raw", tmp_path / "parsed", tmp_path / "site"
    cell = ["--exact-nodes", "2", "--topo", "kary:1", "--sizes", "1M"]
    ran = runner.invoke(app, ["run", "--backend", "local", *cell, "--data-dir", str(raw)])
    assert ran.exit_code == 0, ran.output
    # The run's last line says what comes next.
    assert ran.stderr.splitlines()[-1] == f"next: kary parse --data {raw} --out {parsed}"
    assert (
        runner.invoke(
            app, ["parse", "--data", str(raw), "--out", str(parsed), "--no-plots"]
        ).exit_code
        == 0
    )
    out.mkdir()
    result = runner.invoke(app, ["report", str(parsed), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "report.html").read_text().startswith("<!DOCTYPE html>")
    # A folder where the file must go is one line, never a traceback.
    (out / "report.html").unlink()
    (out / "report.html").mkdir()
    _one_line_error(["report", str(parsed), "--out", str(out)], "cannot write")
