"""Statistics for few iterations: exact coverages, empty where undefined, failures counted."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from analysis import median_ci_ranks, ratio_of_medians, summarize, topology_order_key
from analysis.tables import pair_differences
from analysis.tables.pair_differences import pair_differences_at
from analysis.tables.stats import _mann_whitney_counts, _shift_interval_rank


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (1, None),
        (2, None),
        (3, (0, 2, 0.75)),
        (5, (0, 4, 0.9375)),
        (6, (0, 5, 0.96875)),
        (10, (1, 8, 0.978515625)),  # the textbook sign-test interval [x(2), x(9)]
    ],
)
def test_median_ci_ranks_have_exact_coverage(
    n: int, expected: tuple[int, int, float] | None
) -> None:
    assert median_ci_ranks(n) == expected


@pytest.mark.parametrize("n", [11, 100, 1001])
def test_median_ci_ranks_of_large_groups_are_the_sign_tests(n: int) -> None:
    # The narrowest order statistics x(j), x(n+1-j) whose exact coverage, 1 - 2
    # P(Bin(n, 1/2) < j), is still at least 95%, each term from math.comb.
    below, expected = 0, None
    for j in range(1, n // 2 + 1):
        below += math.comb(n, j - 1)
        if 1 - 2 * below / 2**n < 0.95:
            break
        expected = (j - 1, n - j, 1 - 2 * below / 2**n)
    assert expected is not None and median_ci_ranks(n) == expected


def test_mann_whitney_counts_are_the_exact_null_distribution() -> None:
    assert _mann_whitney_counts(3, 3) == [1, 1, 2, 3, 3, 3, 3, 2, 1, 1]
    assert sum(_mann_whitney_counts(7, 9)) == math.comb(16, 7)


def test_summary_uses_ok_rows_only_and_leaves_undefined_cells_empty() -> None:
    frame = pd.DataFrame(
        {
            "g": ["a"] * 4 + ["b"] * 2 + ["c"],
            "time_seconds": [3.0, 1.0, 2.0, 0.015, 5.0, None, None],
            "status": ["ok", "ok", "ok", "failed", "ok", "failed", "failed"],
        }
    )
    # A failed step's time (here flux-distribute-style 0.015 s) is never averaged in.
    frame.loc[frame["status"] == "failed", "time_seconds"] = np.nan
    out = summarize(frame, ["g"]).set_index("g")
    assert out.loc["a", ["n", "failed", "median", "q1", "q3", "min", "max"]].tolist() == [
        3, 1, 2.0, 1.5, 2.5, 1.0, 3.0,
    ]  # fmt: skip
    assert out.loc["a", ["ci_low", "ci_high", "ci_coverage"]].tolist() == [1.0, 3.0, 0.75]
    assert out.loc["a", "cv"] == pytest.approx(0.5)
    assert out.loc["b", ["n", "failed", "median"]].tolist() == [1, 1, 5.0]
    assert out.loc["b", ["ci_low", "ci_high", "ci_coverage", "cv"]].isna().all()
    assert out.loc["c", ["n", "failed"]].tolist() == [0, 1]
    assert out.loc["c", ["median", "min", "max"]].isna().all()


def test_ratio_interval_respects_few_iterations() -> None:
    three = ratio_of_medians(np.array([1.0, 1.1, 1.05]), np.array([1.5, 1.6, 1.55]))
    assert three is not None
    assert (round(three.ratio, 4), three.coverage) == (1.4762, 0.9)
    assert three.low == pytest.approx(1.5 / 1.1) and three.high == pytest.approx(1.6 / 1.0)
    one = ratio_of_medians(np.array([1.0]), np.array([2.0]))
    assert one is not None and (one.ratio, one.low, one.high, one.coverage) == (
        2.0,
        None,
        None,
        None,
    )
    assert ratio_of_medians(np.array([]), np.array([1.0])) is None
    many = ratio_of_medians(np.linspace(1, 2, 60), np.linspace(1, 2, 60) * 1.2)
    assert many is not None and many.coverage == 0.95 and many.low < 1.2 < many.high


def test_topologies_sort_as_a_reader_expects() -> None:
    names = ["binomial", "kary:16", "kary:2", "kary-10", "kary:1", "mincrit", "kary:0", "weird"]
    assert sorted(names, key=topology_order_key) == [
        "kary:1", "kary:2", "kary-10", "kary:16", "kary:0", "binomial", "mincrit", "weird",
    ]  # fmt: skip


@pytest.mark.parametrize("ties", [False, True])
def test_rank_test_gives_scipys_p_values(ties: bool) -> None:
    from scipy.stats import mannwhitneyu

    from analysis.tables.stats import rank_test

    rng = np.random.default_rng(11)
    for _ in range(400):
        n, m = (int(k) for k in rng.integers(1, 14, size=2))
        if ties:  # few distinct values: scipy switches to the normal approximation
            a, b = rng.integers(0, 4, n).astype(float), rng.integers(0, 4, m).astype(float)
        else:  # exact when a side has at most 8 runs
            a, b = rng.normal(0, 1, n), rng.normal(rng.normal(), 1, m)
        test = rank_test(a, b)
        assert test is not None and (test.n_a, test.n_b) == (n, m)
        expected = float(mannwhitneyu(a, b, alternative="two-sided").pvalue)
        assert test.p == pytest.approx(1.0 if math.isnan(expected) else expected, rel=1e-12)
    assert rank_test(np.array([]), np.array([1.0])) is None
    # Every run of one side below every run of the other: p = 2 / C(8, 4).
    low, high = np.array([1.0, 1.1, 1.2, 1.3]), np.array([2.0, 2.1, 2.2, 2.3])
    assert rank_test(low, high).p == pytest.approx(2 / 70)  # type: ignore[union-attr]


def test_statistics_do_not_import_scipy() -> None:
    # scipy.stats costs 0.7 s of every parse and report that imported it.
    code = (
        "import sys, numpy as np\n"
        "from analysis.tables.stats import rank_test, ratio_of_medians\n"
        "rank_test(np.arange(20.0), np.arange(30.0) + 3)\n"
        "ratio_of_medians(np.arange(1.0, 60), np.arange(1.0, 60) * 1.1)\n"
        "print('scipy' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_grouping_by_the_telling_keys_gives_the_summary_of_all_keys() -> None:
    from analysis.tables.frames import _SUMMARY_GROUPS, SUMMARY_KEYS

    rng = np.random.default_rng(7)
    rows = 400
    events = ["create-archive", "distribute-all-nodes", "distribute-leaf-nodes"]
    sizes = [(16 * 2**20, "16M"), (2**30, "1G")]
    frame = pd.DataFrame(
        {
            "backend": rng.choice(["local", "flux"], rows),
            "cluster": "",
            "place": rng.choice(["", "box", "test-instance"], rows),
            "links": rng.choice(["", "200Mbit"], rows),
            "cpu_bound": rng.choice(["", "yes", "no"], rows),
            "blob": rng.choice(["random", "zeros"], rows),
            "nodes": rng.choice([4, 8], rows),
            "topo": rng.choice(["kary:1", "kary:2", "binomial"], rows),
            "chunksize": rng.choice(["", "256K"], rows),
            "mmap": "",
            "purge_target_size": "",
            "flux_version": rng.choice(["", "0.66.0", "0.88.0"], rows),
            "template_hash": rng.choice(["abc", "def"], rows),
            "event": rng.choice(events, rows),
            "time_seconds": rng.uniform(0.1, 5, rows),
            "status": rng.choice(["ok", "ok", "ok", "failed"], rows),
        }
    )
    frame["topology"] = frame["topo"].str.replace(":", "-")
    frame["strategy"] = frame["event"].map(lambda e: "setup" if e.startswith("create") else "all")
    size = rng.integers(0, 2, rows)
    frame["size_bytes"] = [sizes[i][0] for i in size]
    frame["size_label"] = [sizes[i][1] for i in size]
    frame["size_gb"] = frame["size_bytes"] / 2**30
    full = summarize(frame, SUMMARY_KEYS)
    quick = summarize(frame, SUMMARY_KEYS, group_by=_SUMMARY_GROUPS)
    pd.testing.assert_frame_equal(quick, full)
    assert len(full) > 20


@pytest.mark.parametrize("make_all_pairs", [0, pair_differences.MAKE_ALL_PAIRS])
@pytest.mark.parametrize("kind", ["spread", "ties", "equal", "close"])
def test_pair_differences_bisected_or_made_all_are_the_sorted_ones(
    kind: str, make_all_pairs: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 0: bisect even these small ones; else all are made (every case here is small).
    monkeypatch.setattr(pair_differences, "MAKE_ALL_PAIRS", make_all_pairs)
    rng = np.random.default_rng(11)
    for n, m in [(1, 1), (1, 40), (37, 5), (60, 59)]:
        if kind == "spread":
            x, y = rng.normal(size=n), rng.normal(0.3, 2.0, size=m)
        elif kind == "ties":
            x, y = rng.integers(0, 4, n).astype(float), rng.integers(0, 4, m).astype(float)
        elif kind == "equal":
            x, y = np.full(n, 0.25), np.full(m, 0.25)
        else:  # log times a few percent apart, as a compare's are
            x, y = np.log(rng.lognormal(0, 0.01, n)), np.log(rng.lognormal(0.001, 0.01, m))
        x, y = np.sort(x), np.sort(y)
        every = np.sort((y[None, :] - x[:, None]).ravel())
        ks = sorted({1, n * m, (n * m + 1) // 2, int(rng.integers(1, n * m + 1))})
        got = pair_differences_at(x, y, ks)
        assert got == pytest.approx([every[k - 1] for k in ks], rel=1e-12, abs=1e-12), (n, m)


def test_the_ratio_interval_of_large_groups_is_the_pairwise_one() -> None:
    rng = np.random.default_rng(5)
    before, after = rng.lognormal(0, 0.2, 700), rng.lognormal(0.05, 0.2, 600)
    interval = ratio_of_medians(before, after)  # 420,000 pairs: bisected, not made
    assert interval is not None and interval.coverage == 0.95
    every = np.sort((np.log(after)[None, :] - np.log(before)[:, None]).ravel())
    k, _ = _shift_interval_rank(700, 600, 0.95)
    assert interval.low == pytest.approx(np.exp(every[k - 1]), rel=1e-12)
    assert interval.high == pytest.approx(np.exp(every[700 * 600 - k]), rel=1e-12)
