"""`kary run` in-process: dry run == plan, local runs without asking, billed runs ask."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from experiments.cli import app
from experiments.formats.run_record import read_record

runner = CliRunner()
# The emulator, named: without --backend kary picks real Flux when it is on PATH.
SMALL = ["--exact-nodes", "4", "--topo", "kary:2", "--sizes", "1M", "--backend", "local"]


def test_dry_run_is_exactly_plan(tmp_path: Path) -> None:
    args = [*SMALL, "--iters", "2", "--data-dir", str(tmp_path)]
    planned = runner.invoke(app, ["plan", *args])
    dry = runner.invoke(app, ["run", *args, "--dry-run"])
    assert planned.exit_code == dry.exit_code == 0
    assert dry.stdout == planned.stdout
    assert dry.stdout.startswith("kary plan: 2 cells to run, 0 already done (skipped)")
    assert not any(tmp_path.iterdir())


def test_a_local_run_records_the_cell_then_has_nothing_left(tmp_path: Path) -> None:
    args = ["run", *SMALL, "--data-dir", str(tmp_path), "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["succeeded"], summary["failed"]) == (1, 0)
    assert summary["cells"][0]["cell"] == "4/kary-2/0"
    record = read_record(tmp_path / "4/kary-2/0")
    assert record is not None and record.state == "succeeded" and record.backend == "local"
    assert "kary run: 1 cell on emulated Flux on this machine" in result.stderr
    again = runner.invoke(app, args)
    assert again.exit_code == 0
    assert "nothing to run: 1 cell done" in again.stderr


VIEW = "ghcr.io/converged-computing/flux-view-ubuntu:tag-noble"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--backend", "slurm"], "unknown backend 'slurm': choose from flux, local, kubernetes"),
        (
            ["--link-bandwidth", "1G"],
            "invalid bandwidth '1G': expected e.g. 1Gbit, 100mbit or 50MBps "
            "(bit/kbit/mbit/gbit/tbit or bps/kbps/mbps/gbps)",
        ),
        (["--link-latency", "soon"], "invalid latency 'soon': expected e.g. 200us, 1ms or 0.5s"),
        (["--timeout", "0"], "invalid --timeout 0: must be > 0 seconds"),
        (
            ["--backend", "flux", "--place", "moon"],
            "unknown place 'moon': choose from box, test-instance, allocation",
        ),
        (
            ["--backend", "local", "--place", "box"],
            "--place says where real Flux runs: flux backend only, not local",
        ),
        (
            ["--backend", "flux", "--place", "test-instance", "--link-bandwidth", "1Gbit"],
            "--link-bandwidth / --link-latency shape the box's links: "
            "use --place box, not test-instance",
        ),
        (
            ["--backend", "local", "--root-link-bandwidth", "1Gbit"],
            "--root-link-bandwidth shapes a box's rank 0 link: flux backend only",
        ),
        (
            ["--backend", "local", "--group-size", "2", "--group-link-bandwidth", "1Gbit"],
            "--group-size and --group-link-bandwidth group a box's nodes: flux backend only",
        ),
        (
            ["--backend", "flux", "--place", "box", "--group-size", "2"],
            "a two-level network needs both --group-size and --group-link-bandwidth",
        ),
        (
            [
                "--backend",
                "flux",
                "--place",
                "box",
                "--group-size",
                "0",
                "--group-link-bandwidth",
                "1Gbit",
            ],
            "--group-size must be at least 1, got 0",
        ),
        (
            ["--backend", "kubernetes", "--link-latency", "1ms"],
            "--link-bandwidth and --link-latency shape links on this machine: the flux backend "
            "(a box) or the emulator (local), not kubernetes",
        ),
        (
            # A pinned view (not a real build): else the view's tag is refused first.
            ["--backend", "kubernetes", "--flux-view", f"{VIEW}@sha256:{'ef' * 32}"],
            "this run is billed and there is no terminal to confirm it: "
            "check the plan above and add --yes",
        ),
    ],
)
def test_mistakes_are_one_line_errors(tmp_path: Path, extra: list[str], message: str) -> None:
    result = runner.invoke(app, ["run", *SMALL, "--data-dir", str(tmp_path), *extra])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[-1] == f"kary: error: {message}"
    assert not (tmp_path / "4").exists()
