"""Stop a race that its budget cannot decide: conditional power at the last block.

A race ends when the survivors are separated or shown to tie.  Where two of them
are so close that neither can happen within `max_blocks` (a pair a few percent
apart, at the spread seen, inside the zone's edge), running on spends the whole
budget only to say "not separated".  Group-sequential designs stop such a trial
early for futility (stochastic curtailment: Lan, Simon and Halperin, 1982;
Jennison and Turnbull, *Group Sequential Methods*, 2000, ch. 10): if the trend
seen so far held, how likely is the last look to decide?

For each survivor X against the leader, with the size-weighted paired log
difference seen so far (theta, its standard error se after n blocks, so a
block's spread s = se sqrt(n)) and N = `max_blocks`:

- the estimate after N blocks is theta plus the future blocks' noise: normal,
  mean theta, standard deviation s sqrt(N - n) / N (the trend held, the spread
  as seen);
- X is dropped at block N if the estimate passes the zone's margin by z(1 -
  a / (k (k - 1))) standard errors s / sqrt(N), a being the level the last look
  gets (sequential.py; decide.py's drop test, its first Holm step);
- it is shown within the zone of the leader at block N if its estimate plus
  z(1 - a) standard errors stays inside the margin (TOST).

The chance of either is the survivor's conditional power.  When some survivor's is
below `rules.futility`, the lane cannot end by itself within its budget (a winner
needs every rival dropped, a tie every rival within the zone): the race stops
there, "not separated", and says which pair and how likely it was.  A survivor
faster than the leader at some timed size (decide.HOLD_HINT) is left out: its
answer may be "the best differs by size".  The normal approximation
stands in for the t-tests: it is a projection, not a test, and never a claim,
so it spends no error; the replays (benchmarks/race_replay.py) hold what it
costs in answers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from experiments.race.pairs import estimate_pairs, pooled_variance
from experiments.race.rules import RaceRules
from experiments.race.sequential import spending

__all__ = ["FUTILITY_FROM", "conditional_power", "futility_reason"]

# Futility is judged from this many complete blocks on: a projection from fewer
# (a spread from 2 or 3 blocks) stopped races that went on to decide.
FUTILITY_FROM = 5


def conditional_power(
    theta: float, se: float, blocks: int, survivors: int, rules: RaceRules
) -> float:
    """The chance that `max_blocks` blocks drop this survivor or show it within the zone,
    if its size-weighted difference `theta` (standard error `se` after `blocks` blocks)
    holds its mean and spread."""
    from statistics import NormalDist

    last = rules.max_blocks
    if blocks < 2 or blocks >= last:
        return 1.0  # nothing to project from, or the budget ends at this look anyway
    if se == 0.0 or not math.isfinite(se):
        return 1.0  # the tests decide a spread-free pair themselves
    normal = NormalDist()
    spread = se * math.sqrt(blocks)  # one block's
    standard_error = spread / math.sqrt(last)  # of the estimate after `last` blocks
    future = spread * math.sqrt(last - blocks) / last  # how far the future blocks move it
    final = spending(rules.alpha, 1.0) - spending(rules.alpha, (last - 1) / last)
    k = max(2, survivors)
    to_drop = rules.margin + normal.inv_cdf(1 - final / (k * (k - 1))) * standard_error
    drop = normal.cdf((theta - to_drop) / future)
    inside = rules.margin - normal.inv_cdf(1 - final) * standard_error
    tie = 0.0
    if inside > 0:
        tie = normal.cdf((inside - theta) / future) - normal.cdf((-inside - theta) / future)
    return min(1.0, drop + tie)


def futility_reason(
    logs: Any,
    leader: int,
    candidates: Sequence[str],
    rest: Sequence[Any],
    rules: RaceRules,
    sizes: Sequence[int] | None,
    blocks: int,
) -> str | None:
    """Why the lane stops for futility, or None: the survivor (of `rest`, the undropped
    comparisons) least likely to be decided, when its chance is below `rules.futility`.
    `sizes` (one per block) only across sizes."""
    if rules.futility <= 0 or not rest or blocks < FUTILITY_FROM:
        return None
    index = {name: j for j, name in enumerate(candidates)}
    judged = [c for c in rest if not c.faster_at_a_size]
    if not judged:
        return None
    diffs = logs[:, [index[c.candidate] for c in judged]] - logs[:, [leader]]
    columns = [leader] + [index[c.candidate] for c in rest]
    estimates = estimate_pairs(diffs, sizes, pooled_variance(logs[:, columns], sizes))
    chances = [
        (conditional_power(float(t), float(s), blocks, len(rest) + 1, rules), c)
        for t, s, c in zip(estimates.theta, estimates.se, judged, strict=True)
    ]
    chance, hardest = min(chances, key=lambda item: item[0])
    if chance >= rules.futility:
        return None
    return (
        f"{hardest.candidate} and {candidates[leader]} (ratio {hardest.ratio:.3g}) have a "
        f"{chance:.0%} chance of being separated or shown within {rules.zone:.0%} by block "
        f"{rules.max_blocks} at the spread seen (below {rules.futility:.0%}: stopped early)"
    )
