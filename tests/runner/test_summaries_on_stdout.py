"""Answers on stdout, progress on stderr (issue 60, item 6): `kary run ... > summary.txt`
keeps run's summary, `kary parse ... > parsed.txt` parse's, while what happens as it
happens (the plan, each cell, the next command) stays on the terminal."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from experiments.cli import app

CELL = ["--backend", "local", "--exact-nodes", "4", "--topo", "kary:2", "--sizes", "4M"]


def test_run_and_parse_put_their_summary_on_stdout_and_progress_on_stderr(
    tmp_path: Path,
) -> None:
    runner = CliRunner()
    raw = tmp_path / "raw"
    ran = runner.invoke(app, ["run", *CELL, "--iters", "1", "--data-dir", str(raw)])
    assert ran.exit_code == 0, ran.output
    assert ran.stdout.startswith("kary run: 1 succeeded, 0 failed, 0 skipped; wall time")
    assert "ok 4/kary-2/0" in ran.stderr and "kary run: 1 succeeded" not in ran.stderr
    assert f"next: kary parse --data {raw}" in ran.stderr
    parsed = runner.invoke(app, ["parse", "--data", str(raw), "--out", str(tmp_path / "p")])
    assert parsed.exit_code == 0, parsed.output
    assert parsed.stdout.startswith("parsed 1 log in 1 cell: 6 steps (0 failed)")
    # With --json the JSON is the answer on stdout; the summary joins the progress.
    again = runner.invoke(app, ["run", *CELL, "--iters", "2", "--data-dir", str(raw), "--json"])
    assert again.exit_code == 0, again.output
    assert again.stdout.lstrip().startswith("{") and "kary run: 1 succeeded" in again.stderr
