"""What a race claims, and how the replays score each claim: the sizes an answer covers,
every drop, pick, tie and size change (benchmarks/race_replay.py), and the plan's words."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from benchmark_scripts import load_benchmark
from typer.testing import CliRunner

from experiments.cli import app
from experiments.race.answer import answer_text
from experiments.race.decide import Decision
from experiments.race.engine import Race, replay, size_order
from experiments.race.rules import ACROSS, BY_SIZE, TIE, WINNER, RaceRules

MIB = 2**20
GIB = 2**30
SIZES4 = [16 * MIB, 32 * MIB, 64 * MIB, 128 * MIB]
replays = load_benchmark("race_replay")


def test_the_block_order_reaches_both_ends_first() -> None:
    assert size_order(SIZES4) == [16 * MIB, 128 * MIB, 32 * MIB, 64 * MIB]
    ten = [g * GIB for g in range(1, 11)]
    order = size_order(ten)
    assert order[:2] == [GIB, 10 * GIB] and sorted(order) == ten
    assert size_order([64 * MIB]) == [64 * MIB]


def _race(means: dict[str, float], sizes: list[int], rules: RaceRules, seed: int = 2) -> Race:
    noise = random.Random(seed)

    def sample(c: str, size: int, _it: int) -> float:
        return means[c] * size / MIB * math.exp(noise.gauss(0, 0.02))

    return replay(Race.start(list(means), sizes, ACROSS, rules, seed), sample)


def test_an_answer_says_which_sizes_it_timed() -> None:
    means = {"kary:1": 1.0, "kary:2": 2.0, "kary:4": 4.0}
    ten = [g * GIB for g in range(1, 11)]
    race = _race(means, ten, RaceRules())
    text = answer_text(race)
    assert race.lanes[0].outcome == WINNER
    # Decided at its first look (3 blocks): 1G, 10G and the size between them.
    assert "timed at 1G, 3G, 10G, both ends of 1G-10G" in text, text
    every = _race(means, SIZES4[:2], RaceRules())
    assert "timed at every size asked, 16M, 32M" in answer_text(every)


def test_an_answer_for_part_of_the_range_says_so() -> None:
    # A race kept before the block order reached both ends (smallest first): what its
    # complete blocks timed is all it answers for.
    race = Race.start(["a", "b"], SIZES4, ACROSS, RaceRules(), seed=1)
    lane = race.lanes[0]
    from experiments.race.engine import Block

    for iteration, size in enumerate(SIZES4[:3]):
        block = Block(lane.key, size, iteration, ["a", "b"])
        race.blocks.append(block)
        race.record(block, {"a": size / MIB, "b": 3 * size / MIB})
    text = answer_text(race)
    assert "timed at 16M, 32M, 64M only: an answer for 16M-64M, not the 16M-128M asked" in text


def _scenario(means: dict[str, float], **kw: object) -> object:
    return replays.Scenario(
        "t", "test", list(means), SIZES4, ACROSS, lambda c, s: means[c] * s / MIB, **kw
    )


def _ended(candidates: list[str], outcome: str, survivors: list[str], dropped: list[str],
           crossing: dict[str, object] | None = None) -> Race:  # fmt: skip
    race = Race.start(candidates, SIZES4, ACROSS, RaceRules(), seed=1)
    lane = race.lanes[0]
    from experiments.race.decide import Comparison

    comparisons = [
        Comparison(c, 1.0, 0.9, 1.1, 0.01, 0.01, None, dropped=c in dropped) for c in candidates[1:]
    ]
    lane.decisions = [
        Decision(3, candidates, candidates[0], "t", None, 0.01, comparisons, outcome, crossing)
    ]
    lane.survivors, lane.outcome = survivors, outcome
    return race


def test_the_replays_score_every_drop_not_only_the_answer() -> None:
    scenario = _scenario({"a": 1.0, "b": 1.02, "c": 2.0})
    # b is within the zone of a: dropping it is false, though the pick a is right.
    race = _ended(["a", "b", "c"], WINNER, ["a"], ["b", "c"])
    scored = replays.score(scenario, race, 0.05)
    assert scored["false_drop"] and not scored["wrong_pick"]
    assert scored["verdict"] == "wrong"
    right = replays.score(scenario, _ended(["a", "b", "c"], TIE, ["a", "b"], ["c"]), 0.05)
    assert right["verdict"] == "right" and not any(right[c] for c in replays.CLAIMS)


def test_a_tie_that_left_out_an_equal_one_is_incomplete() -> None:
    scenario = _scenario({"a": 1.0, "b": 1.0, "c": 1.0, "d": 3.0})
    race = _ended(["a", "b", "c", "d"], TIE, ["a", "b"], ["c", "d"])
    scored = replays.score(scenario, race, 0.05)
    assert scored["incomplete_tie"] and scored["false_drop"] and not scored["wrong_tie"]
    wrong = replays.score(scenario, _ended(["a", "b", "c", "d"], TIE, ["a", "d"], []), 0.05)
    assert wrong["wrong_tie"]


def test_a_size_change_is_scored_on_each_size_it_names() -> None:
    def changing(c: str, s: int) -> float:
        return s / MIB * (1.0 if c == "a" else 0.5 if s == SIZES4[-1] else 1.5)

    scenario = replays.Scenario("t", "test", ["a", "b"], SIZES4, ACROSS, changing)
    true = {
        "candidate": "b",
        "leader": "a",
        "sizes_faster": [SIZES4[-1]],
        "sizes_slower": [SIZES4[0]],
    }
    false = {**true, "sizes_faster": [SIZES4[0]], "sizes_slower": [SIZES4[-1]]}
    named = replays.score(scenario, _ended(["a", "b"], BY_SIZE, ["a", "b"], [], true), 0.05)
    assert named["verdict"] == "right" and not named["false_size"]
    wrong = replays.score(scenario, _ended(["a", "b"], BY_SIZE, ["a", "b"], [], false), 0.05)
    assert wrong["false_size"] and wrong["verdict"] == "wrong"
    missed = replays.score(scenario, _ended(["a", "b"], WINNER, ["a"], ["b"]), 0.05)
    assert missed["missed_size"]


def test_validation_and_tuning_seeds_never_meet() -> None:
    tuning, validation = replays.TUNING_SEEDS, replays.VALIDATION_SEEDS
    assert tuning.stop <= validation.start
    # Box scenarios never resample the runs that set their truth.
    box = [s for s in replays.scenarios() if s.name.startswith("box-")]
    assert box and all("truth from 2 runs" in s.what for s in box)


def _dry(tmp_path: Path, *extra: str, topos: str = "kary:1,kary:7", nodes: str = "8") -> list[str]:
    return ["race", "--backend", "local", "--exact-nodes", nodes, "--topo", topos,
            "--sizes", "16M,64M", "--dry-run", "--data-dir", str(tmp_path), *extra]  # fmt: skip


@pytest.mark.full_replays
def test_the_expected_case_is_a_median_of_200_replays_with_its_range(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, _dry(tmp_path))
    assert result.exit_code == 0, result.output
    expected = next(line for line in result.output.splitlines() if line.startswith("expected"))
    assert "median of 200 replays on the model, 10-90% $" in expected
    assert "of them decided" in expected


def test_a_zero_blob_history_sets_no_spread_for_random_blobs(
    tmp_path: Path, flux_distribute: Path
) -> None:
    history = flux_distribute / "parsed-eks-exact-6"
    result = CliRunner().invoke(
        app, [*_dry(tmp_path, "--blob", "random", "--history", str(history))]
    )
    assert result.exit_code == 0, result.output
    assert "history's repeats are of zeros blobs, which say nothing of random ones" in (
        result.output
    )


def test_best_expected_and_worst_are_in_order_and_a_too_small_cap_is_refused_first(
    tmp_path: Path,
) -> None:
    import json

    result = CliRunner().invoke(app, [*_dry(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    cases = {c["key"]: c for c in json.loads(result.output)["cases"]}
    assert cases["best"]["usd"] <= cases["expected"]["usd"] <= cases["worst"]["usd"]
    low, high = cases["expected"]["usd_low"], cases["expected"]["usd_high"]
    assert low <= cases["expected"]["usd"] <= high
    capped = CliRunner().invoke(
        app,
        ["race", "--cluster", "clusters/eks-6.yaml", "--exact-nodes", "6", "--sizes", "1G,2G",
         "--max-cost", "0.01", "--dry-run", "--data-dir", str(tmp_path)],
    )  # fmt: skip
    assert capped.exit_code == 2
    # Refused before any plan is printed: no expected or worst under its best.
    assert "expected (replayed)" not in capped.output
    assert "does not pay for the race's first test" in capped.output


def test_a_budget_the_model_says_cannot_decide_is_named_with_one_that_could(
    tmp_path: Path,
) -> None:
    result = CliRunner().invoke(
        app, _dry(tmp_path, "--first-test", "2", "--max-blocks", "2", topos="kary:1,kary:2")
    )
    assert result.exit_code == 0, result.output
    warning = next(line for line in result.output.splitlines() if line.startswith("warning:"))
    assert "--max-blocks 2 not to decide this race" in warning
    assert "--max-blocks" in warning.split(";")[-1] and "likely would" in warning
    refused = CliRunner().invoke(app, _dry(tmp_path, "--first-test", "4", "--max-blocks", "3"))
    assert refused.exit_code == 2
    assert "invalid --max-blocks 3: the first test is after 4 blocks" in refused.output
