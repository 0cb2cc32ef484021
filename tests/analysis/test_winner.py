"""One winner rule (analysis/tables/stats.py): the fastest by median is named only where
Mann-Whitney separates it from every other; a tie is a tie, too few runs is unsure."""

from __future__ import annotations

from analysis.tables.stats import find_winner, winner

FAST = [10.0, 10.2, 10.1, 10.3]
SLOW = [20.0, 20.4, 20.1, 20.2]


def test_clearly_separated_samples_name_the_fast_one() -> None:
    samples = {"kary:4": SLOW, "kary:1": FAST, "kary:15": [40.0, 40.1, 40.3, 40.2]}
    assert winner(samples) == "kary:1"
    found = find_winner(samples)
    assert (found.status, found.text) == ("clear", "kary:1")
    assert found.median is not None and abs(found.median - 10.15) < 1e-9


def test_overlapping_samples_name_no_winner_and_say_they_tie() -> None:
    # kary:1's median is lower, but its runs interleave kary:2's: p = 0.69.
    samples = {"kary:1": [1.0, 3.0, 5.0, 7.0], "kary:2": [2.0, 4.0, 6.0, 8.0]}
    assert winner(samples) is None
    found = find_winner(samples)
    assert (found.fastest, found.status) == ("kary:1", "tie")
    assert found.text == "none (kary:1 and kary:2 tie: p = 0.69)"


def test_one_tie_among_several_is_enough_for_no_winner() -> None:
    samples = {"kary:1": FAST, "kary:2": [10.1, 10.25, 9.9, 10.4], "kary:4": SLOW}
    assert winner(samples) is None
    assert find_winner(samples).ties == ["kary:2"]


def test_a_tie_with_several_says_the_smallest_p() -> None:
    samples = {"a": [1.0, 2.0, 3.0, 4.0], "b": [1.5, 2.5, 3.5, 4.5], "c": [2.8, 2.9, 3.1, 3.2]}
    assert find_winner(samples).text == "none (a ties b and c: p >= 0.69)"


def test_runs_too_few_for_p_below_alpha_are_unsure_whatever_the_timings() -> None:
    # 3 against 3 gives at best p = 0.1.
    samples = {"kary:1": FAST[:3], "kary:2": SLOW[:3]}
    assert winner(samples) is None
    assert find_winner(samples).text == "unsure (too few runs: n=3)"


def test_nothing_to_compare_names_no_winner() -> None:
    assert winner({"kary:1": FAST, "kary:2": []}) is None
    assert find_winner({"kary:1": FAST, "kary:2": []}).text == "none (only kary:1 has samples)"
    assert find_winner({"kary:1": []}).text == "none (no samples)"
