"""Stop a race that its budget cannot decide: conditional power at the last block.

A race ends when the survivors are separated or shown to tie.  Where two of them
are so close that neither can happen within `max_blocks` (a pair a few percent
apart, at the spread seen, inside the zone's edge), running on spends the whole
budget only to say "not separated".  Group-sequential designs stop such a trial
early for futility (stochastic curtailment: Lan, Simon and Halperin, 1982;
Jennison and Turnbull, *Group Sequential Methods*, 2000, ch. 10): if the trend
seen so far held, how likely is the last look to decide?

For each survivor against the best, with the paired log-time differences seen so
far (mean d, spread s, n blocks) and N = `max_blocks`:

- the mean after N blocks is d plus the future blocks' noise: normal, mean d,
  standard deviation s * sqrt(N - n) / N (the trend held, the spread as seen);
- the survivor is dropped at block N if |mean| passes z(1 - alpha / 2m) standard
  errors s / sqrt(N) (m comparisons with the best: Holm's first, strictest step);
- it ties at block N if |mean| plus z(1 - alpha / m) standard errors stays inside
  the zone's margin (TOST, Holm's first step).

The chance of either is the survivor's conditional power.  When some survivor's is
below `rules.futility`, the lane cannot end by itself within its budget (a winner
needs every rival dropped, a tie every rival within the zone): the race stops
there, "not separated", and says which pair and how likely it was.  Across sizes, a
survivor whose ratio to the best hints at a trend with size (the size line's slope
p below `TREND_HINT`) is left out: its difference is not noise around a mean, and
its answer may be "the best differs by size" (size_trend.py).  The normal
approximation stands in for the drop test's own distribution (Conover, Wilcoxon,
a paired t): it is a projection, not a test, and the replays
(benchmarks/race_replay.py) hold what it costs in right answers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from experiments.race.rules import RaceRules
from experiments.race.size_trend import size_fit

__all__ = ["TREND_HINT", "conditional_power", "futility_reason"]

# A size line's slope p below this exempts a survivor from futility: loose on
# purpose, since a trend the race has not yet proved may still decide it by size.
TREND_HINT = 0.25


def conditional_power(diff: Sequence[float], comparisons: int, rules: RaceRules) -> float:
    """The chance that `max_blocks` blocks drop this survivor or show it within the zone,
    if the paired log differences `diff` seen so far hold their mean and spread."""
    from statistics import NormalDist, fmean, stdev

    n, last = len(diff), rules.max_blocks
    if n < 2 or n >= last:
        return 1.0  # nothing to project from, or the budget ends at this look anyway
    spread = stdev(diff)
    if spread == 0.0:
        return 1.0  # the tests decide a spread-free pair themselves
    normal = NormalDist()
    m = max(1, comparisons)
    gap = abs(fmean(diff))
    standard_error = spread / math.sqrt(last)  # of the mean after `last` blocks
    future = spread * math.sqrt(last - n) / last  # how far the future blocks move it
    to_drop = normal.inv_cdf(1 - rules.alpha / (2 * m)) * standard_error
    drop = normal.cdf((gap - to_drop) / future) + normal.cdf((-gap - to_drop) / future)
    inside = rules.margin - normal.inv_cdf(1 - rules.alpha / m) * standard_error
    if inside >= to_drop:
        return 1.0  # whatever the mean at the last block, one of the two is shown
    tie = normal.cdf((inside - gap) / future) - normal.cdf((-inside - gap) / future)
    return drop + max(0.0, tie)  # disjoint: |mean| above to_drop, or below inside


def futility_reason(
    logs: Any,
    best: int,
    candidates: Sequence[str],
    rest: Sequence[Any],
    rules: RaceRules,
    sizes: Sequence[int] | None = None,
) -> str | None:
    """Why the lane stops for futility, or None: the survivor (of `rest`, the undropped
    comparisons) least likely to be decided, when its chance is below `rules.futility`.
    `sizes` (one per block) only across sizes."""
    if rules.futility <= 0 or not rest:
        return None
    index = {name: j for j, name in enumerate(candidates)}
    chances = []
    for c in rest:
        diff = logs[:, index[c.candidate]] - logs[:, best]
        if c.kept_for_size or _hints_at_trend(diff, sizes):
            continue
        chances.append((conditional_power(list(diff), len(rest), rules), c))
    if not chances:
        return None
    chance, hardest = min(chances, key=lambda item: item[0])
    if chance >= rules.futility:
        return None
    return (
        f"{hardest.candidate} and {candidates[best]} (ratio {hardest.ratio:.3g}) have a "
        f"{chance:.0%} chance of being separated or shown within {rules.zone:.0%} by block "
        f"{rules.max_blocks} at the spread seen (below {rules.futility:.0%}: stopped early)"
    )


def _hints_at_trend(diff: Any, sizes: Sequence[int] | None) -> bool:
    if sizes is None:
        return False
    fit = size_fit(diff, sizes)
    return fit is not None and fit.pvalue < TREND_HINT
