"""A race replayed and judged on the time model: what the plan's expected case, its
blocked comparator and its "will this budget decide?" warning are made of.

The plan (plan.py) predicts every (topology, size) run; here the race engine
(engine.replay) runs on those predictions, each run drawn log-normally with the
plan's spread (spread.py):

- `replays`: `REPLAYS` replays, with what each cost, cheapest first (the
  expected case is their median, its range their 10th to 90th percentile);
- `cheapest_blocked`: the fewest blocks of a fixed design, one look with the
  race's own test, that decides as often as the race on the model;
- `check_decidable`: whether the model's clearest gap, or a tie of all, reaches
  its test's bar by the budget's last look (module doc of plan.py).
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Sequence
from typing import Any, Protocol

from experiments.errors import UserError
from experiments.plan_view import format_duration
from experiments.race.engine import Race, replay, size_order
from experiments.race.rules import ACROSS, BY_SIZE, TIE, WINNER, RaceRules
from experiments.race.sequential import look_blocks, look_level
from experiments.race.spread import Spread

__all__ = [
    "BLOCKED_REPLAYS",
    "REPLAYS",
    "ModelledRace",
    "block_sizes",
    "cheapest_blocked",
    "check_decidable",
    "cost_driver",
    "decided",
    "one_look",
    "percentile",
    "replays",
]

# The expected case's replays (their spread: spread.py), and those of each fixed
# blocked design tried for the comparator.
REPLAYS = 200
BLOCKED_REPLAYS = 100


class ModelledRace(Protocol):
    """What replaying a race on the model needs of its plan (plan.RacePlan has it)."""

    candidates: list[str]
    sizes: list[int]
    mode: str
    rules: RaceRules
    spread: Spread

    def cell_seconds(self, topo: str, size: int) -> float: ...

    def runs_seconds(self, blocks: Sequence[tuple[int, Sequence[str]]]) -> float: ...


def block_sizes(planned: ModelledRace, count: int) -> list[int]:
    """The sizes of a lane's first `count` blocks, in the race's order (engine)."""
    order = size_order(planned.sizes)
    return [order[b % len(order)] for b in range(count)]


def _can_decide(planned: ModelledRace, blocks: int, max_blocks: int) -> bool:
    """Whether the model's clearest drop, or a tie of all, reaches its test's bar by
    `blocks` blocks (the looks `max_blocks` allows), at the plan's spread: the expected
    statistic against the critical value (half the replays would, more or less)."""
    from statistics import NormalDist

    rules, k = planned.rules, len(planned.candidates)
    sizes = block_sizes(planned, blocks) if planned.mode == ACROSS else planned.sizes[:1] * blocks
    counts = [sizes.count(s) for s in sorted(set(sizes))]
    weight = sum(1 / c for c in counts) / len(counts) ** 2
    se = planned.spread.sigma * math.sqrt(2 * weight)
    logs = {t: _model_log_time(planned, t, sorted(set(sizes))) for t in planned.candidates}
    best = min(logs.values())
    gaps = sorted(v - best for v in logs.values())
    spent: list[float] = []
    for look in look_blocks(rules.first_test, max_blocks):
        level = look_level(rules.alpha, look, max_blocks, spent)
        spent.append(level)
        if look != blocks or not level:
            continue
        z = NormalDist().inv_cdf
        if gaps[-1] - rules.margin > z(1 - level / (k * (k - 1))) * se:
            return True
        return gaps[-1] + z(1 - level) * se < rules.margin
    return False


def _model_log_time(planned: ModelledRace, topo: str, sizes: Sequence[int]) -> float:
    return sum(math.log(max(planned.cell_seconds(topo, s), 1e-9)) for s in sizes) / len(sizes)


def check_decidable(planned: ModelledRace) -> str | None:
    """Refuse a race whose test cannot decide within its budget; say why the model
    expects one not to (the module docstring), else None."""
    rules = planned.rules
    if rules.max_blocks < 2 or rules.first_test > rules.max_blocks:
        raise UserError(
            f"--first-test {rules.first_test} and --max-blocks {rules.max_blocks}: a race needs "
            "at least 2 blocks and its first test within its budget"
        )
    last = look_blocks(rules.first_test, rules.max_blocks)[-1]
    if _can_decide(planned, last, rules.max_blocks):
        return None
    seen = (
        f"warning: the model expects --max-blocks {rules.max_blocks} not to decide this race: "
        f"at the spread the plan replays with ({planned.spread.sigma:.1%}) its clearest gap "
        f"is not shown beyond the {rules.zone:.0%} zone, nor every pair within it, by then"
    )
    for budget in range(rules.max_blocks + 1, 1001):
        if _can_decide(planned, look_blocks(rules.first_test, budget)[-1], budget):
            return f"{seen}; --max-blocks {budget} likely would"
    return f"{seen}, nor by 1,000 blocks: its topologies sit near the zone's edge"


def one_look(rules: RaceRules, blocks: int) -> RaceRules:
    """A fixed blocked design with the race's own test: `blocks` blocks of every candidate,
    one look that may spend all the error, no futility."""
    return dataclasses.replace(rules, first_test=blocks, max_blocks=blocks, futility=0.0)


def _replay_on_model(planned: ModelledRace, rules: RaceRules, index: int) -> Race:
    """One replay of the race on the model's predictions, drawn with the plan's spread."""
    noise = random.Random(index)
    race = Race.start(planned.candidates, planned.sizes, planned.mode, rules, index)

    def sample(topo: str, size: int, _iteration: int) -> float:
        mean = max(planned.cell_seconds(topo, size), 1e-3)
        return mean * math.exp(noise.gauss(0.0, planned.spread.sigma))

    return replay(race, sample)


def replays(planned: ModelledRace, rules: RaceRules) -> list[tuple[float, Race]]:
    """REPLAYS replays of the race, each with its seconds, cheapest first."""
    replays = []
    for index in range(REPLAYS):
        race = _replay_on_model(planned, rules, index)
        blocks = [(b.size_bytes, b.order) for b in race.blocks if b.times]
        replays.append((planned.runs_seconds(blocks), race))
    replays.sort(key=lambda item: item[0])
    return replays


def decided(race: Race) -> bool:
    return all(lane.outcome in (WINNER, TIE, BY_SIZE) for lane in race.lanes)


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def cheapest_blocked(planned: ModelledRace, rules: RaceRules, target: float) -> int | None:
    """The fewest blocks (first_test..max_blocks) whose fixed design, one look with the
    race's test, decides as often as `target` on the model; None if none does (or the
    race decides too seldom, under 5%, to compare)."""
    if target < 0.05:
        return None

    def rate(blocks: int) -> float:
        fixed = one_look(rules, blocks)
        runs = [_replay_on_model(planned, fixed, 10_000 + i) for i in range(BLOCKED_REPLAYS)]
        return sum(decided(race) for race in runs) / len(runs)

    low, high = 2, rules.max_blocks
    if rate(high) < target:
        return None
    while low < high:
        middle = (low + high) // 2
        if rate(middle) >= target:
            high = middle
        else:
            low = middle + 1
    return low


def cost_driver(planned: Any) -> str | None:
    """What the expected race spends past its first test, and why: the survivors the
    median replay kept, how close the model puts them, and what their blocks cost;
    or, where most replays decide nothing, why not."""
    race = planned.expected_race
    if race is None:
        return None
    best, expected = planned.case("best"), planned.case("expected")
    lane = min(race.lanes, key=lambda lane: len(lane.survivors))
    first = planned.rules.first_test
    late = [b for b in race.blocks if b.times and b.lane == lane.key][first:]
    kept = sorted({c for b in late for c in b.order}) or sorted(lane.survivors)
    if len(kept) < 2:
        return None
    spread = max(
        max(planned.cell_seconds(t, s) for t in kept)
        / max(min(planned.cell_seconds(t, s) for t in kept), 1e-9)
        for s in planned.sizes
    )
    close = (
        f"the time model puts {', '.join(kept)} within {spread - 1:.1%} of each other, "
        f"zone {planned.rules.zone:.0%}"
    )
    history = "" if planned.spread.groups else "history from runs like these (--history), "
    if not decided(race):
        return (
            f"what drives the cost: {close}; at the plan's spread "
            f"({planned.spread.sigma:.1%}) neither a drop nor a tie of them is likely by block "
            f"{planned.rules.max_blocks}, so the race likely ends not separated ("
            + (
                f"${expected.usd:,.0f}"
                if expected.usd >= 0.5
                else format_duration(expected.seconds) + " of cells"
            )
            + f"); {history}a wider --zone or a larger --max-blocks could decide it"
        )
    if expected.usd <= best.usd * 1.05 or not late:
        return None
    return (
        f"what drives the cost: past the first test the expected race keeps "
        f"{', '.join(kept)} ({close}) for {len(late)} more blocks, "
        f"${expected.usd - best.usd:,.2f} of its ${expected.usd:,.2f}; "
        f"{history}a wider --zone, --max-blocks or --max-cost bound it"
    )
