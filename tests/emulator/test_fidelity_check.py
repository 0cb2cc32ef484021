"""benchmarks/fidelity.py's verdicts can fail: a cell off by more than x1.5, or a
winner real Flux names and the emulator does not; a tie names no winner at all."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmark_scripts import load_benchmark

from experiments.formats.kary_line import format_kary_line

REPO = Path(__file__).resolve().parents[2]


def _fidelity() -> ModuleType:
    return load_benchmark("fidelity")


def _data(real: dict[str, list[float]], emulated: dict[str, list[float]]) -> dict[str, Any]:
    return {
        "flux_version": "0.88.0",
        "sizes": ["64M"],
        "nodes": [8],
        "cells": [[8, topo] for topo in real],
        "iters": len(next(iter(real.values()))),
        "seconds": 1.0,
        "samples": {
            "flux": {f"8|{t}|64M": v for t, v in real.items()},
            "local": {f"8|{t}|64M": v for t, v in emulated.items()},
        },
    }


REAL = {"kary:1": [2.0, 2.1, 2.05, 2.02], "kary:7": [4.0, 4.2, 4.1, 4.05]}


def test_a_calibrated_emulator_passes_and_a_miscalibrated_one_fails(tmp_path: Path) -> None:
    fidelity = _fidelity()
    calibrated = _data(REAL, {"kary:1": [2.2] * 4, "kary:7": [4.4] * 4})
    text = fidelity.table(calibrated)
    assert calibrated["failures"] == 0
    assert "| 8 | 64M | kary:1 | kary:1 | yes |" in text
    slow = _data(REAL, {"kary:1": [4.0] * 4, "kary:7": [8.5] * 4})
    fidelity.table(slow)
    assert slow["failures"] == 2  # both cells x2
    wrong_winner = _data(REAL, {"kary:1": [2.9] * 4, "kary:7": [2.8] * 4})
    assert "| 8 | 64M | kary:1 | kary:7 | NO |" in fidelity.table(wrong_winner)
    assert wrong_winner["failures"] == 1  # kary:7 is x0.68, inside; the winner is wrong
    # The command's exit status says so.
    for data, status in ((calibrated, 0), (slow, 1)):
        saved = tmp_path / "samples.json"
        saved.write_text(json.dumps({k: v for k, v in data.items() if k != "failures"}))
        script = [sys.executable, str(REPO / "benchmarks" / "fidelity.py")]
        done = subprocess.run([*script, "--from-json", str(saved)], capture_output=True)
        assert done.returncode == status, done.stdout


def test_where_real_flux_ties_there_is_no_winner_to_agree_on() -> None:
    fidelity = _fidelity()
    tied = {"kary:1": [2.0, 2.3, 2.1, 2.2], "kary:7": [2.1, 2.05, 2.25, 2.15]}
    data = _data(tied, {"kary:1": [2.5] * 4, "kary:7": [2.0] * 4})
    text = fidelity.table(data)
    assert "no winner to agree on" in text
    assert "same fastest topology: 0 of 0 where real Flux has one (1 without a winner)" in text
    assert data["failures"] == 0


def test_an_emulator_that_cannot_separate_real_fluxs_winner_does_not_agree() -> None:
    fidelity = _fidelity()
    # Each cell within x1.5, but the emulator's two topologies interleave: it names none.
    tied = {"kary:1": [2.9, 3.0, 2.8, 3.1], "kary:7": [2.95, 3.05, 2.85, 3.15]}
    data = _data(REAL, tied)
    text = fidelity.table(data)
    assert "| 8 | 64M | kary:1 | none (kary:1 and kary:7 tie: p = 0.69) | NO |" in text
    assert "same fastest topology: 0 of 1 where real Flux has one (0 without a winner)" in text
    assert data["failures"] == 1


def _log(*records: dict[str, Any]) -> str:
    return "\n".join(format_kary_line(r) for r in records) + "\n"


def _step(event: str, size: str, seconds: float, **extra: Any) -> dict[str, Any]:
    return {
        "event": event,
        "size": size,
        "size_bytes": 1 << 20,
        "seconds": seconds,
        "rc": 0,
        **extra,
    }


def _cold(size: str, **cached: int) -> dict[str, Any]:
    counts = {"1": 0, "2": 0, **cached}
    return {"meta": "cold-cache", "size": size, "strategy": "all", "cached_blobs": counts}


def test_a_void_step_or_an_unshown_cold_cache_is_no_sample() -> None:
    samples = _fidelity().distribution_samples
    # Measured and sound: a cold-cache record with every rank's cache empty, then the time.
    log = _log(_cold("1M"), _step("distribute-all-nodes", "1M", 1.5))
    assert samples(log) == {"1M": 1.5}
    # A void step keeps its time in the log; it is no sample (rc 0 and a time, all the same).
    void = _step("distribute-all-nodes", "1M", 0.2, void="cold cache not established")
    assert samples(_log(_cold("1M"), void)) == {}
    # Rank 2 still cached 3 blobs after the drop: a warm distribution, no sample.
    assert samples(_log(_cold("1M", **{"2": 3}), _step("distribute-all-nodes", "1M", 0.3))) == {}
    # No cold-cache record before the distribution (one after it does not count).
    late = _log(_step("distribute-all-nodes", "1M", 0.3), _cold("1M"))
    assert samples(late) == {}
    # Another size's record is not this size's.
    assert samples(_log(_cold("2M"), _step("distribute-all-nodes", "1M", 0.3))) == {}
    # A failed verify of the size spoils its distribution too.
    bad_verify = _step("verify-distribute-all-nodes", "1M", 0.1, rc=1)
    assert samples(_log(_cold("1M"), _step("distribute-all-nodes", "1M", 1.5), bad_verify)) == {}
