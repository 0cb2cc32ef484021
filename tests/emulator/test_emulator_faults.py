"""Every emulator fault end to end: `kary run --emulator-fault`, then `kary parse`'s tables.

What a template author relies on: a corrupted copy makes its distribution a
failure with no time, a dead broker fails the steps that needed it (and not
the ones that did not), and run.json says the cell was fault-injected.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from analysis.tree import parse_tree
from experiments.backends.emulator.backend import EmulatorBackend
from experiments.cli import app
from experiments.model.plan import Cell
from experiments.model.render import RenderOptions, render_cell

runner = CliRunner()
CELL = "5/kary-2/0"


def _run_and_parse(
    tmp: Path, faults: list[str], sizes: str = "2M", strategies: str = "all,leaves"
) -> tuple[int, dict[str, Any], pd.DataFrame, pd.DataFrame]:
    """(exit code, run.json, parsed events, parsed runs) of one 5-node kary:2 cell."""
    raw, parsed = tmp / "raw", tmp / "parsed"
    args = ["run", "--backend", "local", "--exact-nodes", "5", "--topo", "kary:2"]
    args += ["--sizes", sizes, "--strategy", strategies, "--data-dir", str(raw), "--json"]
    for fault in faults:
        args += ["--emulator-fault", fault]
    result = runner.invoke(app, args)
    assert result.exit_code in (0, 1), result.output
    record = json.loads((raw / CELL / "run.json").read_text())
    tables = parse_tree(raw, parsed, plots=False).parsed
    return result.exit_code, record, tables.events, tables.runs


def _rows(events: pd.DataFrame) -> dict[str, tuple[str, float | None, str]]:
    """event -> (status, seconds or None, reason), for one size."""
    out = {}
    for row in events.itertuples():
        seconds = None if math.isnan(row.time_seconds) else float(row.time_seconds)
        out[str(row.event)] = (str(row.status), seconds, str(row.reason))
    return out


def test_corrupt_fails_each_distribution_to_that_rank_with_no_time(tmp_path: Path) -> None:
    code, record, events, runs = _run_and_parse(tmp_path, ["corrupt:3"])
    assert code == 1
    assert record["state"] == "failed"
    assert record["emulator"]["faults"] == ["corrupt:3"]
    rows = _rows(events)
    mismatch = "verify failed on rank 3: sha256 mismatch or unreadable"
    assert rows["distribute-all-nodes"] == ("failed", None, mismatch)
    assert rows["distribute-leaf-nodes"] == ("failed", None, mismatch)
    assert rows["verify-distribute-all-nodes"][:2] == ("failed", None)
    # The steps the fault does not touch are no timing either: the cell failed.
    for event in ("create-archive", "delete-archive-all-nodes", "clean-leaf-nodes"):
        status, seconds, _ = rows[event]
        assert status.startswith("void: cell failed: ") and seconds is None
    assert list(runs["state"]) == ["failed"]
    assert list(events["run_state"].unique()) == ["failed"]


@pytest.mark.parametrize(
    ("fault", "rank"),
    [("kill:1:1", 1), ("kill:4", 4)],  # a relay killed at its 2nd blob; a leaf at its 1st
)
def test_kill_fails_the_steps_that_need_the_dead_broker(
    tmp_path: Path, fault: str, rank: int
) -> None:
    code, record, events, runs = _run_and_parse(tmp_path, [fault])
    assert code == 1
    assert record["state"] == "failed"
    assert record["emulator"]["faults"] == [fault]
    assert f"emulator: broker rank {rank} exited (killed by SIGKILL)" in record["error"]
    rows = _rows(events)
    for event in ("distribute-all-nodes", "clean-all-nodes", "distribute-leaf-nodes"):
        status, seconds, reason = rows[event]
        assert (status, seconds) == ("failed", None), event
        assert f"rank {rank}" in reason, (event, reason)
    status, seconds, reason = rows["distribute-all-nodes"]
    assert reason.startswith("exit status 68: ") and f"rank {rank}" in reason
    # Rank 0 lives on and its own steps succeed, but the cell failed: no timing from them.
    for event in ("create-archive", "delete-archive-all-nodes", "create-leaf-nodes"):
        status, seconds, _ = rows[event]
        assert status.startswith("void: cell failed: ") and seconds is None
    assert list(runs["state"]) == ["failed"]


def test_a_kill_that_never_fires_leaves_a_good_cell_that_says_it_was_injected(
    tmp_path: Path,
) -> None:
    # Rank 1 extracts a 2M blob once (strategy all): 2 loads, so kill:1:2 never fires.
    code, record, events, runs = _run_and_parse(tmp_path, ["kill:1:2"], strategies="all")
    assert code == 0
    assert record["state"] == "succeeded"
    assert record["emulator"]["faults"] == ["kill:1:2"]
    assert set(events["status"]) == {"ok"}
    assert list(runs["state"]) == ["succeeded"]


def test_several_faults_act_together(tmp_path: Path) -> None:
    code, record, events, _ = _run_and_parse(tmp_path, ["corrupt:2", "corrupt:4"], "1M", "all")
    assert code == 1
    assert record["emulator"]["faults"] == ["corrupt:2", "corrupt:4"]
    assert _rows(events)["distribute-all-nodes"] == (
        "failed",
        None,
        "verify failed on ranks 2,4: sha256 mismatch or unreadable",
    )


def test_a_run_without_faults_records_none(tmp_path: Path) -> None:
    code, record, events, _ = _run_and_parse(tmp_path, [], "1M", "all")
    assert code == 0 and record["emulator"]["faults"] == []
    assert set(events["status"]) == {"ok"}


def test_a_fault_the_plan_would_refuse_fails_the_cell_in_the_launcher(tmp_path: Path) -> None:
    # A backend built by hand skips plan()'s checks: the launcher reads the fault with
    # the same rules (model/faults.py) and says why it cannot start.
    cell = Cell(4, "kary:2", 0, (2**20,), ("all",))
    rendered = render_cell(4, "kary:2", [2**20], ["all"], cell.id, RenderOptions())
    with EmulatorBackend(workdir=tmp_path, faults=("kill:x",)) as backend:
        result = backend.run(cell, rendered, timeout=60)
    assert result.rc is None
    assert result.error == (
        "emulator failed to start: error: invalid --emulator-fault 'kill:x': "
        "expected corrupt:RANK or kill:RANK[:LOADS]"
    )
