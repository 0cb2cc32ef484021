"""The race's state machine (experiments/race/engine.py): blocks, voids, budget, JSON."""

from __future__ import annotations

import math
import random

from experiments.race.answer import answer_text
from experiments.race.engine import MAX_VOIDS_IN_A_ROW, NOT_SEPARATED, STOPPED, Race, replay
from experiments.race.rules import ACROSS, PER_SIZE, WINNER, RaceRules

MIB = 2**20
SIZES = [16 * MIB, 32 * MIB, 64 * MIB]
MEANS = {"kary:1": 1.0, "kary:2": 2.0, "kary:4": 4.0}


def _sample(seed: int = 0):
    noise = random.Random(seed)
    return lambda c, size, _it: MEANS[c] * size / MIB * math.exp(noise.gauss(0, 0.05))


def test_blocks_run_the_ends_first_then_between_with_a_new_iteration_each() -> None:
    race = replay(Race.start(list(MEANS), SIZES, ACROSS, RaceRules(), seed=4), _sample())
    # Both ends first, then what lies between (decided at the first test, block 3).
    assert [b.size_bytes for b in race.blocks] == [SIZES[0], SIZES[2], SIZES[1]]
    assert [b.iteration for b in race.blocks] == list(range(len(race.blocks)))
    assert race.lanes[0].outcome == WINNER and race.lanes[0].survivors == ["kary:1"]
    # Stopped at the first test: nothing was run past it.
    assert len(race.blocks) == RaceRules().first_test


def test_a_voided_block_is_never_tested_and_runs_again() -> None:
    voided = {2}
    race = replay(
        Race.start(list(MEANS), SIZES, ACROSS, RaceRules(), seed=4),
        _sample(),
        void=lambda it: "kary:2 failed: rc 1" if it in voided else None,
    )
    lane = race.lanes[0]
    assert race.blocks[2].void == "kary:2 failed: rc 1" and race.blocks[2].times is None
    assert 2 not in lane.blocks
    # The void block's size runs again, under the next iteration.
    assert race.blocks[3].size_bytes == race.blocks[2].size_bytes
    # Every decision used complete blocks only, and the first came after 5 of them.
    tested = [d for d in lane.decisions if d.p is not None]
    assert tested[0].blocks == RaceRules().first_test
    assert [d.blocks for d in lane.decisions] == list(range(1, len(lane.decisions) + 1))
    assert len(race.blocks) == RaceRules().first_test + 1


def test_blocks_void_again_and_again_stop_the_lane() -> None:
    race = replay(
        Race.start(list(MEANS), SIZES, ACROSS, RaceRules(), seed=1),
        _sample(),
        void=lambda it: "rank 3 lost",
    )
    assert race.lanes[0].outcome == STOPPED
    assert len(race.blocks) == MAX_VOIDS_IN_A_ROW
    assert race.lanes[0].decisions == []


def test_the_budget_ends_an_undecided_race_not_separated() -> None:
    rules = RaceRules(first_test=3, max_blocks=4, futility=0.0)
    tied = lambda c, size, it: size / MIB * (1 + 0.2 * ((it + int(c[-1])) % 3))  # noqa: E731
    race = replay(Race.start(list(MEANS), SIZES, ACROSS, rules, seed=2), tied)
    assert race.lanes[0].outcome == NOT_SEPARATED
    assert len(race.lanes[0].blocks) == 4


def test_per_size_lanes_interleave_their_blocks() -> None:
    race = replay(Race.start(list(MEANS), SIZES, PER_SIZE, RaceRules(), seed=3), _sample())
    assert [b.size_bytes for b in race.blocks[:6]] == SIZES * 2
    assert all(lane.outcome == WINNER for lane in race.lanes)
    assert {lane.key for lane in race.lanes} == {str(s) for s in SIZES}


def test_block_order_is_random_from_the_seed_and_kept() -> None:
    first = replay(Race.start(list(MEANS), SIZES, ACROSS, RaceRules(), seed=9), _sample())
    again = replay(Race.start(list(MEANS), SIZES, ACROSS, RaceRules(), seed=9), _sample())
    assert [b.order for b in first.blocks] == [b.order for b in again.blocks]
    assert len({tuple(b.order) for b in first.blocks}) > 1


def test_json_round_trip_keeps_every_decision() -> None:
    race = replay(Race.start(list(MEANS), SIZES, ACROSS, RaceRules(), seed=4), _sample())
    back = Race.from_json(race.to_json())
    assert back.to_json() == race.to_json()
    assert back.lanes[0].decisions[-1].dropped == race.lanes[0].decisions[-1].dropped


def test_a_race_its_budget_cannot_decide_stops_early_for_futility() -> None:
    # a and b 2% apart at a 10% spread: within 20 blocks neither a drop nor a tie
    # within 5% is likely, so the lane ends not separated early and says why;
    # with futility off it spends the budget.
    means = {"a": 1.0, "b": 1.02, "c": 3.0}
    noise = random.Random(5)

    def close(c: str, size: int, _it: int) -> float:
        return means[c] * size / MIB * math.exp(noise.gauss(0.0, 0.10))

    early = replay(Race.start(list(means), SIZES, ACROSS, RaceRules(), seed=4), close)
    lane = early.lanes[0]
    assert lane.outcome == NOT_SEPARATED
    assert len(lane.blocks) < RaceRules().max_blocks
    assert lane.why is not None and "chance" in lane.why and "b and a" in lane.why
    assert lane.decisions[-1].futile == lane.why
    assert "stopped early" in answer_text(early)
    full = replay(Race.start(list(means), SIZES, ACROSS, RaceRules(futility=0.0), seed=4), close)
    assert full.lanes[0].why is None
    assert len(full.lanes[0].blocks) == RaceRules().max_blocks or full.lanes[0].decided
    assert len(full.lanes[0].blocks) > len(lane.blocks)


def test_a_pair_inside_the_zone_is_not_priced_in_blocks_to_separate() -> None:
    # b steady, a alternating 6% either side of 1.0: after the 3-block budget their
    # ratio is inside the 5% zone but its interval too wide for a tie.
    def sample(c: str, size: int, iteration: int) -> float:
        seconds = 1.01 if c == "b" else 1.0 + (0.06 if iteration % 2 == 0 else -0.06)
        return seconds * size / MIB

    rules = RaceRules(first_test=3, max_blocks=3, futility=0.0)
    race = replay(Race.start(["a", "b"], SIZES[:1], ACROSS, rules, seed=1), sample)
    assert race.lanes[0].outcome == NOT_SEPARATED
    text = answer_text(race)
    # The ratio is inside the zone but nothing was shown: its interval says so.
    assert "shown neither beyond the 5% zone nor within it" in text
    assert "more likely show a tie" in text
    assert "more blocks at the spread seen" not in text
