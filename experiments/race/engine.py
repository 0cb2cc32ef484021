"""The race as a state machine: which block next, what a finished block changes.

One engine serves the real race (experiments/race/run.py, whose cells a backend
runs) and its replays (the plan's expected case, benchmarks/race_replay.py),
so what is proved on replays is what runs.

A *lane* is one race: across sizes there is one, whose blocks cycle through the
sizes in `size_order`: the smallest, the largest, then the sizes between, each
farthest from those already timed (so a race that decides at its first test has
timed both ends of the range it answers for, and the sizes between evenly);
per size there is a lane per size, and their
blocks interleave (one allocation serves all).  A *block* is every survivor of
a lane once, at one size, in a random order drawn from the race's seed.  Each
block attempt is a new iteration of the raw tree, so a block that was voided
(a failed, void, preempted or CPU-bound cell: Friedman needs complete blocks) is
run again under a new iteration and the voided one stays on record with its
reason.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from experiments.race.decide import Decision, decide
from experiments.race.rules import (
    ACROSS,
    BY_SIZE,
    CONTINUE,
    PER_SIZE,
    TIE,
    WINNER,
    RaceRules,
)

__all__ = ["NOT_SEPARATED", "STOPPED", "Block", "Lane", "Race", "replay", "size_order"]

NOT_SEPARATED = "not-separated"  # the budget was spent first
STOPPED = "stopped"  # blocks kept being voided
# Voided attempts in a row after which a lane stops: the cause will not heal by itself.
MAX_VOIDS_IN_A_ROW = 3


def size_order(sizes: Sequence[int]) -> list[int]:
    """The sizes in the order a lane's blocks cycle through them: the smallest, the
    largest, then each next the one farthest (in log size) from every size already in
    the order (the smaller on a tie)."""
    import math

    remaining = sorted(set(sizes))
    if len(remaining) <= 2:
        return remaining
    order = [remaining.pop(0), remaining.pop()]
    while remaining:
        chosen = max(
            remaining,
            key=lambda s: (min(abs(math.log(s / t)) for t in order), -s),
        )
        order.append(chosen)
        remaining.remove(chosen)
    return order


@dataclass
class Block:
    """One block attempt: a lane's survivors at one size, as the cells' iteration."""

    lane: str
    size_bytes: int
    iteration: int
    order: list[str]  # the survivors, in the order they run
    times: dict[str, float] | None = None  # seconds, when every cell was a timing
    void: str | None = None  # why the block is no block (a cell failed, ...)
    # Cells that ran, where fewer than `order` (a void block stops at its first
    # failed cell); None: all of them.
    ran: int | None = None

    @property
    def done(self) -> bool:
        return self.times is not None or self.void is not None

    @property
    def cells_run(self) -> int:
        """The cells this attempt ran (and paid for)."""
        return len(self.order) if self.ran is None else self.ran


@dataclass
class Lane:
    """One race: its sizes, survivors, complete blocks, decisions and answer."""

    key: str
    sizes: list[int]
    survivors: list[str]
    blocks: list[int] = field(default_factory=list)  # iterations of its complete blocks
    decisions: list[Decision] = field(default_factory=list)
    attempts: int = 0  # block attempts, voided ones included
    voids_in_a_row: int = 0
    outcome: str = CONTINUE
    why: str | None = None  # why it ended not separated before its budget (futility)

    @property
    def decided(self) -> bool:
        return self.outcome != CONTINUE

    def next_size(self) -> int:
        """Sizes in `size_order`, then again (every block is another sample)."""
        order = size_order(self.sizes)
        return order[len(self.blocks) % len(order)]

    def spent(self) -> list[float]:
        """The error each of its looks spent (sequential.py), in order."""
        return [d.level for d in self.decisions if d.level]


@dataclass
class Race:
    """Every lane and block of one race; JSON in and out (formats/race_state.py keeps it)."""

    candidates: list[str]
    sizes: list[int]
    mode: str
    rules: RaceRules
    seed: int
    nodes: int = 1
    lanes: list[Lane] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    budget: str | None = None  # why spending stopped the race, if it did

    @classmethod
    def start(
        cls,
        candidates: Sequence[str],
        sizes: Sequence[int],
        mode: str,
        rules: RaceRules,
        seed: int,
        nodes: int = 1,
    ) -> Race:
        ordered = sorted(set(sizes))
        if mode == ACROSS:
            lanes = [Lane(ACROSS, ordered, list(candidates))]
        elif mode == PER_SIZE:
            lanes = [Lane(str(size), [size], list(candidates)) for size in ordered]
        else:
            raise ValueError(f"unknown race mode {mode!r}")
        return cls(list(candidates), ordered, mode, rules, seed, nodes, lanes)

    # -- what runs next -------------------------------------------------------

    def lane(self, key: str) -> Lane:
        return next(lane for lane in self.lanes if lane.key == key)

    @property
    def pending(self) -> Block | None:
        """A block that was started and never finished (the race was interrupted)."""
        return next((b for b in self.blocks if not b.done), None)

    @property
    def finished(self) -> bool:
        return all(lane.decided for lane in self.lanes)

    def next_block(self) -> Block | None:
        """The next block to run (a pending one first), or None when every lane is done."""
        if self.pending is not None:
            return self.pending
        open_lanes = [lane for lane in self.lanes if not lane.decided]
        if not open_lanes:
            return None
        # Interleave lanes: the one with fewest attempts goes next (per size: one
        # allocation walks every size in turn).
        lane = min(open_lanes, key=lambda lane: (lane.attempts, self.lanes.index(lane)))
        iteration = len(self.blocks)
        order = list(lane.survivors)
        random.Random(self.seed * 100003 + iteration).shuffle(order)
        block = Block(lane.key, lane.next_size(), iteration, order)
        self.blocks.append(block)
        lane.attempts += 1
        return block

    # -- what a finished block changes ----------------------------------------

    def record(
        self, block: Block, times: Mapping[str, float] | None, void: str | None = None
    ) -> Decision | None:
        """Record a finished block: its timings, or why it is void.  Returns the test's
        decision when one was taken."""
        lane = self.lane(block.lane)
        if times is None or void is not None:
            block.void = void or "no timings"
            lane.voids_in_a_row += 1
            if lane.voids_in_a_row >= MAX_VOIDS_IN_A_ROW:
                lane.outcome = STOPPED
            return None
        missing = [c for c in block.order if c not in times or not times[c] > 0]
        if missing:
            raise ValueError(f"block {block.iteration} has no timing for {', '.join(missing)}")
        block.times = {c: float(times[c]) for c in block.order}
        lane.voids_in_a_row = 0
        lane.blocks.append(block.iteration)
        decision = self._decide(lane)
        lane.decisions.append(decision)
        lane.survivors = [c for c in lane.survivors if c in decision.kept]
        if decision.outcome != CONTINUE:
            lane.outcome = decision.outcome
        elif len(lane.blocks) >= self.rules.max_blocks:
            lane.outcome = NOT_SEPARATED
        elif decision.futile:
            lane.outcome = NOT_SEPARATED
            lane.why = decision.futile
        return decision

    def _decide(self, lane: Lane) -> Decision:
        blocks = [self.blocks[i] for i in lane.blocks]
        survivors = lane.survivors
        times = [[b.times[c] for c in survivors] for b in blocks if b.times]
        across = self.mode == ACROSS
        return decide(
            survivors,
            times,
            self.rules,
            sizes=[b.size_bytes for b in blocks] if across else None,
            spent=lane.spent(),
        )

    def stop_for_budget(self, reason: str) -> None:
        """Spending ran out (--max-cost): every open lane ends not separated."""
        for lane in self.lanes:
            if not lane.decided:
                lane.outcome = NOT_SEPARATED
        self.budget = reason

    # -- what it cost ---------------------------------------------------------

    def runs(self) -> int:
        """Cells run, voided blocks' included (they were paid for)."""
        return sum(b.cells_run for b in self.blocks if b.done)

    def node_seconds(self) -> float:
        """Timed seconds times nodes, over complete blocks (a voided block's cells did
        not all time; what they cost is in the raw tree's wall times)."""
        return self.nodes * sum(sum(b.times.values()) for b in self.blocks if b.times)

    # -- JSON -----------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "candidates": self.candidates,
            "sizes": self.sizes,
            "mode": self.mode,
            "rules": asdict(self.rules),
            "seed": self.seed,
            "nodes": self.nodes,
            "lanes": [
                {**asdict(lane), "decisions": [d.to_json() for d in lane.decisions]}
                for lane in self.lanes
            ],
            "blocks": [asdict(b) for b in self.blocks],
            "budget": self.budget,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Race:
        lanes = [
            Lane(**{**lane, "decisions": [Decision.from_json(d) for d in lane["decisions"]]})
            for lane in data["lanes"]
        ]
        return cls(
            list(data["candidates"]),
            list(data["sizes"]),
            data["mode"],
            RaceRules(**data["rules"]),
            int(data["seed"]),
            int(data.get("nodes", 1)),
            lanes,
            [Block(**b) for b in data["blocks"]],
            data.get("budget"),
        )


def replay(
    race: Race,
    sample: Callable[[str, int, int], float],
    void: Callable[[int], str | None] | None = None,
) -> Race:
    """Run `race` to its end on sampled times: `sample(candidate, size_bytes, iteration)`
    in seconds; `void(iteration)` may void a block (a replayed failure)."""
    while (block := race.next_block()) is not None:
        reason = void(block.iteration) if void else None
        if reason:
            race.record(block, None, reason)
            continue
        race.record(block, {c: sample(c, block.size_bytes, block.iteration) for c in block.order})
    return race


# Outcomes a lane can end with, for callers that name them.
OUTCOMES = (WINNER, TIE, BY_SIZE, NOT_SEPARATED, STOPPED)
