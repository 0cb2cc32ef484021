"""The time model on real flux-core sweeps kept in the repository: N <= 16 predicts 24 and 30.

benchmarks/results/model-sweeps/ holds two passes of benchmarks/model_sweeps.py
(N 4-30, kary:1/2/4/8 and flat, 16M+64M, 2 iterations) run on a shared 2-core
machine at load averages of 4-26: the tables only, no timing runs here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.estimate.history import Sweep, load_sweep
from experiments.estimate.model_check import check_sweeps, predict_sweep

STORED = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "model-sweeps"
# Passes 1 and 2; pass-3 is the protocol's predicted set (benchmarks/model_holdout_protocol.json).
SWEEPS = sorted(STORED.glob("pass-[12]/parsed-*"))


def _nodes(folder: Path) -> int:
    return int(folder.name.removeprefix("parsed-"))


@pytest.fixture(scope="module")
def sweeps() -> dict[Path, Sweep]:
    assert len(SWEEPS) == 12, f"expected two passes of six sweeps in {STORED}"
    return {folder: load_sweep(folder) for folder in SWEEPS}


def test_24_and_30_nodes_fall_inside_a_prediction_from_16_or_fewer(
    sweeps: dict[Path, Sweep],
) -> None:
    history = [s for f, s in sweeps.items() if _nodes(f) <= 16]
    held = {f: s for f, s in sweeps.items() if _nodes(f) > 16}
    assert len(held) == 4
    for folder, sweep in held.items():
        row = predict_sweep(sweep, history)
        assert row.compared == "wall"
        assert row.inside, (folder, row.low, row.actual, row.high)
        assert row.extrapolated[0] == f"{_nodes(folder)} nodes, history has 4-16"
        assert abs(row.error) < 0.25


def test_leaving_each_local_sweep_out_keeps_most_inside_narrow_intervals(
    sweeps: dict[Path, Sweep],
) -> None:
    rows = check_sweeps(list(sweeps.values()))
    inside = sum(r.inside for r in rows)
    assert inside >= 0.75 * len(rows)
    assert all(r.width < 2 for r in rows if not r.extrapolated)
