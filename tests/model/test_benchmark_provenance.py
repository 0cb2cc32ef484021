"""benchmarks/provenance.py: the one "made by" line of a benchmark's runs, and the refusal
of runs from more than one template hash or recorded kary commit."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

from provenance import (  # noqa: E402
    KEPT_BEFORE,
    Made,
    MixedRuns,
    check_one_source,
    describe,
    made_by,
    summarize,
)

T1, T2 = "34a26727090491be", "a727ad31466fe48a"


def _run(
    template: str | None = T1, commit: str | None = None, minute: int = 0, done: bool = True
) -> Made:
    return Made(
        template,
        commit,
        f"2026-11-25T03:{minute:02d}:00+00:00",
        f"2026-11-25T03:{minute:02d}:30+00:00" if done else None,
    )


def test_runs_of_one_template_make_one_line_from_first_start_to_last_finish() -> None:
    runs = [_run(minute=5), _run(minute=1), _run(minute=9)]
    assert made_by({"box 100Mbit": runs}) == (
        f"made by template {T1}, kary commit not recorded, "
        "2026-11-25T03:01:00+00:00 to 2026-11-25T03:09:30+00:00"
    )


def test_runs_of_two_templates_are_refused_naming_each_and_where_it_ran() -> None:
    groups = {"50Mbit": [_run()], "100Mbit": [_run(), _run(T2)]}
    with pytest.raises(MixedRuns) as refused:
        made_by(groups)
    assert str(refused.value) == (
        f"the runs come from 2 template hashes ({T1}: 50Mbit, 100Mbit; {T2}: 100Mbit)"
    )
    # Within one group too: it is every run that counts, not each group's first.
    with pytest.raises(MixedRuns, match="2 template hashes"):
        made_by({"one": [_run(), _run(T2)]})


def test_one_recorded_commit_is_named_and_two_are_refused() -> None:
    one = made_by({"a": [_run(commit="0123456789ab"), _run(commit="0123456789ab")]})
    assert ", kary commit 0123456789ab, " in one
    some = made_by({"a": [_run(commit="0123456789ab"), _run(commit=None)]})
    assert ", kary commit 0123456789ab (some runs did not record one), " in some
    with pytest.raises(MixedRuns) as refused:
        made_by({"a": [_run(commit="0123456789ab")], "b": [_run(commit="0123456789ab-dirty")]})
    assert str(refused.value) == (
        "the runs come from 2 kary commits (0123456789ab: a; 0123456789ab-dirty: b)"
    )


def test_both_kinds_of_mixing_are_said_in_one_refusal() -> None:
    with pytest.raises(MixedRuns) as refused:
        made_by({"a": [_run(commit="aaaaaaaaaaaa")], "b": [_run(T2, commit="bbbbbbbbbbbb")]})
    assert str(refused.value) == (
        f"the runs come from 2 template hashes ({T1}: a; {T2}: b); "
        "the runs come from 2 kary commits (aaaaaaaaaaaa: a; bbbbbbbbbbbb: b)"
    )


def test_what_no_run_recorded_is_not_recorded_and_never_a_second_value() -> None:
    line = made_by({"a": [Made(), Made()], "b": [Made(T1)]})
    assert line == (
        f"made by template {T1} (some runs did not record one), kary commit not recorded, "
        "time not recorded"
    )
    assert made_by({"a": [Made()]}) == (
        "made by template not recorded, kary commit not recorded, time not recorded"
    )
    assert KEPT_BEFORE == (
        "template and kary commit not recorded (samples kept before kary recorded them)"
    )


def test_runs_that_recorded_only_their_start_span_first_to_last_start() -> None:
    made = summarize([_run(minute=7, done=False), _run(minute=2, done=False)])
    assert made["finished"] is None and made["last_started"] == "2026-11-25T03:07:00+00:00"
    assert describe(made).endswith(
        "runs started 2026-11-25T03:02:00+00:00 to 2026-11-25T03:07:00+00:00"
    )


def test_a_runs_table_row_reads_its_cells_and_takes_nan_for_none() -> None:
    row = {"template_hash": T1, "kary_commit": math.nan, "started": "s", "finished": ""}
    assert Made.of(row) == Made(T1, None, "s", None)


def test_kept_summaries_are_checked_and_an_unknown_group_is_no_value() -> None:
    kept = summarize([_run(commit="0123456789ab")])
    assert kept == {
        "runs": 1,
        "template_hash": [T1],
        "kary_commit": ["0123456789ab"],
        "started": "2026-11-25T03:00:00+00:00",
        "finished": "2026-11-25T03:00:30+00:00",
    }
    check_one_source({"box 50Mbit": kept, "emulator 50Mbit": None})
    with pytest.raises(MixedRuns, match=f"{T1}: box 50Mbit; {T2}: box 100Mbit"):
        check_one_source({"box 50Mbit": kept, "box 100Mbit": summarize([_run(T2)])})
