"""An emulator cell says when other work kept the cores busy (issue 60, item 12): its
brokers are processes on this machine's cores, and a 4M block took 0.38 s on an idle
machine, 1.14 s beside another job, without a word."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from experiments.backends.emulator import backend as emulator_backend
from experiments.cli import app

CELL = ["--backend", "local", "--exact-nodes", "3", "--topo", "kary:2", "--sizes", "1M"]


@pytest.mark.parametrize(("others", "warned"), [(0.6, True), (0.05, False)])
def test_a_cell_run_beside_other_work_is_warned_of_and_records_the_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, others: float, warned: bool
) -> None:
    monkeypatch.setattr(emulator_backend.CpuMeter, "others", lambda self: others)
    raw = tmp_path / "raw"
    result = CliRunner().invoke(app, ["run", *CELL, "--data-dir", str(raw)])
    assert result.exit_code == 0, result.output
    record = json.loads((raw / "3" / "kary-2" / "0" / "run.json").read_text())
    assert record["emulator"]["other_load"] == others
    said = "warning: 3/kary-2/0: other work kept 60% of this machine's cores busy"
    assert (said in result.stderr) is warned
    assert ("other work kept" in result.stderr) is warned
