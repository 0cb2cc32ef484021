"""The Python API (experiments.api, analysis): a sweep planned, run and parsed from Python.

It is what the README's notebook example does, in a fresh interpreter, so the
test also proves that the API never loads the command line (Typer).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from experiments import Sweep, plan
from experiments.errors import UserError
from experiments.formats.run_record import RunRecord, write_record

REPO = Path(__file__).resolve().parents[1]

NOTEBOOK = """
import json, sys
from pathlib import Path
from experiments import Sweep, plan, run
from experiments.execution.progress import SilentReporter
from analysis import parse

raw, out = Path(sys.argv[1]) / "raw", Path(sys.argv[1]) / "parsed"
sweep = Sweep(exact_nodes=4, topos=["kary:1", "kary:2"], sizes="1M", backend="local",
              data_dir=raw)
planned = plan(sweep)
summary = run(planned, reporter=SilentReporter(), echo=lambda line: None)
result = parse(raw, out, plots=False)
events = result.parsed.events
print(json.dumps({
    "text": planned.text(),
    "cells": [c.id for c in planned.ledger.to_run],
    "summary": summary.to_json(),
    "exit_code": summary.exit_code,
    "steps": len(events),
    "failed_steps": int((events["status"] != "ok").sum()),
    "topos": sorted(set(events["topo"])),
    "typer_loaded": "typer" in sys.modules,
}))
"""


def test_a_sweep_runs_and_parses_from_python_without_the_cli(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", NOTEBOOK, str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["typer_loaded"] is False
    assert out["cells"] == ["4/kary-1/0", "4/kary-2/0"]
    assert out["text"].startswith("kary plan: 2 cells to run, 0 already done (skipped)")
    assert (out["summary"]["succeeded"], out["summary"]["failed"], out["exit_code"]) == (2, 0, 0)
    assert out["topos"] == ["kary:1", "kary:2"]
    assert out["steps"] > 0 and out["failed_steps"] == 0


def test_plan_reads_the_ledger_and_prices_only_what_still_runs(tmp_path: Path) -> None:
    sweep = Sweep(exact_nodes=4, topos=["kary:1", "kary:2"], sizes="1M", backend="local")
    sweep = Sweep(**{**sweep.__dict__, "data_dir": tmp_path})
    first = plan(sweep)
    done = first.plan.cells[0]
    write_record(
        done.raw_dir(tmp_path),
        RunRecord(
            cell=done.id, nodes=4, topo=done.topo, iteration=0, backend="local", state="succeeded"
        ),  # type: ignore[arg-type]
    )
    second = plan(sweep)
    assert second.plan.cells == first.plan.cells  # the plan is the same; the ledger moved
    assert second.ledger.done == [done]
    assert [c.cell for c in second.estimate.cells] == second.ledger.to_run
    assert second.estimate.seconds < first.estimate.seconds
    assert second.to_json()["done"] == [done.id]


@pytest.mark.parametrize(
    ("sweep", "message"),
    [
        (Sweep(), "say which designs to run"),
        (Sweep(exact_nodes=4, iterations=0), "invalid --iters 0"),
        (Sweep(exact_nodes=4, sizes="lots", backend="local"), "lots"),
        (Sweep(exact_nodes=4, backend="slurm"), "unknown backend 'slurm'"),
        (Sweep(exact_nodes=4, up=True), "--up and --down need --cluster FILE"),
    ],
)
def test_mistakes_are_one_line_user_errors_before_anything_runs(
    sweep: Sweep, message: str, tmp_path: Path
) -> None:
    with pytest.raises(UserError, match=None) as caught:
        plan(Sweep(**{**sweep.__dict__, "data_dir": tmp_path}))
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert not any(tmp_path.iterdir())
