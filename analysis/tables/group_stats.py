"""Per-group statistics of timings with numpy alone: n, failed, median, quartiles, min,
max, the median's order-statistic CI and cv.

The one place they are computed: `analysis.tables.stats.summarize` (DataFrames) and
the parse's summary (`analysis.tables.summary_rows`, no pandas) both call
`group_stats`.  Groups are integer ids 0..count-1; the statistics are those
of analysis.tables.stats' docstring.
"""

from __future__ import annotations

from functools import cache

import numpy as np

__all__ = ["CI_LEVEL", "SUMMARY_STATS", "group_stats", "median_ci_ranks"]

CI_LEVEL = 0.95

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


@cache
def median_ci_ranks(n: int, level: float = CI_LEVEL) -> tuple[int, int, float] | None:
    """0-based (low, high) order-statistic indices of the median CI and its exact coverage."""
    if n < 3:
        return None
    total = 2**n
    best = (0, n - 1, 1 - 2 * 1 / total)
    below = 0  # sum of C(n, i) for i < j
    term = 1  # C(n, j - 1), each from the one before: math.comb anew each step grew
    # faster than n^2 (5.4 s at n = 10,000, 184 s at 40,000)
    for j in range(1, n // 2 + 1):
        below += term
        coverage = 1 - 2 * below / total
        if coverage < level:
            break
        best = (j - 1, n - j, coverage)
        term = term * (n - j + 1) // j
    return best


def group_stats(
    values: np.ndarray, ok: np.ndarray, gid: np.ndarray, count: int
) -> dict[str, np.ndarray]:
    """SUMMARY_STATS per group id, as arrays of length `count`.

    `values`: the timings; `ok`: which rows count (a failed row, or one with
    no timing, is counted in `failed` and never averaged in); `gid`: each
    row's group.  Statistics of a group with no ok row are NaN, cv needs two.
    """
    values = np.asarray(values, dtype=float)
    ok = np.asarray(ok, dtype=bool) & ~np.isnan(values)
    gid = np.asarray(gid, dtype=np.int64)
    stats: dict[str, np.ndarray] = {
        "n": np.bincount(gid[ok], minlength=count),
        "failed": np.bincount(gid[~ok], minlength=count),
    }
    # Every ok timing, sorted within its group: each statistic is then an
    # index into `ordered` from the group's start and size.
    order = np.lexsort((values[ok], gid[ok]))
    ordered, groups = values[ok][order], gid[ok][order]
    present, starts, sizes = np.unique(groups, return_index=True, return_counts=True)
    for name in ("median", "q1", "q3", "min", "max", "ci_low", "ci_high", "ci_coverage", "cv"):
        stats[name] = np.full(count, np.nan)
    if not len(present):
        return stats
    last = starts + sizes - 1
    stats["min"][present] = ordered[starts]
    stats["max"][present] = ordered[last]
    stats["median"][present] = _median(ordered, starts, sizes)
    stats["q1"][present] = _quantile(ordered, starts, sizes, 0.25)
    stats["q3"][present] = _quantile(ordered, starts, sizes, 0.75)
    for n in np.unique(sizes):
        ranks = median_ci_ranks(int(n))
        if ranks is None:
            continue
        these = sizes == n
        stats["ci_low"][present[these]] = ordered[starts[these] + ranks[0]]
        stats["ci_high"][present[these]] = ordered[starts[these] + ranks[1]]
        stats["ci_coverage"][present[these]] = ranks[2]
    stats["cv"][present] = _cv(ordered, starts, sizes)
    return stats


def _median(ordered: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The middle value, or the mean of the two middle ones."""
    low = ordered[starts + (sizes - 1) // 2]
    high = ordered[starts + sizes // 2]
    return np.where(sizes % 2 == 1, low, (low + high) / 2)


def _quantile(ordered: np.ndarray, starts: np.ndarray, sizes: np.ndarray, q: float) -> np.ndarray:
    """Linear interpolation between the order statistics around (n - 1) q (numpy's and
    pandas' default)."""
    position = (sizes - 1) * q
    below = np.floor(position).astype(np.int64)
    fraction = position - below
    above = np.minimum(below + 1, sizes - 1)
    low, high = ordered[starts + below], ordered[starts + above]
    return low + (high - low) * fraction


def _cv(ordered: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Sample standard deviation over the mean; NaN below two values."""
    mean = np.add.reduceat(ordered, starts) / sizes
    deviations = ordered - np.repeat(mean, sizes)
    with np.errstate(divide="ignore", invalid="ignore"):
        variance = np.add.reduceat(deviations * deviations, starts) / (sizes - 1)
        cv = np.sqrt(variance) / mean
    return np.where(sizes >= 2, cv, np.nan)
