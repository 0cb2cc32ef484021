"""The race's settings and the names of its modes and outcomes (no statistics here)."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "ACROSS",
    "BY_SIZE",
    "CONTINUE",
    "MODES",
    "PER_SIZE",
    "TIE",
    "WINNER",
    "RaceRules",
    "uniform_runs_a_side",
]

ACROSS = "across-sizes"
PER_SIZE = "per-size"
MODES = (ACROSS, PER_SIZE)

CONTINUE = "continue"
WINNER = "winner"
TIE = "tie"
BY_SIZE = "differs-by-size"


@dataclass(frozen=True)
class RaceRules:
    """The race's own settings: what a decision needs."""

    confidence: float = 0.95
    zone: float = 0.05  # relative: topologies closer than this are a tie
    # The first look (irace's firstTest is 5): chosen on the replays' tuning seeds,
    # where 3 (futility judged from block 5 on) cost less than 5 in every scenario and
    # answered right as often (benchmarks/race_replay.py; docs/racing.md).
    first_test: int = 3
    max_blocks: int = 20
    # Stop early, "not separated", when a survivor's chance of being decided by
    # max_blocks falls below this (futility.py); 0 runs every lane to its budget.
    futility: float = 0.05

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence

    @property
    def margin(self) -> float:
        """The zone on the log scale: |ln(t_a / t_b)| below it is a tie."""
        return math.log1p(self.zone)


def uniform_runs_a_side(candidates: int, confidence: float) -> int:
    """The fewest runs a side with which Mann-Whitney (exact, two-sided) can reach
    1 - confidence against each of the other candidates, Holm-corrected (its
    smallest p is 2 / C(2n, n); Holm's first step divides alpha by k - 1)."""
    alpha = (1 - confidence) / max(1, candidates - 1)
    runs = 2
    while 2 / math.comb(2 * runs, runs) >= alpha:
        runs += 1
    return runs
