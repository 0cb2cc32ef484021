"""Paired log-time differences of two topologies, as the race's tests read them.

A block times every survivor once at one size, so the difference of two
topologies' log times in one block cancels what the block itself cost (its
size, its moment on the machine).  Across sizes the race's question is the
geometric mean over the sizes, each size weighing alike, so a pair's estimate
is the mean over the sizes timed of each size's mean difference (not the mean
over blocks, which would weigh a size by how often it happened to run):

    theta = (1 / S) sum_s mean_s(d),   var(theta) = sigma^2 (1 / S^2) sum_s 1 / n_s

sigma^2 is the residual variance within sizes (n - S degrees of freedom) once
that leaves at least `MIN_WITHIN_DF`; before, the variance around the overall
mean (n - 1), which a real size effect only inflates (the test is then the
more careful, never the less).  Each size's own mean, with the within-size
variance, is what the size-change claims test.

A pair's own variance has n - 1 degrees of freedom: 4 at a race's first test,
where a t quantile far in the tail (the levels a race spends are small) is
more than twice the normal's.  Every survivor's log times share one block
structure, so the residual variance of the two-way layout (blocks x
topologies, within each size: `pooled_variance`) estimates the same noise
with (n - S)(k - 1) degrees of freedom.  The tests use the *larger* of the
pair's own variance and the pooled one, with the pooled degrees of freedom:
a pair noisier than the rest keeps its own, larger spread (a topology that
stalls now and then is not judged by the quiet ones' noise), and a pair that
looks quieter than the rest by chance does not get a narrower test.

Everything here is numpy on a matrix of differences, one column per pair, so a
look tests every pair of 16 topologies in one pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["MIN_WITHIN_DF", "PairEstimates", "estimate_pairs", "pooled_variance"]

# The within-size variance is used once it has this many degrees of freedom.
MIN_WITHIN_DF = 2


@dataclass(frozen=True)
class PairEstimates:
    """Per pair (column): the size-weighted mean difference, its standard error and
    degrees of freedom; per timed size (row) the size's mean and standard error
    (None where the within-size variance has too few degrees of freedom)."""

    theta: Any  # (pairs,)
    se: Any  # (pairs,)
    df: int
    sizes: list[int]  # the sizes timed, ascending
    size_theta: Any  # (sizes, pairs)
    size_se: Any | None  # (sizes, pairs), or None
    size_df: int


def _line_residuals(values: Any, sizes: Sequence[int]) -> Any:
    """Each column's residuals around its own least-squares line in log2 size."""
    import numpy as np

    x = np.log2(np.asarray(sizes, dtype=float))
    design = np.column_stack([np.ones_like(x), x])
    fitted = design @ np.linalg.lstsq(design, values, rcond=None)[0]
    return values - fitted


def _lines_fit(sizes: Sequence[int] | None, n: int) -> bool:
    """A line per pair in log2 size leaves degrees of freedom: three sizes or more."""
    return sizes is not None and len(set(sizes)) >= 3 and n >= 3 + MIN_WITHIN_DF - 1


def pooled_variance(logs: Any, sizes: Sequence[int] | None) -> tuple[float, int, bool]:
    """The variance of one block's difference of two topologies' log times, from the
    two-way layout's residuals (blocks x topologies), its degrees of freedom, and
    whether it is free of size effects: within each size where that leaves enough
    degrees of freedom; else around each topology's line in log2 size (three sizes
    or more: a race at many sizes repeats none before its first test); else across
    every block, sizes ignored (False: a real size effect inflates it)."""
    import numpy as np

    x = np.asarray(logs, dtype=float)
    n, k = x.shape
    labels = np.zeros(n, dtype=int) if sizes is None else np.asarray(sizes)
    squares, df = 0.0, 0
    for label in np.unique(labels):
        rows = x[labels == label]
        if len(rows) < 2:
            continue
        residual = rows - rows.mean(axis=1, keepdims=True) - rows.mean(axis=0) + rows.mean()
        squares += float((residual**2).sum())
        df += (len(rows) - 1) * (k - 1)
    within = df >= MIN_WITHIN_DF
    if not within and sizes is not None and _lines_fit(sizes, n):
        centred = x - x.mean(axis=1, keepdims=True)
        squares, df = float((_line_residuals(centred, sizes) ** 2).sum()), (n - 2) * (k - 1)
        within = df >= MIN_WITHIN_DF
    if not within:
        residual = x - x.mean(axis=1, keepdims=True) - x.mean(axis=0) + x.mean()
        squares, df = float((residual**2).sum()), (n - 1) * (k - 1)
    return (2.0 * squares / df if df else 0.0), df, within


def estimate_pairs(
    diffs: Any, sizes: Sequence[int] | None, pooled: tuple[float, int, bool] | None = None
) -> PairEstimates:
    """`diffs`: blocks x pairs of log-time differences; `sizes`: each block's size
    (None: one size, every block alike); `pooled`: `pooled_variance` of the same
    blocks, whose larger variance and degrees of freedom the tests then use."""
    import numpy as np

    d = np.asarray(diffs, dtype=float)
    n = d.shape[0]
    labels = np.zeros(n, dtype=int) if sizes is None else np.asarray(sizes)
    timed, group = np.unique(labels, return_inverse=True)
    groups = len(timed)
    counts = np.bincount(group, minlength=groups).astype(float)
    sums = np.zeros((groups, d.shape[1]))
    np.add.at(sums, group, d)
    means = sums / counts[:, None]
    theta = means.mean(axis=0)
    within = d - means[group]
    within_df = n - groups
    if within_df >= MIN_WITHIN_DF:
        variance = (within**2).sum(axis=0) / within_df
        df = within_df
    elif sizes is not None and _lines_fit(sizes, n):
        df = n - 2
        variance = (_line_residuals(d, sizes) ** 2).sum(axis=0) / df
    else:
        overall = d - d.mean(axis=0)
        df = max(n - 1, 0)
        variance = (overall**2).sum(axis=0) / max(df, 1)
    size_df = within_df
    if pooled is not None and pooled[1] >= 1:
        variance = np.maximum(variance, pooled[0])
        df = pooled[1]
    se = np.sqrt(variance * (1.0 / counts).sum() / groups**2)
    size_se = None
    own = (within**2).sum(axis=0) / within_df if within_df >= MIN_WITHIN_DF else None
    if pooled is not None and pooled[1] >= MIN_WITHIN_DF and pooled[2]:
        # The pooled variance within sizes: each size's mean is testable from the
        # first block at it, on the layout's degrees of freedom.
        size_variance = (
            np.full(d.shape[1], pooled[0]) if own is None else np.maximum(own, pooled[0])
        )
        size_df = pooled[1]
        size_se = np.sqrt(size_variance[None, :] / counts[:, None])
    elif own is not None:
        size_se = np.sqrt(own[None, :] / counts[:, None])
    return PairEstimates(
        theta,
        se,
        df,
        [int(s) for s in timed] if sizes is not None else [],
        means,
        size_se,
        size_df,
    )
