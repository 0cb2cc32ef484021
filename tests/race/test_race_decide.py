"""The race's test after a block (experiments/race/decide.py) on times whose answer is known."""

from __future__ import annotations

import math
import random

import pytest

from experiments.race.decide import decide, holm
from experiments.race.rules import BY_SIZE, CONTINUE, TIE, WINNER, RaceRules

MIB = 2**20
RULES = RaceRules()


def _blocks(means: list[float], blocks: int, spread: float, seed: int = 1) -> list[list[float]]:
    noise = random.Random(seed)
    return [[m * math.exp(noise.gauss(0, spread)) for m in means] for _ in range(blocks)]


def test_holm_is_statsmodels_holm() -> None:
    from statsmodels.stats.multitest import multipletests

    noise = random.Random(7)
    for size in (1, 2, 5, 15):
        values = [noise.random() ** 3 for _ in range(size)]
        assert holm(values) == pytest.approx(list(multipletests(values, method="holm")[1]))


def test_nothing_is_dropped_before_the_first_test() -> None:
    times = _blocks([1.0, 3.0, 5.0], RULES.first_test - 1, 0.01)
    decision = decide(["a", "b", "c"], times, RULES)
    assert decision.outcome == CONTINUE
    assert decision.dropped == []
    assert decision.p is None and "first test" in decision.test


def test_a_clear_winner_is_left_alone() -> None:
    times = _blocks([1.0, 1.6, 2.5, 4.0], 6, 0.1)
    decision = decide(["a", "b", "c", "d"], times, RULES)
    assert decision.best == "a"
    assert decision.outcome == WINNER
    assert sorted(decision.dropped) == ["b", "c", "d"]
    assert all(c.p_adjusted is not None and c.p_adjusted < 0.05 for c in decision.comparisons)


def test_every_block_ranking_alike_uses_paired_t_tests() -> None:
    # Conover's statistic divides by a zero residual here; paired t-tests on log times
    # weigh how far apart they are: b is close to a (unsure), c far (dropped).
    times = [[1.0, 1.001 + 0.05 * (i % 2), 3.0 + 0.1 * i] for i in range(5)]
    decision = decide(["a", "b", "c"], times, RULES)
    assert "paired t-tests" in decision.test
    from scipy.stats import ttest_1samp

    diffs = [[math.log(row[j] / row[0]) for row in times] for j in (1, 2)]
    expected = [float(ttest_1samp(d, 0.0).pvalue) for d in diffs]
    assert [c.p for c in decision.comparisons] == pytest.approx(expected)
    assert [c.p_adjusted for c in decision.comparisons] == pytest.approx(holm(expected))
    assert decision.dropped == ["c"]


def test_two_within_the_zone_tie_with_their_interval() -> None:
    times = _blocks([10.0, 10.0], 10, 0.01)
    decision = decide(["a", "b"], times, RULES)
    assert decision.outcome == TIE
    (other,) = decision.comparisons
    assert other.p_equivalent is not None and other.p_equivalent < 0.05
    assert 1 / 1.05 < other.ratio_low <= other.ratio <= other.ratio_high < 1.05


def test_two_apart_by_more_than_the_zone_never_tie() -> None:
    for seed in range(20):
        times = _blocks([10.0, 11.0], 8, 0.02, seed)
        assert decide(["a", "b"], times, RULES).outcome != TIE


def test_a_best_that_changes_with_size_is_named() -> None:
    sizes = [16 * MIB, 32 * MIB, 64 * MIB, 128 * MIB] * 3
    noise = random.Random(3)
    times = [[s / MIB * math.exp(noise.gauss(0, 0.02)), 1.4 * (s / MIB) ** 0.7 * 3] for s in sizes]
    decision = decide(["a", "b"], times, RULES, sizes=sizes, size_range=(16 * MIB, 128 * MIB))
    assert decision.outcome == BY_SIZE
    assert decision.crossing is not None
    small, large = decision.crossing["faster_small"], decision.crossing["faster_large"]
    # b grows slower than a: a wins small blobs, b large ones.
    assert (small, large) == ("a", "b")
    assert 16 * MIB < decision.crossing["crossing_bytes"] < 128 * MIB


def test_a_candidate_gaining_with_size_is_kept_not_dropped() -> None:
    # c is slower at the small sizes seen so far but gains fast: not dropped yet.
    sizes = [16 * MIB, 32 * MIB, 64 * MIB, 16 * MIB, 32 * MIB, 64 * MIB]
    noise = random.Random(5)
    times = [
        [
            s / MIB * math.exp(noise.gauss(0, 0.02)),
            3 * s / MIB,
            3.0 * (s / MIB) * (16 * MIB / s) ** 0.5 * math.exp(noise.gauss(0, 0.02)),
        ]
        for s in sizes
    ]
    decision = decide(["a", "b", "c"], times, RULES, sizes=sizes, size_range=(16 * MIB, 1024 * MIB))
    assert "b" in decision.dropped
    kept = {c.candidate: c for c in decision.comparisons}["c"]
    assert kept.kept_for_size and not kept.dropped


def test_the_size_line_is_linregress() -> None:
    import numpy as np
    from scipy.stats import linregress

    from experiments.race.size_trend import size_fit

    noise = random.Random(11)
    sizes = [16 * MIB, 32 * MIB, 64 * MIB, 128 * MIB] * 2
    diff = np.array([0.1 * math.log2(s / MIB) + noise.gauss(0, 0.05) for s in sizes])
    mine, theirs = size_fit(diff, sizes), linregress(np.log2(sizes), diff)
    assert mine is not None
    assert (mine.slope, mine.intercept, mine.pvalue) == pytest.approx(
        (theirs.slope, theirs.intercept, theirs.pvalue)
    )


def test_conditional_power_is_the_projection_it_describes() -> None:
    # futility.py's closed form against a simulation of the same projection: the
    # future blocks drawn with the mean and spread seen, then the drop and tie rules
    # applied to the mean at max_blocks.
    from statistics import NormalDist, fmean, stdev

    from experiments.race.futility import conditional_power

    rules = RaceRules()
    noise = random.Random(11)
    for gap, spread, comparisons in ((0.02, 0.1, 1), (0.06, 0.1, 3), (0.0, 0.04, 2)):
        seen = [noise.gauss(gap, spread) for _ in range(6)]
        d, s, n, last = fmean(seen), stdev(seen), len(seen), rules.max_blocks
        z = NormalDist().inv_cdf
        to_drop = z(1 - rules.alpha / (2 * comparisons)) * s / math.sqrt(last)
        inside = rules.margin - z(1 - rules.alpha / comparisons) * s / math.sqrt(last)
        hits, draws = 0, 20000
        for _ in range(draws):
            final = (n * d + sum(noise.gauss(d, s) for _ in range(last - n))) / last
            hits += abs(final) > to_drop or abs(final) < inside
        assert conditional_power(seen, comparisons, rules) == pytest.approx(hits / draws, abs=0.02)


def test_an_undecidable_pair_is_futile_and_futility_zero_turns_it_off() -> None:
    times = _blocks([10.0, 10.3, 30.0], 6, 0.12, seed=6)
    decision = decide(["a", "b", "c"], times, RULES)
    assert decision.outcome == CONTINUE and "c" in decision.dropped
    assert decision.futile is not None and decision.futile.startswith("b and a")
    assert decide(["a", "b", "c"], times, RaceRules(futility=0.0)).futile is None
    # A clear gap is never futile: the tests will decide it.
    assert decide(["a", "b"], _blocks([10.0, 14.0], 5, 0.12), RULES).futile is None
