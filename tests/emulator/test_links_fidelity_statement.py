"""The statement every emulated cell on shaped links carries (LINKS_FIDELITY) says what
the committed box samples it cites say: its ratio range, how many cells fall within
x1.5, and that the box names no winner to agree on.  Re-run the N=16 sweep and this
fails until the statement follows."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np

from analysis.tables.stats import find_winner, rank_test
from experiments.emulator import LINKS_FIDELITY

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "benchmarks" / "results" / "box-topologies-n16.json"


def test_the_shaped_links_statement_is_what_its_samples_say() -> None:
    data = json.loads(SAMPLES.read_text())
    assert f"benchmarks/results/{SAMPLES.name}" in LINKS_FIDELITY
    ((speed, emulated),) = data["emulator"].items()
    box = data["box"][speed]
    ratios = {
        topo: statistics.median(emulated[topo]) / statistics.median(box[topo]) for topo in box
    }
    low, high = min(ratios.values()), max(ratios.values())
    within = sum(1 / 1.5 <= r <= 1.5 for r in ratios.values())
    assert f"{low:.2f}-{high:.2f}x of the box's time" in LINKS_FIDELITY
    assert f"within x1.5 in {within} of {len(ratios)} cells" in LINKS_FIDELITY
    slowest = min(ratios, key=lambda topo: ratios[topo])
    assert f"({slowest} {ratios[slowest]:.2f}x" in LINKS_FIDELITY
    assert find_winner(box).name is None  # the statement says there is none to agree on
    test = rank_test(np.array(box["kary:1"]), np.array(box["kary:2"]))
    assert test is not None
    assert f"kary:1 and kary:2 tie, p = {test.p:.2f}" in LINKS_FIDELITY
