"""group_stats (numpy alone) agrees with pandas' own group statistics."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.tables.group_stats import group_stats


def test_group_stats_match_pandas_groupby_on_random_groups() -> None:
    rng = np.random.default_rng(7)
    count = 40
    # Groups of 1 to 12 values, in shuffled rows, some failed, some without a time.
    sizes = rng.integers(1, 13, count)
    gid = rng.permutation(np.repeat(np.arange(count), sizes))
    values = np.round(rng.gamma(2.0, 1.5, len(gid)), 3)
    ok = rng.random(len(gid)) > 0.1
    values[rng.random(len(gid)) < 0.03] = np.nan
    stats = group_stats(values, ok, gid, count)

    counted = ok & ~np.isnan(values)
    by = pd.Series(values[counted]).groupby(gid[counted])
    index = np.arange(count)
    expected = {
        "median": by.median(),
        "q1": by.quantile(0.25),
        "q3": by.quantile(0.75),
        "min": by.min(),
        "max": by.max(),
        "cv": by.std(ddof=1) / by.mean(),
    }
    for name, series in expected.items():
        np.testing.assert_allclose(
            stats[name], series.reindex(index).to_numpy(), rtol=1e-12, equal_nan=True
        )
    assert stats["n"].tolist() == np.bincount(gid[counted], minlength=count).tolist()
    assert stats["failed"].tolist() == np.bincount(gid[~counted], minlength=count).tolist()
    # Only groups of three or more ok timings have an interval, inside [min, max].
    has_ci = stats["n"] >= 3
    assert not np.isnan(stats["ci_low"][has_ci]).any()
    assert np.isnan(stats["ci_low"][~has_ci]).all()
    assert (stats["ci_low"][has_ci] >= stats["min"][has_ci]).all()
    assert (stats["ci_high"][has_ci] <= stats["max"][has_ci]).all()


def test_group_stats_of_groups_without_an_ok_row_are_empty() -> None:
    stats = group_stats(
        np.array([1.0, 2.0, np.nan]), np.array([False, False, True]), np.array([0, 0, 1]), 3
    )
    assert stats["n"].tolist() == [0, 0, 0]
    assert stats["failed"].tolist() == [2, 1, 0]
    for name in ("median", "q1", "min", "max", "ci_low", "cv"):
        assert np.isnan(stats[name]).all(), name
