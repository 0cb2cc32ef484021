"""benchmarks/blob_kinds.py's table: what made its samples is said, and samples of two
templates or kary commits are never one table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import blob_kinds  # noqa: E402
from provenance import MixedRuns  # noqa: E402


def _row(seconds: float, template: str = "a727ad31466fe48a", commit: str | None = None) -> dict:
    return {
        "seconds": seconds,
        "chunks": 1 if seconds < 10 else 256,
        "store_objects_added": 4 if seconds < 10 else 259,
        "rank0_sent_bytes": 2e6 if seconds < 10 else 540e6,
        "all_links_sent_bytes": 9e6 if seconds < 10 else 2000e6,
        "template_hash": template,
        "kary_commit": commit,
        "started": f"2026-11-26T18:{int(seconds):02d}:00+00:00",
    }


def _data(zeros: list[dict], random: list[dict]) -> dict[str, Any]:
    return {
        "flux_version": "0.88.0",
        "topo": "kary:2",
        "size": "256M",
        "nodes": [8],
        "speeds": ["100Mbit"],
        "runs": 4,
        "samples": {"100Mbit": {"8": {"zeros": zeros, "random": random}}},
        "wall_seconds": 600.0,
        "busy_share": 0.4,
        "others_share": 0.1,
    }


def test_the_table_says_what_made_its_samples_and_the_verdict() -> None:
    data = _data([_row(s) for s in (2.0, 2.1, 2.2, 2.3)], [_row(s) for s in (40, 41, 42, 43)])
    text = blob_kinds.table(data)
    assert (
        "made by template a727ad31466fe48a, kary commit not recorded, runs started "
        "2026-11-26T18:02:00+00:00 to 2026-11-26T18:43:00+00:00"
    ) in text
    assert "| zeros | 1 | 1 | 4 | 2.15 | 2.08-2.23 | 4 | 2 | 9 |" in text
    assert "| random | 256 | 256 | 259 | 41.50 | 40.75-42.25 | 4 | 540 | 2,000 |" in text
    assert "zeros vs random: p = 0.029 (n 4/4): zeros faster; random / zeros medians 19.3x" in text


def test_samples_of_two_templates_are_refused(tmp_path: Path) -> None:
    data = _data([_row(2.0), _row(2.1, template="34a26727090491be")], [_row(40)])
    with pytest.raises(MixedRuns, match="2 template hashes"):
        blob_kinds.table(data)
    saved = tmp_path / "mixed.json"
    saved.write_text(json.dumps(data))
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/blob_kinds.py"), "--from-json", str(saved)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "blob_kinds.py: refused: the runs come from 2 template hashes "
        "(34a26727090491be: 100Mbit N=8 zeros; "
        "a727ad31466fe48a: 100Mbit N=8 zeros, 100Mbit N=8 random)"
    ]


def test_samples_that_recorded_their_finish_span_first_start_to_last_finish() -> None:
    zeros = [{**_row(s), "finished": f"2026-11-26T19:{int(s):02d}:30+00:00"} for s in (2, 3)]
    random = [{**_row(40), "finished": "2026-11-26T19:50:00+00:00"}]
    assert blob_kinds.provenance(_data(zeros, random)) == (
        "made by template a727ad31466fe48a, kary commit not recorded, "
        "2026-11-26T18:02:00+00:00 to 2026-11-26T19:50:00+00:00"
    )


def test_samples_of_two_kary_commits_are_refused() -> None:
    data = _data([_row(2.0, commit="fee4dc3aaaaa")], [_row(40, commit="9ff69fbbbbbb")])
    with pytest.raises(MixedRuns, match="2 kary commits"):
        blob_kinds.table(data)
