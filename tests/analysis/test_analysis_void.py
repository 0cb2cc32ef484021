"""Void steps in hand-made logs: how `kary parse` and the runner's verdict read them.

A step whose KARY line says `void` (a failed precondition) is neither a
timing nor a failure: status `void: <reason>`, no time, left out of
summary.csv, counted apart in runs.csv and the parse's meta.  A void step
that also failed on its own is failed.  tests/emulator and tests/flux inject
the real failures (void_checks.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from analysis_samples import run_record, write_cell

from analysis import load_parsed, parse_tree
from analysis.read.records import is_void, void_mask, void_status
from experiments.backends.base import RunResult
from experiments.execution.outcome import judge
from experiments.formats.kary_line import (
    VOID_COLD_CACHE,
    VOID_NO_COLD_RECORD,
    VOID_STILL_CACHED,
    format_kary_line,
    step_void,
)

SIZE = {"size": "16M", "size_bytes": 16777216}
COLD = VOID_COLD_CACHE


def _line(record: dict[str, object]) -> str:
    return format_kary_line(record) + "\n"


def _step(
    event: str, rc: int | None = 0, seconds: float | None = 0.5, void: str | None = None
) -> str:
    record = {"event": event, **SIZE, "seconds": seconds, "rc": rc}
    return _line(record if void is None else {**record, "void": void})


# The cell line, and the cold cache every distribution of 16M needs shown before it.
CELL = _line({"meta": "cell", "cell": "4/kary-2/0", "nodes": 4, "topo": "kary:2"})
CACHED = {"1": 0, "2": 0, "3": 0}
COLD_LINE = _line({"meta": "cold-cache", "size": "16M", "strategy": "all", "cached_blobs": CACHED})
HEAD = CELL + COLD_LINE


def _parse(tmp_path: Path, log: str, iteration: int = 0) -> Path:
    raw = tmp_path / "raw"
    write_cell(raw, f"4/kary-2/{iteration}", log, run_record(4, "kary:2", iteration))
    parse_tree(raw, tmp_path / "parsed", plots=False)
    return tmp_path / "parsed"


def test_step_void_reads_the_field_unless_the_step_failed_on_its_own() -> None:
    step = {"event": "distribute-all-nodes", **SIZE}
    assert step_void({**step, "seconds": 1.0, "rc": 0, "void": COLD}) == COLD
    assert step_void({**step, "seconds": None, "rc": None, "void": COLD}) == COLD
    assert step_void({**step, "seconds": 1.0, "rc": 2, "void": COLD}) is None
    assert step_void({**step, "seconds": 1.0, "rc": 0}) is None
    assert step_void({**step, "seconds": 1.0, "rc": 0, "void": ""}) is None


def test_a_void_step_has_no_time_and_no_summary_row(tmp_path: Path) -> None:
    log = HEAD + _step("create-archive") + _step("distribute-all-nodes", void=COLD)
    log += _step("delete-archive-all-nodes")
    log += _line({"meta": "done", "failed_steps": 0, "failed_preconditions": 1})
    parsed = load_parsed(_parse(tmp_path, log))
    events = parsed.events.set_index("event")
    assert events.loc["distribute-all-nodes", "status"] == f"void: {COLD}"
    assert events.loc["distribute-all-nodes", "reason"] == COLD
    assert events["time_seconds"].isna().to_dict()["distribute-all-nodes"]
    assert list(parsed.summary["event"]) == ["create-archive", "delete-archive-all-nodes"]
    assert set(parsed.summary["failed"]) == {0}
    run = parsed.runs.iloc[0]
    assert (run["steps_ok"], run["steps_failed"]) == (2, 0)
    assert parsed.meta["steps_void"] == 1 and parsed.meta["steps_failed"] == 0
    problems = [p["reason"] for p in parsed.meta["problems"]]
    assert "1 precondition(s) failed: 1 step(s) void, not timed" in problems


def test_a_void_group_beside_timed_ones_leaves_their_statistics_alone(tmp_path: Path) -> None:
    done = _line({"meta": "done", "failed_steps": 0})
    raw = tmp_path / "raw"
    for iteration, void in enumerate([None, None, COLD]):
        log = HEAD + _step("distribute-all-nodes", seconds=1.0 + iteration, void=void) + done
        write_cell(raw, f"4/kary-2/{iteration}", log, run_record(4, "kary:2", iteration))
    parse_tree(raw, tmp_path / "parsed", plots=False)
    (row,) = load_parsed(tmp_path / "parsed").summary.itertuples()
    assert (row.n, row.failed, row.median, row.max) == (2, 0, 1.5, 2.0)


def test_a_void_distribution_whose_copy_is_wrong_is_failed(tmp_path: Path) -> None:
    log = HEAD + _step("distribute-all-nodes", void=COLD)
    log += _step("verify-distribute-all-nodes", rc=1) + _line({"meta": "done", "failed_steps": 1})
    events = load_parsed(_parse(tmp_path, log)).events.set_index("event")
    assert events.loc["distribute-all-nodes", "status"] == "failed"
    assert events.loc["verify-distribute-all-nodes", "status"] == "failed"


def test_a_skipped_step_is_void_in_the_verdict_too() -> None:
    log = HEAD + _step("create-archive", rc=1)
    log += _step("distribute-all-nodes", rc=None, seconds=None, void="archive not created")
    log += _line({"meta": "done", "failed_steps": 1})
    verdict = judge(RunResult(log, rc=1))
    assert verdict.state == "failed"
    assert verdict.error is not None
    assert "1 of 2 steps failed: create-archive 16M (rc 1)" in verdict.error
    assert "1 of 2 steps void: distribute-all-nodes 16M (archive not created)" in verdict.error


def _distribution_status(tmp_path: Path, log: str) -> str:
    events = load_parsed(_parse(tmp_path, log)).events.set_index("event")
    return str(events.loc["distribute-all-nodes", "status"])


def test_a_distribution_is_void_unless_a_cold_cache_line_before_it_shows_every_cache_empty(
    tmp_path: Path,
) -> None:
    done = _line({"meta": "done", "failed_steps": 0})
    timed = _step("distribute-all-nodes", seconds=1.0)
    assert _distribution_status(tmp_path / "a", HEAD + timed + done) == "ok"
    # No cold-cache line at all, or only after the distribution.
    assert (
        _distribution_status(tmp_path / "b", CELL + timed + done) == f"void: {VOID_NO_COLD_RECORD}"
    )
    late = CELL + timed + COLD_LINE + done
    assert _distribution_status(tmp_path / "c", late) == f"void: {VOID_NO_COLD_RECORD}"
    # Rank 3 still cached 2 blobs after the drop: it served them warm.
    warm = {"meta": "cold-cache", "size": "16M", "strategy": "all"}
    still = CELL + _line({**warm, "cached_blobs": {**CACHED, "3": 2}}) + timed + done
    assert _distribution_status(tmp_path / "d", still) == f"void: {VOID_STILL_CACHED}"
    # A record that counts nothing shows nothing.
    blind = CELL + _line({**warm, "cached_blobs": None}) + timed + done
    assert _distribution_status(tmp_path / "e", blind) == f"void: {VOID_STILL_CACHED}"
    # Direct moves no blob through a cache: it needs no cold-cache line.
    direct = CELL + _step("distribute-direct", seconds=1.0) + done
    events = load_parsed(_parse(tmp_path / "f", direct)).events.set_index("event")
    assert events.loc["distribute-direct", "status"] == "ok"


def test_the_void_mask_of_a_table_is_is_void_of_each_status() -> None:
    statuses = ["ok", "failed", void_status("cold cache not established"), "void", "", "voided"]
    odd = [np.nan, None, 3, void_status("x")]
    columns = [
        pd.Series(statuses, dtype="str"),  # as a parsed table's CSV reads
        pd.Series(statuses + odd, dtype=object),
        pd.Series([np.nan, np.nan]),  # a column every row left empty: float
        pd.Series([], dtype="str"),
    ]
    for column in columns:
        mask = void_mask(column)
        assert mask.dtype == bool and list(mask.index) == list(column.index)
        assert mask.tolist() == [is_void(s) for s in column.tolist()], column.tolist()
    assert void_mask(columns[1]).sum() == 2
