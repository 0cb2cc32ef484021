"""--max-cost refuses on a figure the plan prints, and says which (issue 60, item 4): the
plan's `--max-cost holds this plan to $X: ...` line, whose parts add up to X, is the
figure the refusal quotes, with the same words."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from experiments.cli import app

REPO = Path(__file__).resolve().parents[2]
EKS6 = ["--cluster", str(REPO / "clusters" / "eks-6.yaml"), "--exact-nodes", "6"]
DOLLARS = re.compile(r"\$([0-9,]+\.[0-9]{2})")


def _dollars(text: str) -> list[float]:
    return [float(x.replace(",", "")) for x in DOLLARS.findall(text)]


@pytest.mark.parametrize("iters", ["1", "3"])
def test_the_refusal_quotes_the_guarded_figure_the_plan_prints(tmp_path: Path, iters: str) -> None:
    runner = CliRunner()
    args = [*EKS6, "--min-size", "1", "--max-size", "10", "--iters", iters]
    args += ["--data-dir", str(tmp_path / "raw")]
    shown = runner.invoke(app, ["plan", *args])
    assert shown.exit_code == 0, shown.output
    (line,) = [x for x in shown.stdout.splitlines() if x.startswith("--max-cost holds")]
    guarded, *parts = _dollars(line)
    # per-cell's high end and the smoke cell's, which the plan prints on their own lines.
    assert guarded == pytest.approx(sum(parts), abs=0.011)
    assert "per-cell's high end" in line and "the smoke cell's" in line
    assert f"${parts[1]:,.2f})" in shown.stdout  # the smoke line's high end
    assert f"${parts[0]:,.2f})" in shown.stdout  # per-cell's in the layouts table
    refused = runner.invoke(app, ["plan", *args, "--max-cost", f"{guarded - 0.5:.2f}"])
    assert refused.exit_code == 2
    said = line.split(": ", 1)[1]
    assert f"estimated at ${guarded:,.2f} at most ({said})" in refused.stderr
    passed = runner.invoke(app, ["plan", *args, "--max-cost", f"{guarded + 0.01:.2f}"])
    assert passed.exit_code == 0, passed.output
