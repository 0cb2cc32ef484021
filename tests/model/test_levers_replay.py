"""benchmarks/levers.py --from-json: the levers' tables again from kept samples, no flux.

The committed samples replay to the committed text byte for byte (with the line under
its title that says they were kept before kary recorded what made them), and a small
saved sample replays to tables and derived figures worked out by hand.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results"
MIB = 2**20
KEPT_BEFORE = "template and kary commit not recorded (samples kept before kary recorded them)"


def _replay(path: Path, *extra: str) -> str:
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "levers.py"), "--from-json", str(path), *extra],
        capture_output=True, text=True, check=True, timeout=120,
        env={"PATH": "/nonexistent"},  # no flux on PATH: a replay needs none
    )  # fmt: skip
    return done.stdout


def _summary(median: float, low: float, high: float) -> dict[str, Any]:
    return {"n": 2, "median": median, "min": low, "max": high, "values": [low, high]}


SAMPLE = {
    "flux": "flux",
    "cores": 2,
    "reps": 2,
    "nested_start_s": {"2": _summary(1.0, 0.9, 1.1), "4": _summary(1.6, 1.5, 1.7)},
    "fresh_start_s": {"2": _summary(0.8, 0.8, 0.8), "4": _summary(1.2, 1.1, 1.3)},
    "generate_s": {str(256 * MIB): _summary(0.25, 0.2, 0.3), str(1024 * MIB): _summary(1, 1, 1)},
    "create_s": {str(256 * MIB): _summary(4, 4, 4), str(1024 * MIB): _summary(16, 15, 17)},
    "create_mmap_s": {str(256 * MIB): _summary(2, 2, 2), str(1024 * MIB): _summary(8, 8, 8)},
    "dist_s": {str(256 * MIB): _summary(2, 2, 2), str(1024 * MIB): _summary(8, 8, 8)},
    "dist_mmap_s": {str(256 * MIB): _summary(3, 3, 3), str(1024 * MIB): _summary(12, 12, 12)},
    "wall_seconds": 100.0,
    "busy_share": 0.25,
}


def test_the_kept_samples_replay_to_the_kept_text() -> None:
    kept = (RESULTS / "levers-flux-0.88-2cores.txt").read_text().splitlines()
    out = _replay(RESULTS / "levers-flux-0.88-2cores.json").splitlines()
    # The run's own table, then what the plan derives; the samples say nothing of what
    # made them, and the replay says so under the title rather than make it up.
    assert out[: len(kept) + 1] == [kept[0], KEPT_BEFORE, *kept[1:]]


def test_a_small_sample_replays_to_its_tables_and_derived_figures(tmp_path: Path) -> None:
    saved = tmp_path / "levers.json"
    saved.write_text(json.dumps(SAMPLE))
    assert _replay(saved).splitlines() == [
        "levers on flux-core (2 cores, every broker on this machine); cores busy 25% over "
        "100 s; median (min-max) of n=2 each",
        KEPT_BEFORE,
        "start-up, nodes: nested in an outer instance | a fresh flux start",
        "    2: 1.00 s (0.90-1.10) | 0.80 s (0.80-0.80)",
        "    4: 1.60 s (1.50-1.70) | 1.20 s (1.10-1.30)",
        "per size: generate | create | create --mmap | distribute | distribute (mmap)",
        "  0.25 GiB: 0.25 s (0.20-0.30) | 4.00 s (4.00-4.00) | 2.00 s (2.00-2.00) | "
        "2.00 s (2.00-2.00) | 3.00 s (3.00-3.00)",
        "  1.00 GiB: 1.00 s (1.00-1.00) | 16.00 s (15.00-17.00) | 8.00 s (8.00-8.00) | "
        "8.00 s (8.00-8.00) | 12.00 s (12.00-12.00)",
        "",
        "derived (experiments/estimate/layouts.py), medians:",
        "  nested start-up fitted as 0.40 s + 0.300 s per node over 2, 4 nodes (n=2 each); "
        "every median within 0% of the fit",
        "  --mmap, with / without over 2 sizes (median; range over every pairing of runs): "
        "create x0.50 (0.47-0.53), distribute x1.50 (1.50-1.50)",
        "  create + distribute, with / without --mmap: x0.83 at 256 MiB, x0.83 at 1 GiB",
        "  generate: 1.00 s per GiB (median over sizes)",
    ]
    assert _replay(saved, "--markdown").splitlines()[1:] == [
        KEPT_BEFORE,
        "",
        "| | 2 nodes | 4 |",
        "|---|---|---|",
        "| nested instance start-up (`flux batch -N n --wrap true` to the end of "
        "`flux job attach`) | 1.00 s (0.90-1.10) | 1.60 (1.50-1.70) |",
        "| a fresh `flux start --test-size=n true` | 0.80 (0.80-0.80) | 1.20 (1.10-1.30) |",
        "",
        "| per size | generate | create | create `--mmap` | distribute | "
        "distribute after `--mmap` |",
        "|---|---|---|---|---|---|",
        "| 256 MiB | 0.25 s | 4.00 s | 2.00 s | 2.00 s | 3.00 s |",
        "| 1 GiB | 1.00 s | 16.00 s | 8.00 s | 8.00 s | 12.00 s |",
    ]


def test_samples_that_kept_what_made_them_say_it_under_the_title(tmp_path: Path) -> None:
    made = {
        "template_hash": "a727ad31466fe48a",
        "kary_commit": "0123456789ab",
        "started": "2026-11-26T20:00:00+00:00",
        "finished": "2026-11-26T20:06:00+00:00",
    }
    saved = tmp_path / "levers.json"
    saved.write_text(json.dumps({**SAMPLE, "made": made}))
    line = (
        "made by template a727ad31466fe48a, kary commit 0123456789ab, "
        "2026-11-26T20:00:00+00:00 to 2026-11-26T20:06:00+00:00"
    )
    assert _replay(saved).splitlines()[1] == line
    assert _replay(saved, "--markdown").splitlines()[1] == line
