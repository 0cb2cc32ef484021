"""Across sizes, how a candidate's time relative to the best changes with the size.

A race across sizes runs its sizes smallest first, so a topology that is slow on
small blobs but gains on large ones must not be dropped before the large ones are
timed, and a best that changes with size must be named, not averaged away.  Each
survivor's log-ratio to the best is fitted as a least-squares line in log2
size and read at the ends of the sizes the race asks for (see decide.py, rules
2 and 3).

The line is scipy's `linregress`, computed with numpy and scipy.special's
Student t: linregress itself spends about 3 ms a call in its argument
checks, which made it half of a replayed race's time (a test holds the two equal).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from experiments.race.rules import RaceRules

__all__ = ["Line", "any_trend", "crossing", "gaining_with_size", "size_fit"]


@dataclass(frozen=True)
class Line:
    """What `scipy.stats.linregress` says of a line: slope, intercept, the slope's
    two-sided p (t-test of slope 0, n - 2 degrees of freedom)."""

    slope: float
    intercept: float
    pvalue: float


def size_fit(diff: Any, sizes: Sequence[int]) -> Line | None:
    """The log-ratio's least-squares line on log2 size, or None with fewer than 3 sizes."""
    import numpy as np
    from scipy.special import stdtr

    x = np.log2(np.asarray(sizes, dtype=float))
    if len(set(sizes)) < 3 or np.all(diff == diff[0]):
        return None
    n = len(x)
    dx, dy = x - x.mean(), diff - diff.mean()
    sxx = float(dx @ dx)
    slope = float(dx @ dy) / sxx
    intercept = float(diff.mean()) - slope * float(x.mean())
    residual = dy - slope * dx
    spread = float(residual @ residual) / (n - 2)
    if spread == 0.0:
        return Line(slope, intercept, 0.0 if slope else 1.0)
    t = slope / math.sqrt(spread / sxx)
    return Line(slope, intercept, float(2 * stdtr(n - 2, -abs(t))))


def gaining_with_size(
    logs: Any,
    best: int,
    others: list[int],
    sizes: Sequence[int] | None,
    size_range: tuple[int, int] | None,
    rules: RaceRules,
) -> set[int]:
    """Survivors whose ratio to the best changes significantly with size and is
    predicted below 1 at one end of the sizes asked for: they may be the best there
    (see decide.py, rule 2).  Either end: a candidate that wins the small blobs is
    no more a loser than one that wins the large ones."""
    if sizes is None or size_range is None:
        return set()
    kept = set()
    ends = (math.log2(size_range[0]), math.log2(size_range[1]))
    for j in others:
        fit = size_fit(logs[:, j] - logs[:, best], sizes)
        if fit is None or not fit.pvalue < rules.alpha:
            continue
        if min(fit.intercept + fit.slope * end for end in ends) < 0:
            kept.add(j)
    return kept


def any_trend(
    logs: Any,
    best: int,
    rest: list[str],
    index: dict[str, int],
    sizes: Sequence[int],
    rules: RaceRules,
) -> bool:
    for c in rest:
        fit = size_fit(logs[:, index[c]] - logs[:, best], sizes)
        if fit is not None and fit.pvalue < rules.alpha:
            return True
    return False


def crossing(
    logs: Any,
    best_name: str,
    best: int,
    rest: list[str],
    index: dict[str, int],
    sizes: Sequence[int] | None,
    size_range: tuple[int, int] | None,
    rules: RaceRules,
) -> dict[str, Any] | None:
    """A survivor significantly slower than the best at one end of the sizes asked for
    and significantly faster at the other, else None."""
    import numpy as np
    from scipy.special import stdtrit

    if sizes is None or size_range is None:
        return None
    x = np.log2(np.asarray(sizes, dtype=float))
    ends = [math.log2(size_range[0]), math.log2(size_range[1])]
    for c in rest:
        diff = logs[:, index[c]] - logs[:, best]
        fit = size_fit(diff, sizes)
        if fit is None or len(diff) < 4:
            continue
        n = len(diff)
        residual = diff - (fit.intercept + fit.slope * x)
        s = math.sqrt(float((residual**2).sum()) / (n - 2))
        spread_x = float(((x - x.mean()) ** 2).sum())
        # Bonferroni over the survivors and over every look the lane may take: a
        # trend is sought after each block, and noise alone finds one often enough
        # otherwise (replays of all-tied races called a crossing 1 time in 5).
        alpha = rules.alpha / (rules.looks * max(1, len(rest)))
        q = float(stdtrit(n - 2, 1 - alpha / 2))
        signs = []
        for end in ends:
            mean = fit.intercept + fit.slope * end
            half = q * s * math.sqrt(1 / n + (end - x.mean()) ** 2 / spread_x)
            signs.append(1 if mean - half > 0 else -1 if mean + half < 0 else 0)
        if signs[0] * signs[1] == -1:
            small, large = (c, best_name) if signs[0] < 0 else (best_name, c)
            return {
                "faster_small": small,
                "faster_large": large,
                "crossing_bytes": int(2 ** (-fit.intercept / fit.slope)),
                "slope_p": float(fit.pvalue),
            }
    return None
