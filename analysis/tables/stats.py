"""Statistics that stay honest with three to five iterations.

- Median CI: the distribution-free order-statistic interval [x_(j), x_(n+1-j)]
  (binomial, no assumption about the timing distribution). Its exact coverage
  is 1 - 2 P(B <= j-1), B ~ Binomial(n, 1/2). The narrowest interval with
  coverage >= 95% needs n >= 6; for 3 <= n <= 5 the widest one, [min, max],
  covers only 75%, 87.5% or 93.75%, and `ci_coverage` says so; for n < 3
  there is no interval and the columns stay empty.
- Ratio of medians (compare): the Hodges-Lehmann / Mann-Whitney interval for
  a shift on the log scale, i.e. for the ratio B/A: the order statistics of
  all pairwise log(b_j / a_i) (found without making every pair:
  pair_differences.py), with the exact Mann-Whitney null distribution
  (normal approximation beyond 2,500 pairs). Same rule: 95% where the sample
  allows it, otherwise the widest interval with its true coverage.
- "Is A faster than B?": the Mann-Whitney U test, two-sided, at ALPHA = 0.05
  (`rank_test`). Its smallest possible p for n and m runs is 2 / C(n+m, n)
  (every run of one side below every run of the other): 0.1 for 3 vs 3, so
  three iterations per side can never separate two designs at 0.05; four can.
- "Which is fastest?": the fastest by median, named only where that test
  separates it from every other timed one (`find_winner`); otherwise a tie (the
  runs could have separated them and did not) or unsure (they could not have).
  The report's verdicts (analysis/page/results.py) and the benchmarks' tables use
  this one rule.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from statistics import NormalDist

import numpy as np
import pandas as pd

from analysis.tables.group_stats import CI_LEVEL, SUMMARY_STATS, group_stats, median_ci_ranks
from analysis.tables.pair_differences import pair_differences_at

__all__ = [
    "ALPHA",
    "CI_LEVEL",
    "MIN_RUNS",
    "TEST_NAME",
    "RankTest",
    "RatioInterval",
    "Winner",
    "could_decide",
    "decides",
    "find_winner",
    "median_ci_ranks",
    "rank_test",
    "ratio_of_medians",
    "runs_needed",
    "smallest_p",
    "summarize",
    "winner",
]

ALPHA = 0.05
TEST_NAME = "Mann-Whitney U, two-sided"
# Fewer runs than this on a side and no claim is made: one or two timings say
# nothing about their own noise.
MIN_RUNS = 3


def summarize(
    frame: pd.DataFrame,
    keys: list[str],
    value: str = "time_seconds",
    status: str = "status",
    group_by: list[str] | None = None,
) -> pd.DataFrame:
    """Per group: n (ok rows), failed (count), median, q1, q3, min, max, median CI, cv.

    Failed rows are counted, never averaged in: statistics use status == "ok" only.
    Groups keep the order in which they first appear in `frame`.  `group_by`,
    when given, are the keys that tell groups apart; the rest of `keys` must
    follow from them (they are taken from each group's first row).
    """
    if frame.empty:
        return pd.DataFrame(columns=[*keys, *SUMMARY_STATS])
    # One integer id per group; everything after works on ids, not on the key columns.
    grouped = frame.groupby(group_by or keys, dropna=False, sort=False)
    gid = grouped.ngroup().to_numpy()
    count = int(gid.max()) + 1
    _, first = np.unique(gid, return_index=True)
    out = frame[keys].iloc[first].reset_index(drop=True)
    stats = group_stats(
        frame[value].to_numpy(dtype=float), (frame[status] == "ok").to_numpy(), gid, count
    )
    for name in SUMMARY_STATS:
        out[name] = stats[name]
    return out[[*keys, *SUMMARY_STATS]]


@dataclass(frozen=True)
class RatioInterval:
    """median(after) / median(before), with an interval and its exact coverage."""

    ratio: float
    low: float | None
    high: float | None
    coverage: float | None


def ratio_of_medians(
    before: np.ndarray, after: np.ndarray, level: float = CI_LEVEL
) -> RatioInterval | None:
    """Ratio of medians and a distribution-free interval for it; None if a side is empty."""
    a = np.asarray(before, dtype=float)
    b = np.asarray(after, dtype=float)
    if len(a) == 0 or len(b) == 0:
        return None
    med_a, med_b = float(np.median(a)), float(np.median(b))
    ratio = med_b / med_a if med_a > 0 else math.inf
    n, m = len(a), len(b)
    if n < 2 or m < 2:
        return RatioInterval(ratio, None, None, None)
    tiny = 1e-9  # a 0.000 s timing would make the log ratio infinite
    log_a, log_b = np.sort(np.log(np.maximum(a, tiny))), np.sort(np.log(np.maximum(b, tiny)))
    k, coverage = _shift_interval_rank(n, m, level)
    low, high = pair_differences_at(log_a, log_b, (k, n * m + 1 - k))
    return RatioInterval(ratio, float(np.exp(low)), float(np.exp(high)), coverage)


@cache
def _shift_interval_rank(n: int, m: int, level: float) -> tuple[int, float]:
    """1-based k: the interval is [d_(k), d_(nm+1-k)], coverage 1 - 2 P(U <= k-1)."""
    pairs = n * m
    if pairs > 2500:
        z = _normal_quantile(1 - (1 - level) / 2)
        k = math.floor(pairs / 2 - z * math.sqrt(pairs * (n + m + 1) / 12))
        return max(k, 1), level
    counts = _mann_whitney_counts(n, m)
    total = sum(counts)
    cumulative = 0
    best = (1, 1 - 2 * counts[0] / total)
    for k in range(1, pairs // 2 + 1):
        cumulative += counts[k - 1]
        coverage = 1 - 2 * cumulative / total
        if coverage < level:
            break
        best = (k, coverage)
    return best


@cache
def _mann_whitney_counts(n: int, m: int) -> list[int]:
    """How many of the C(n+m, n) orderings give U = 0, 1, ..., n*m (exact, integers)."""
    n, m = min(n, m), max(n, m)  # the same distribution; fewer factors this way
    # Coefficients of the Gaussian binomial [n+m choose n]_q, built one factor at a time.
    poly = [1]
    for i in range(1, n + 1):
        # multiply by (1 - q^(m+i)), then divide by (1 - q^i)
        grown = poly + [0] * (m + i)
        for d, c in enumerate(poly):
            grown[d + m + i] -= c
        quotient = [0] * (len(grown) - i)
        carry = grown[:]
        for d in range(len(quotient)):
            quotient[d] = carry[d]
            carry[d + i] += carry[d]
        poly = quotient
    return poly[: n * m + 1]


def _normal_quantile(p: float) -> float:
    return NormalDist().inv_cdf(p)


@dataclass(frozen=True)
class RankTest:
    """The Mann-Whitney U test (two-sided) of two samples: p and each side's n."""

    p: float
    n_a: int
    n_b: int

    @property
    def significant(self) -> bool:
        return self.p < ALPHA

    @property
    def can_be_significant(self) -> bool:
        """False when these n cannot give p < ALPHA whatever the timings."""
        return smallest_p(self.n_a, self.n_b) < ALPHA

    @property
    def n_text(self) -> str:
        return f"n={self.n_a}" if self.n_a == self.n_b else f"n={self.n_a} vs {self.n_b}"


def rank_test(a: np.ndarray, b: np.ndarray) -> RankTest | None:
    """Mann-Whitney U, two-sided; None if a side is empty.

    As scipy's `mannwhitneyu(a, b)` (method "auto") computes it, without
    importing scipy (0.7 s): the exact distribution of U when a side has at most
    8 runs and no timing ties, else the normal approximation with the tie and
    continuity corrections.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n, m = len(x), len(y)
    if n == 0 or m == 0:
        return None
    values, inverse, ties = np.unique(
        np.concatenate([x, y]), return_inverse=True, return_counts=True
    )
    # Average ranks: a run of t equal values shares the mean of its t ranks.
    first = np.cumsum(ties) - ties + 1
    ranks = (first + (ties - 1) / 2)[inverse]
    u1 = float(ranks[:n].sum()) - n * (n + 1) / 2
    u = max(u1, n * m - u1)
    if (n <= 8 or m <= 8) and len(values) == n + m:
        # P(U >= u) = P(U <= nm - u) by symmetry, counted exactly.
        counts = _mann_whitney_counts(n, m)
        p = 2 * sum(counts[: n * m - int(u) + 1]) / math.comb(n + m, n)
    else:
        total = n + m
        tie_term = float((ties.astype(float) ** 3 - ties).sum())
        spread = math.sqrt(n * m / 12 * ((total + 1) - tie_term / (total * (total - 1))))
        # All timings equal on both sides leaves the statistic no variance: no evidence.
        z = (u - n * m / 2 - 0.5) / spread if spread > 0 else -math.inf
        p = math.erfc(z / math.sqrt(2))  # two-sided: 2 * P(Z > z)
    return RankTest(min(max(p, 0.0), 1.0), n, m)


@cache
def smallest_p(n: int, m: int) -> float:
    """The smallest two-sided exact Mann-Whitney p for n and m runs: 2 / C(n+m, n)."""
    if n == 0 or m == 0:
        return 1.0
    return min(1.0, 2 / math.comb(n + m, n))


def runs_needed(alpha: float = ALPHA) -> int:
    """The fewest runs per side (equal sides) for which p < alpha is possible at all."""
    n = 1
    while smallest_p(n, n) >= alpha:
        n += 1
    return n


def decides(test: RankTest) -> bool:
    """The test separates the two samples: enough runs on each side and p < ALPHA."""
    return min(test.n_a, test.n_b) >= MIN_RUNS and test.significant


def could_decide(test: RankTest) -> bool:
    """These runs could give p < ALPHA at all (whatever the timings)."""
    return min(test.n_a, test.n_b) >= MIN_RUNS and test.can_be_significant


@dataclass(frozen=True)
class Winner:
    """The fastest of some samples by median, and whether the rank test names it.

    status: clear (the test separates the fastest from every other timed one),
    tie (some other could have been separated at these runs and was not), unsure
    (the runs are too few for the test to decide), alone (one timed), or none
    (nothing timed).
    """

    fastest: str | None
    median: float | None
    status: str
    # The fastest's timings against each other timed one's, by name.
    tests: dict[str, RankTest]

    @property
    def name(self) -> str | None:
        """The winner, or None where the data cannot name one."""
        return self.fastest if self.status == "clear" else None

    @property
    def ties(self) -> list[str]:
        """The timed ones the test does not separate from the fastest."""
        return [other for other, test in self.tests.items() if not decides(test)]

    @property
    def text(self) -> str:
        """`kary:1`; or why there is none: `none (kary:1 and kary:2 tie: p = 0.34)`,
        `none (kary:1 ties kary:2 and kary:4: p >= 0.11)`, `unsure (too few runs: n=3)`."""
        if self.status == "clear":
            return str(self.fastest)
        if self.status == "none":
            return "none (no samples)"
        if self.status == "alone":
            return f"none (only {self.fastest} has samples)"
        tests = [self.tests[other] for other in self.ties]
        if self.status == "unsure":
            fewest = min(tests, key=lambda test: min(test.n_a, test.n_b))
            return f"unsure (too few runs: {fewest.n_text})"
        if len(tests) == 1:
            return f"none ({self.fastest} and {self.ties[0]} tie: p = {tests[0].p:.2g})"
        weakest = min(test.p for test in tests)
        return f"none ({self.fastest} ties {_and(self.ties)}: p >= {weakest:.2g})"


def find_winner(samples: Mapping[str, Sequence[float]]) -> Winner:
    """The fastest by median (the first of equal medians, in the mapping's order), named
    the winner only if the test separates it from every other timed one (`decides`)."""
    timed = {name: np.asarray(times, dtype=float) for name, times in samples.items() if len(times)}
    if not timed:
        return Winner(None, None, "none", {})
    medians = {name: float(np.median(times)) for name, times in timed.items()}
    best = min(medians, key=lambda name: medians[name])
    tests: dict[str, RankTest] = {}
    for other, times in timed.items():
        if other != best:
            test = rank_test(timed[best], times)
            assert test is not None  # both sides are timed
            tests[other] = test
    if not tests:
        status = "alone"
    elif all(decides(test) for test in tests.values()):
        status = "clear"
    elif any(could_decide(test) for test in tests.values() if not decides(test)):
        status = "tie"
    else:
        status = "unsure"
    return Winner(best, medians[best], status, tests)


def winner(samples: Mapping[str, Sequence[float]]) -> str | None:
    """The fastest by median where the test separates it from every other; else None."""
    return find_winner(samples).name


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
