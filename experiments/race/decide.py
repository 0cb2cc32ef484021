"""The race's test after a block: who is dropped, and whether the race is decided.

A race (F-race, Birattari et al. 2002; irace, López-Ibáñez et al. 2016) times
every surviving topology once per block and tests after each complete block
from `first_test` on.  kary's race is a *t-race* (irace's `t-test` type, with
Holm): paired t-tests on log times, because each of its claims is relative to
the indifference zone (`--zone`, 5%), which a rank test (Friedman, Conover)
cannot test.  Every claim is made at the level this look may spend
(sequential.py: Lan-DeMets error spending over the looks), so what a race
states holds at `--confidence` for the race as a whole, not per look.

Estimates are paired differences of log times, size-weighted (pairs.py), of a
survivor X against the *leader* L (the lowest size-weighted mean log time).
The claims, each with its own error budget of 1 - confidence over the race:

1. **Drop: X is more than the zone slower than L.**  One-sided paired t-test of
   theta(X, L) <= ln(1 + zone).  Since L is no faster than the true best, a
   topology within the zone of the true best is never truly "more than the zone
   slower" than any L, so a false drop is a false rejection whichever L the
   data chose.  Because L is chosen by the same data, each p is multiplied by
   the k - 1 comparators X could have been set against (Bonferroni over the
   comparators), and Holm's step-down runs over the k survivors' hypotheses.
   A survivor significantly *faster* than L at some timed size (one-sided,
   p < HOLD_HINT, unadjusted) is held, not dropped: it may be the best there.
2. **Tie: every survivor within the zone of every other.**  Two one-sided
   tests (TOST) for every pair of survivors; the tie is their conjunction, an
   intersection-union test (Berger 1982), so no pair needs a multiplicity
   correction, and pairs, not only the leader's, make it hold for the unknown
   best.  Stated with the leader's ratio to each survivor and its interval.
3. **The best differs by size** (across sizes): some survivor X significantly
   faster than L at one timed size and significantly slower at another, each a
   one-sided test on that size's mean, Bonferroni over every ordered pair of
   survivors and every timed size.
4. **Futile** when, undecided, some survivor's chance of being dropped or shown
   within the zone by the last block of the budget is below `rules.futility`
   (futility.py): the engine then ends the lane "not separated" early.  That is
   never a claim, so it spends no error.

Across sizes the answer is for the sizes the race timed (`sizes_timed`): the
block order reaches both ends of the range first (engine.size_order).

Everything here is pure: times in, a Decision out.  numpy and scipy load on
first use (`kary plan` of a plain sweep needs neither).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from experiments.race.futility import futility_reason
from experiments.race.pairs import estimate_pairs, pooled_variance
from experiments.race.rules import BY_SIZE, CONTINUE, TIE, WINNER, RaceRules
from experiments.race.sequential import SPENDING, look_blocks, look_level

__all__ = ["HOLD_HINT", "TEST", "Comparison", "Decision", "decide", "holm"]

TEST = (
    "paired t-tests on log times (size-weighted): drop when more than the zone slower "
    "than the leader (Holm, Bonferroni over comparators); tie when every pair is shown "
    f"within the zone (TOST, intersection-union); error spent over the looks ({SPENDING})"
)
# A survivor this significantly faster than the leader at some size is held, not dropped.
HOLD_HINT = 0.05


@dataclass(frozen=True)
class Comparison:
    """One survivor against the leader after a block."""

    candidate: str
    ratio: float  # size-weighted geometric mean of its time over the leader's
    ratio_low: float  # the ratio's interval at this look's level (two-sided 1 - 2 level)
    ratio_high: float
    p: float | None  # raw one-sided p of "more than the zone slower" (None: no test)
    p_adjusted: float | None  # Holm over the survivors, times the comparators
    p_equivalent: float | None  # TOST: its least sure pair with a survivor
    dropped: bool = False
    kept_for_size: bool = False  # would be dropped, but faster than the leader at a size
    faster_at_a_size: bool = False  # faster than the leader at some size (p < HOLD_HINT)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Comparison:
        """Known fields only: race.json of earlier rules kept `mean_rank` too."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class Decision:
    """What the test after one block found, with every number it used."""

    blocks: int  # complete blocks the test used
    survivors: list[str]  # before this decision
    best: str  # the leader
    test: str
    statistic: float | None
    p: float | None  # the smallest adjusted drop p of this look
    comparisons: list[Comparison] = field(default_factory=list)
    outcome: str = CONTINUE
    crossing: dict[str, Any] | None = None  # the best differs by size: where
    futile: str | None = None  # why more blocks would likely not decide (futility.py)
    level: float | None = None  # the error this look spent (None: no test)
    sizes_timed: list[int] | None = None  # across sizes: what the estimates cover

    @property
    def dropped(self) -> list[str]:
        return [c.candidate for c in self.comparisons if c.dropped]

    @property
    def kept(self) -> list[str]:
        """The survivors after this decision, in the order they were given."""
        gone = set(self.dropped)
        return [c for c in self.survivors if c not in gone]

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["dropped"] = self.dropped
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Decision:
        comparisons = [Comparison.from_json(c) for c in data.get("comparisons", [])]
        known = {f.name for f in fields(cls)} - {"comparisons"}
        return cls(**{k: v for k, v in data.items() if k in known}, comparisons=comparisons)


def decide(
    candidates: Sequence[str],
    times: Sequence[Sequence[float]],
    rules: RaceRules,
    *,
    sizes: Sequence[int] | None = None,
    spent: Iterable[float] = (),
) -> Decision:
    """The test after a block over `times` (one row per complete block, one column per
    candidate, seconds > 0).  `sizes` (one per block) only across sizes; `spent`: the
    levels earlier looks used."""
    import numpy as np

    logs = np.log(np.asarray(times, dtype=float))
    blocks, k = logs.shape
    if k != len(candidates) or k < 2:
        raise ValueError(f"decide needs two or more candidates, one column each (got {k})")
    across = sizes is not None
    looks = look_blocks(rules.first_test, rules.max_blocks)
    if blocks not in looks:
        # No test: the leader and each ratio, which the block's line and the report show.
        means = estimate_pairs(logs, sizes).theta
        leader = int(min(range(k), key=lambda j: (means[j], j)))
        later = [b for b in looks if b > blocks]
        return Decision(
            blocks,
            list(candidates),
            candidates[leader],
            f"no test after {blocks} blocks: the race tests after "
            f"{', '.join(map(str, looks))} blocks" + (f" (next: {later[0]})" if later else ""),
            None,
            None,
            [
                Comparison(
                    candidates[j],
                    round(math.exp(float(means[j] - means[leader])), 4),
                    math.nan,
                    math.nan,
                    None,
                    None,
                    None,
                )
                for j in range(k)
                if j != leader
            ],
            sizes_timed=sorted(set(sizes)) if sizes is not None else None,
        )
    leader = _leader(logs, sizes)
    others = [j for j in range(k) if j != leader]
    diffs = logs[:, others] - logs[:, [leader]]
    pooled = pooled_variance(logs, sizes)
    estimates = estimate_pairs(diffs, sizes, pooled)
    timed = estimates.sizes if across else None
    survivors = list(candidates)
    if estimates.df < 1:
        comparisons = [
            _comparison(candidates[j], estimates, i, None, rules) for i, j in enumerate(others)
        ]
        return Decision(
            blocks,
            survivors,
            candidates[leader],
            "no test: one block leaves no spread to test with",
            None,
            None,
            comparisons,
            sizes_timed=timed,
        )
    level = look_level(rules.alpha, blocks, rules.max_blocks, spent)
    raw = _drop_p(estimates, rules.margin)
    adjusted = _step_down(raw, comparators=k - 1, hypotheses=k)
    held = _held(estimates) if across else np.zeros(len(others), dtype=bool)
    comparisons = []
    for i, j in enumerate(others):
        significant = bool(adjusted[i] <= level) and level > 0
        comparisons.append(
            _comparison(
                candidates[j],
                estimates,
                i,
                level,
                rules,
                float(raw[i]),
                float(adjusted[i]),
                dropped=significant and not held[i],
                kept_for_size=significant and bool(held[i]),
                faster_at_a_size=bool(held[i]),
            )
        )
    decision = Decision(
        blocks,
        survivors,
        candidates[leader],
        TEST,
        None,
        float(min(adjusted)) if len(adjusted) else None,
        comparisons,
        level=level,
        sizes_timed=timed,
    )
    return _outcome(decision, logs, leader, candidates, sizes, rules)


def _leader(logs: Any, sizes: Sequence[int] | None) -> int:
    """The lowest size-weighted mean log time (ties: the one given first)."""
    estimates = estimate_pairs(logs, sizes)
    return int(min(range(logs.shape[1]), key=lambda j: (estimates.theta[j], j)))


def _drop_p(estimates: Any, margin: float) -> Any:
    """One-sided p of theta > margin (more than the zone slower), per pair."""
    import numpy as np
    from scipy.special import stdtr

    theta, se = estimates.theta, estimates.se
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (theta - margin) / se
    exact = np.where(theta > margin, 0.0, 1.0)  # no spread: the difference is what it is
    return np.where(se > 0, stdtr(estimates.df, -t), exact)


def _step_down(raw: Any, comparators: int, hypotheses: int) -> Any:
    """Holm's step-down over `hypotheses`, each p first multiplied by `comparators`."""
    import numpy as np

    order = np.argsort(raw, kind="stable")
    factors = comparators * (hypotheses - np.arange(len(raw)))
    stepped = np.maximum.accumulate(np.minimum(raw[order] * factors, 1.0))
    adjusted = np.empty(len(raw))
    adjusted[order] = stepped
    return adjusted


def _held(estimates: Any) -> Any:
    """Survivors significantly faster than the leader at some timed size (a hint)."""
    import numpy as np
    from scipy.special import stdtr

    if estimates.size_se is None or len(estimates.sizes) < 2:
        return np.zeros(estimates.theta.shape, dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = estimates.size_theta / estimates.size_se
    p = np.where(estimates.size_se > 0, stdtr(estimates.size_df, t), 1.0)
    return np.asarray((p < HOLD_HINT).any(axis=0))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment, in the order given (statsmodels' `multipletests(method=
    "holm")`, which tests/race hold it equal to; written out because statsmodels 0.15 runs
    a full `gc.collect()` in every call, about 0.18 s each here)."""
    import numpy as np

    values = np.asarray(p_values, dtype=float)
    return [float(p) for p in _step_down(values, 1, len(values))]


def _comparison(
    name: str,
    estimates: Any,
    i: int,
    level: float | None,
    rules: RaceRules,
    p: float | None = None,
    p_adjusted: float | None = None,
    *,
    dropped: bool = False,
    kept_for_size: bool = False,
    faster_at_a_size: bool = False,
) -> Comparison:
    theta, se = float(estimates.theta[i]), float(estimates.se[i])
    low, high = _interval(theta, se, estimates.df, level if level else rules.alpha)
    return Comparison(
        name,
        round(math.exp(theta), 4),
        low,
        high,
        p,
        p_adjusted,
        None,
        dropped,
        kept_for_size,
        faster_at_a_size,
    )


def _interval(theta: float, se: float, df: int, level: float) -> tuple[float, float]:
    """exp(theta +- t(1 - level, df) se): the two-sided 1 - 2 level interval TOST decides on."""
    from scipy.special import stdtrit

    if df < 1 or not level > 0:
        return (math.nan, math.nan)
    half = float(stdtrit(df, 1 - level)) * se
    return (round(math.exp(theta - half), 4), round(math.exp(theta + half), 4))


def _outcome(
    decision: Decision,
    logs: Any,
    leader: int,
    candidates: Sequence[str],
    sizes: Sequence[int] | None,
    rules: RaceRules,
) -> Decision:
    from dataclasses import replace

    kept = decision.kept
    if len(kept) == 1:
        return replace(decision, outcome=WINNER)
    level = decision.level or 0.0
    index = {name: j for j, name in enumerate(candidates)}
    columns = [index[c] for c in kept]
    if sizes is not None and level > 0:
        found = _crossing(logs, columns, leader, candidates, sizes, level)
        if found is not None:
            return replace(decision, outcome=BY_SIZE, crossing=found)
    pooled = pooled_variance(logs[:, columns], sizes)
    equivalent = _equivalence(logs, columns, sizes, rules.margin, pooled)
    comparisons = [
        replace(c, p_equivalent=equivalent.get(index[c.candidate])) for c in decision.comparisons
    ]
    tie = level > 0 and all(equivalent[j] <= level for j in columns)
    if tie:
        return replace(decision, comparisons=comparisons, outcome=TIE)
    rest = [c for c in comparisons if not c.dropped]
    futile = futility_reason(logs, leader, candidates, rest, rules, sizes, decision.blocks)
    return replace(decision, comparisons=comparisons, futile=futile)


def _pair_columns(columns: list[int]) -> list[tuple[int, int]]:
    return [(a, b) for i, a in enumerate(columns) for b in columns[i + 1 :]]


def _equivalence(
    logs: Any,
    columns: list[int],
    sizes: Sequence[int] | None,
    margin: float,
    pooled: tuple[float, int, bool],
) -> dict[int, float]:
    """Each survivor's TOST p: the largest over its pairs with the other survivors (the
    tie is the conjunction of every pair, an intersection-union test)."""
    import numpy as np
    from scipy.special import stdtr

    pairs = _pair_columns(columns)
    if not pairs:
        return {}
    diffs = np.stack([logs[:, a] - logs[:, b] for a, b in pairs], axis=1)
    est = estimate_pairs(diffs, sizes, pooled)
    if est.df < 1:
        return dict.fromkeys(columns, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        upper = stdtr(est.df, (est.theta - margin) / est.se)  # theta < margin
        lower = stdtr(est.df, -(est.theta + margin) / est.se)  # theta > -margin
    exact = np.where(np.abs(est.theta) < margin, 0.0, 1.0)
    tost = np.where(est.se > 0, np.maximum(upper, lower), exact)
    worst = dict.fromkeys(columns, 0.0)
    for (a, b), p in zip(pairs, tost, strict=True):
        worst[a] = max(worst[a], float(p))
        worst[b] = max(worst[b], float(p))
    return worst


def _crossing(
    logs: Any,
    columns: list[int],
    leader: int,
    candidates: Sequence[str],
    sizes: Sequence[int],
    level: float,
) -> dict[str, Any] | None:
    """A survivor significantly faster than the leader at one timed size and slower at
    another (one-sided per size, Bonferroni over ordered pairs and sizes), else None."""
    import numpy as np
    from scipy.special import stdtr

    others = [j for j in columns if j != leader]
    if not others:
        return None
    diffs = logs[:, others] - logs[:, [leader]]
    est = estimate_pairs(diffs, sizes, pooled_variance(logs[:, columns], sizes))
    if est.size_se is None or len(est.sizes) < 2:
        return None
    family = len(columns) * (len(columns) - 1) * len(est.sizes)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = est.size_theta / est.size_se
    faster = np.where(est.size_se > 0, stdtr(est.size_df, t), 1.0) * family
    slower = np.where(est.size_se > 0, stdtr(est.size_df, -t), 1.0) * family
    for i, j in enumerate(others):
        fast_at = [s for s, p in zip(est.sizes, faster[:, i], strict=True) if p <= level]
        slow_at = [s for s, p in zip(est.sizes, slower[:, i], strict=True) if p <= level]
        if not fast_at or not slow_at:
            continue
        small_first = min(fast_at) < min(slow_at)
        name, lead = candidates[j], candidates[leader]
        return {
            "faster_small": name if small_first else lead,
            "faster_large": lead if small_first else name,
            "crossing_bytes": _crossing_size(est.sizes, est.size_theta[:, i]),
            "p": float(max(min(faster[:, i]), min(slower[:, i]))),
            "candidate": name,
            "leader": lead,
            "sizes_faster": fast_at,  # where `candidate` is significantly faster
            "sizes_slower": slow_at,
        }
    return None


def _crossing_size(sizes: list[int], theta: Any) -> int:
    """Where the size means change sign, interpolated in log2 size (first change)."""
    for (s0, t0), (s1, t1) in zip(
        zip(sizes, theta, strict=True), zip(sizes[1:], theta[1:], strict=True), strict=False
    ):
        if t0 == 0.0 or (t0 < 0) != (t1 < 0):
            x0, x1 = math.log2(s0), math.log2(s1)
            x = x0 if t0 == t1 else x0 + (x1 - x0) * t0 / (t0 - t1)
            return int(2**x)
    return int(math.sqrt(sizes[0] * sizes[-1]))
