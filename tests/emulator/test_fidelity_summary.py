"""benchmarks/fidelity.py's summary line: the median ratio (emulator / real) over cells, and
real Flux's seconds per GiB per receiving rank, from the kept samples."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from benchmark_scripts import load_benchmark

REPO = Path(__file__).resolve().parents[2]


def _fidelity() -> ModuleType:
    return load_benchmark("fidelity")


def test_the_summary_line_is_the_median_over_cells_and_the_seconds_per_gib_per_rank() -> None:
    # 8 brokers, 64M: 7 receiving ranks x 1/16 GiB = 0.4375 GiB moved per distribution.
    data = {
        "flux_version": "0.88.0",
        "sizes": ["64M"],
        "nodes": [8],
        "cells": [[8, "kary:1"], [8, "kary:2"], [8, "kary:7"]],
        "iters": 3,
        "seconds": 1.0,
        "samples": {
            "flux": {
                "8|kary:1|64M": [2.1, 2.0, 9.0],
                "8|kary:2|64M": [4.0] * 3,
                "8|kary:7|64M": [],
            },
            "local": {"8|kary:1|64M": [3.0] * 3, "8|kary:2|64M": [4.0, 4.4, 5.0]},
        },
    }
    lines = _fidelity().table(data).splitlines()
    # Ratios 1.43 (3.0 / 2.1) and 1.10 (4.4 / 4.0); kary:7 has no samples, so no ratio.
    assert lines[-1] == (
        "median ratio (emulator / real) 1.26 over 2 cells (1.10-1.43); real Flux 6.97 s per GiB "
        "per receiving rank (median over 2 cells, 4.80-9.14)"
    )
