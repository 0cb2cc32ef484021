"""Statistics that stay honest with three to five iterations.

- Median CI: the distribution-free order-statistic interval [x_(j), x_(n+1-j)]
  (binomial, no assumption about the timing distribution). Its exact coverage
  is 1 - 2 P(B <= j-1), B ~ Binomial(n, 1/2). The narrowest interval with
  coverage >= 95% needs n >= 6; for 3 <= n <= 5 the widest one, [min, max],
  covers only 75%, 87.5% or 93.75%, and `ci_coverage` says so; for n < 3
  there is no interval and the columns stay empty.
- Ratio of medians (compare): the Hodges-Lehmann / Mann-Whitney interval for
  a shift on the log scale, i.e. for the ratio B/A: the order statistics of
  all pairwise log(b_j / a_i), with the exact Mann-Whitney null distribution
  (normal approximation beyond 2,500 pairs). Same rule: 95% where the sample
  allows it, otherwise the widest interval with its true coverage.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np
import pandas as pd

__all__ = [
    "CI_LEVEL",
    "RatioInterval",
    "median_ci_ranks",
    "ratio_of_medians",
    "summarize",
]

CI_LEVEL = 0.95


@cache
def median_ci_ranks(n: int, level: float = CI_LEVEL) -> tuple[int, int, float] | None:
    """0-based (low, high) order-statistic indices of the median CI and its exact coverage."""
    if n < 3:
        return None
    total = 2**n
    best = (0, n - 1, 1 - 2 * 1 / total)
    below = 0  # sum of C(n, i) for i < j
    for j in range(1, n // 2 + 1):
        below += math.comb(n, j - 1)
        coverage = 1 - 2 * below / total
        if coverage < level:
            break
        best = (j - 1, n - j, coverage)
    return best


SUMMARY_STATS = [
    "n",
    "failed",
    "median",
    "q1",
    "q3",
    "min",
    "max",
    "ci_low",
    "ci_high",
    "ci_coverage",
    "cv",
]


def summarize(
    frame: pd.DataFrame, keys: list[str], value: str = "time_seconds", status: str = "status"
) -> pd.DataFrame:
    """Per group: n (ok rows), failed (count), median, q1, q3, min, max, median CI, cv.

    Failed rows are counted, never averaged in: statistics use status == "ok" only.
    Groups keep the order in which they first appear in `frame`.
    """
    if frame.empty:
        return pd.DataFrame(columns=[*keys, *SUMMARY_STATS])
    groups = frame[keys].drop_duplicates().reset_index(drop=True)
    is_ok = (frame[status] == "ok") & frame[value].notna()
    ok = frame.loc[is_ok, [*keys, value]]
    failed = frame.loc[~is_ok].groupby(keys, dropna=False, sort=False).size().rename("failed")
    by = ok.groupby(keys, dropna=False, sort=False)[value]
    stats = pd.DataFrame(
        {
            "n": by.count(),
            "median": by.median(),
            "q1": by.quantile(0.25),
            "q3": by.quantile(0.75),
            "min": by.min(),
            "max": by.max(),
            "cv": by.std(ddof=1) / by.mean(),
        }
    )
    ci = _median_ci(ok, keys, value)
    out = groups.merge(stats.reset_index(), on=keys, how="left")
    out = out.merge(failed.reset_index(), on=keys, how="left")
    out = out.merge(ci, on=keys, how="left")
    out["n"] = out["n"].fillna(0).astype(int)
    out["failed"] = out["failed"].fillna(0).astype(int)
    out.loc[out["n"] < 2, "cv"] = np.nan
    return out[[*keys, *SUMMARY_STATS]]


def _median_ci(ok: pd.DataFrame, keys: list[str], value: str) -> pd.DataFrame:
    """Order-statistic CI per group, vectorised: pick the j-th smallest and largest."""
    if ok.empty:
        return pd.DataFrame(columns=[*keys, "ci_low", "ci_high", "ci_coverage"])
    ordered = ok.sort_values([*keys, value], kind="mergesort", na_position="first")
    grouped = ordered.groupby(keys, dropna=False, sort=False)
    rank = grouped.cumcount().to_numpy()
    size = grouped[value].transform("size").to_numpy()
    low_rank = np.full(len(ordered), -1)
    high_rank = np.full(len(ordered), -1)
    coverage = np.full(len(ordered), np.nan)
    for n in np.unique(size):
        ranks = median_ci_ranks(int(n))
        if ranks is None:
            continue
        mask = size == n
        low_rank[mask], high_rank[mask], coverage[mask] = ranks
    values = ordered[value].to_numpy(dtype=float)
    table = ordered[keys].copy()
    table["ci_low"] = np.where(rank == low_rank, values, np.nan)
    table["ci_high"] = np.where(rank == high_rank, values, np.nan)
    table["ci_coverage"] = coverage
    by = table.groupby(keys, dropna=False, sort=False)
    return by[["ci_low", "ci_high", "ci_coverage"]].max().reset_index()


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
    diffs = np.sort(
        (np.log(np.maximum(b, tiny))[None, :] - np.log(np.maximum(a, tiny))[:, None]).ravel()
    )
    k, coverage = _shift_interval_rank(n, m, level)
    return RatioInterval(
        ratio, float(np.exp(diffs[k - 1])), float(np.exp(diffs[n * m - k])), coverage
    )


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


def _mann_whitney_counts(n: int, m: int) -> list[int]:
    """How many of the C(n+m, n) orderings give U = 0, 1, ..., n*m (exact, integers)."""
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
    from scipy.stats import norm

    return float(norm.ppf(p))
