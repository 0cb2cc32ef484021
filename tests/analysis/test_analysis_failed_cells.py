"""A cell whose run.json says it did not succeed gives no timing (issue 42, item 1).

Four kary:2 cells, one recorded `failed` by the runner (Flux built another tree
than kary:2, so its times are another topology's): its steps are void with the
cell's reason, so summary.csv, the model's history and compare never time them,
and `kary parse` counts the cell.  A seed log has no run.json and parses as before.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from analysis_samples import kary_log, legacy_log, run_record, write_cell
from typer.testing import CliRunner

from analysis import load_parsed, parse_tree
from experiments.cli import app
from experiments.estimate.history import load_sweep
from experiments.model.topology import build_tree, render_overlay

runner = CliRunner()
MISMATCH = "the printed overlay is kary:1, not kary:2 on 4 nodes"


def _four_cells(raw: Path, state: str = "failed") -> Path:
    """kary:2 on 4 nodes, iterations 0-2 at 1 s per 16 MiB, iteration 3 at 9 s on a
    kary:1 overlay, recorded `state`."""
    for it in range(3):
        log = kary_log(4, "kary:2", it, sizes=("16M",), seconds=1.0)
        write_cell(raw, f"4/kary-2/{it}", log, run_record(4, "kary:2", it))
    wrong_tree = kary_log(4, "kary:2", 3, sizes=("16M",), seconds=9.0).replace(
        render_overlay(build_tree("kary:2", 4)), render_overlay(build_tree("kary:1", 4))
    )
    record = run_record(4, "kary:2", 3, state=state, error=MISMATCH)
    write_cell(raw, "4/kary-2/3", wrong_tree, record)
    return raw


def test_a_failed_cell_gives_no_timing_and_parse_counts_it(tmp_path: Path) -> None:
    raw, out = _four_cells(tmp_path / "raw"), tmp_path / "parsed"
    result = runner.invoke(app, ["parse", "--data", str(raw), "--out", str(out), "--no-plots"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "parsed 4 logs in 4 cells: 24 steps (0 failed, 6 void); 1 cell not succeeded "
        f"(1 failed): no timing from it; wrote {out}"
    ]
    parsed = load_parsed(out)
    events = parsed.events
    bad = events[events["iteration"] == 3]
    assert bad["time_seconds"].isna().all()
    assert set(bad["status"]) == {f"void: cell failed: {MISMATCH}"}
    summary = parsed.summary.set_index("event")
    distribute = summary.loc["distribute-all-nodes"]
    assert (distribute["n"], distribute["failed"]) == (3, 0)
    assert distribute["median"] == pytest.approx(2.0)  # the three good cells' time, not 18 s
    runs = parsed.runs.set_index("iteration")
    assert (runs.loc[3, "state"], runs.loc[3, "steps_ok"]) == ("failed", 0)


@pytest.mark.parametrize("state", ["timeout", "interrupted", "preempted", "running"])
def test_no_state_but_succeeded_is_timed(tmp_path: Path, state: str) -> None:
    raw = _four_cells(tmp_path / "raw", state)
    parse_tree(raw, tmp_path / "parsed", plots=False)
    events = load_parsed(tmp_path / "parsed").events
    bad = events[events["iteration"] == 3]
    assert len(bad) == 6 and bad["time_seconds"].isna().all()
    assert set(bad["status"]) == {f"void: cell {state}: {MISMATCH}"}


def test_the_time_model_never_learns_from_a_failed_cell(tmp_path: Path) -> None:
    parse_tree(_four_cells(tmp_path / "raw"), tmp_path / "parsed", plots=False)
    sweep = load_sweep(tmp_path / "parsed")
    seconds = {cell.cell.iteration: dict(cell.seconds) for cell in sweep.cells}
    assert sorted(seconds) == [0, 1, 2, 3]
    assert seconds[3] == {}
    assert all(len(seconds[it]) == 6 for it in range(3))


def test_a_failed_step_of_a_failed_cell_keeps_its_own_reason(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    log = kary_log(4, "kary:2", 0, sizes=("16M",), rc={"distribute-all-nodes-16M": 1})
    write_cell(raw, "4/kary-2/0", log, run_record(4, "kary:2", 0, state="failed", error="x"))
    parse_tree(raw, tmp_path / "parsed", plots=False)
    events = load_parsed(tmp_path / "parsed").events.set_index("event")
    assert events.loc["distribute-all-nodes", "status"] == "failed"
    assert events.loc["create-archive", "status"] == "void: cell failed: x"


def test_a_seed_log_without_run_json_parses_as_before(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    write_cell(raw, "4/kary-2/0", legacy_log(4, "kary:2"))
    parse_tree(raw, tmp_path / "parsed", plots=False)
    events = load_parsed(tmp_path / "parsed").events
    assert (events["status"] == "ok").all()
    assert pd.notna(events["time_seconds"]).all()
