"""Order statistics of all n x m pairwise differences y_j - x_i, without making them all.

The ratio of medians' interval (analysis.tables.stats.ratio_of_medians) is two
order statistics of the log differences between every timing of one side and
every timing of the other.  Made and sorted, those are n x m floats: 36 million
for two groups of 6,000 timings, 619 MB and 4.9 s, and a `kary compare` of two
trees of 8,000 of flux-distribute's logs (groups of up to 1,022) took 10.5 s.

With both sides sorted, the number of pairs whose difference is at most t is
one `searchsorted` of x against y - t.  So t is bisected until few pairs lie
between the bounds, and only those are made and sorted.  Where floats can split
the bounds no further (a block of equal differences) the k-th is that value.
The pairs are split by index, by the same searchsorted at each bound, so
every pair is counted once; a difference may land on the other side of a
bound than its own rounding would put it, which moves the answer by at most a
rounding of one difference.  Small inputs are made and sorted as before.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["pair_differences_at"]

# Pairs up to this many are made and sorted outright (1 MiB of floats).
MAKE_ALL_PAIRS = 1 << 17
# Bisect until at most this many pairs per timing lie between the bounds.
_WINDOW_PER_VALUE = 4


def pair_differences_at(x: np.ndarray, y: np.ndarray, ks: Sequence[int]) -> list[float]:
    """The k-th smallest (1-based) of y[j] - x[i] over all pairs, for each k of `ks`;
    x and y sorted."""
    n, m = len(x), len(y)
    if not all(1 <= k <= n * m for k in ks):
        raise ValueError(f"each k of {list(ks)} must be in 1..{n * m}")
    if n * m <= MAKE_ALL_PAIRS:
        every = np.partition((y[None, :] - x[:, None]).ravel(), [k - 1 for k in ks])
        return [float(every[k - 1]) for k in ks]
    return [_bisected(x, y, k) for k in ks]


def _bisected(x: np.ndarray, y: np.ndarray, k: int) -> float:
    """The k-th smallest difference, by bisecting on how many pairs lie at or below t."""
    n, m = len(x), len(y)
    lo, hi = float(y[0] - x[-1]), float(y[-1] - x[0])
    # Bounds a little outside the extremes: no pair at or below lo, every one at or
    # below hi, whatever the rounding of y - t.
    margin = 1e-9 * max(abs(lo), abs(hi), 1.0)
    lo, hi = lo - margin, hi + margin

    def at_most(t: float) -> int:
        """Pairs with y[j] - x[i] <= t, taken as x[i] >= y[j] - t."""
        return int(n * m - np.searchsorted(x, y - t, side="left").sum())

    below, up_to_hi = at_most(lo), at_most(hi)
    while up_to_hi - below > _WINDOW_PER_VALUE * (n + m):
        mid = lo + (hi - lo) / 2
        if not lo < mid < hi:
            return hi  # every pair still between the bounds has this difference
        count = at_most(mid)
        if count >= k:
            hi, up_to_hi = mid, count
        else:
            lo, below = mid, count
    # The pairs between the bounds: per j, the i from first[j] (x[i] >= y[j] - hi) up
    # to last[j] (x[i] < y[j] - lo).
    first = np.searchsorted(x, y - hi, side="left")
    last = np.searchsorted(x, y - lo, side="left")
    counts = last - first
    # Row indices first[j], first[j] + 1, ..., last[j] - 1 for each j in turn.
    steps = np.arange(counts.sum()) - np.repeat(counts.cumsum() - counts, counts)
    rows = np.repeat(first, counts) + steps
    columns = np.repeat(np.arange(m), counts)
    between = np.sort(y[columns] - x[rows])
    return float(between[k - below - 1])
