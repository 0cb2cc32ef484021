"""The runner's verdict and `kary parse` read KARY lines alike (experiments.formats.kary_line).

In-process, on hand-made logs; tests/runner/test_seam_backends.py does the same
through real backends.

Before they had a parser each: a step with rc 0 but no seconds, and a
tab-separated line with rc 3, left run.json `succeeded` while parse found two
failed steps.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analysis"))
from analysis_samples import run_record, write_cell

from analysis import load_parsed, parse_tree
from experiments.backends.base import RunResult
from experiments.execution.outcome import judge
from experiments.formats.kary_line import format_kary_line

STEP = {"size": "16M", "size_bytes": 16777216}


def _line(record: dict[str, object], blank: str = " ") -> str:
    """The line the template would print, with `blank` after KARY."""
    return format_kary_line(record).replace("KARY ", f"KARY{blank}", 1) + "\n"


HEAD = _line({"meta": "cell", "cell": "4/kary-2/0", "nodes": 4, "topo": "kary:2"})
OK = _line({"event": "create-archive", **STEP, "seconds": 0.5, "rc": 0})
DONE = _line({"meta": "done", "failed_steps": 0})
DISTRIBUTE = {"event": "distribute-all-nodes", **STEP}
TRICKY = {
    "rc 0 but no seconds": _line({**DISTRIBUTE, "rc": 0}),
    "tab-separated, rc 3": _line({**DISTRIBUTE, "seconds": 1.0, "rc": 3}, blank="\t"),
    "negative time": _line({**DISTRIBUTE, "seconds": -1, "rc": 0}),
    "rc as text": _line({**DISTRIBUTE, "seconds": 1.0, "rc": "0"}),
}


def _parsed_failures(tmp_path: Path, log: str) -> int:
    raw = tmp_path / "raw"
    write_cell(raw, "4/kary-2/0", log, run_record(4, "kary:2", 0))
    parse_tree(raw, tmp_path / "parsed", plots=False)
    events = load_parsed(tmp_path / "parsed").events
    return int((events["status"] == "failed").sum())


@pytest.mark.parametrize("case", sorted(TRICKY))
def test_a_step_that_is_no_timing_fails_the_cell_and_its_parsed_row(
    tmp_path: Path, case: str
) -> None:
    log = HEAD + OK + TRICKY[case] + DONE
    verdict = judge(RunResult(log, rc=0))
    assert verdict.state == "failed", verdict
    assert (
        verdict.error is not None
        and "1 of 2 steps failed: distribute-all-nodes 16M" in verdict.error
    )
    assert _parsed_failures(tmp_path, log) == 1


def test_a_clean_log_succeeds_in_both(tmp_path: Path) -> None:
    log = HEAD + OK + DONE
    assert judge(RunResult(log, rc=0)).state == "succeeded"
    assert _parsed_failures(tmp_path, log) == 0


def test_a_log_without_its_done_line_is_not_a_success_in_either(tmp_path: Path) -> None:
    log = HEAD + OK
    verdict = judge(RunResult(log, rc=0))
    assert verdict.state == "failed" and "no KARY done line" in str(verdict.error)
    raw = tmp_path / "raw"
    write_cell(raw, "4/kary-2/0", log, run_record(4, "kary:2", 0))
    parse_tree(raw, tmp_path / "parsed", plots=False)
    runs = load_parsed(tmp_path / "parsed").runs
    assert not bool(runs["complete"].iloc[0])
    assert json.loads(json.dumps(verdict.log.steps))[0]["event"] == "create-archive"
