"""A race, priced before it runs: best, expected and worst case, beside a plain sweep.

Every (topology, size) is predicted by the sweep's own time model
(`estimate_for`, with `--history` where given), one cell each, and priced at
the plan's hourly rate.  Then:

- **best**: the first test decides: `first_test` blocks of every candidate;
- **expected**: the race replayed (engine.replay) on the model's predictions,
  each run drawn log-normally with the spread of repeated cells in `--history`
  (spread.py), else a stated 10%: the median of `plan_model.REPLAYS` (200) replays by cost, with
  their 10th to 90th percentile, to the dollar (what a replay costs varies far
  more than its cents);
- **worst**: no candidate is ever dropped: `max_blocks` blocks of every candidate
  per lane, or as many as `--max-cost` pays for, whichever is fewer (the race
  stops before a block that would pass the cap, so the worst case holds it);
- **blocked**: the cheapest fixed design with the race's own test: b blocks of
  every candidate and one look at all the error, b the fewest whose replays on
  the model decide as often as the race's (`BLOCKED_REPLAYS` a count tried);
- **plain, 1 iteration**: every candidate at every size once (decides nothing:
  one run a side);
- **uniform, same confidence**: every candidate at every size with the fewest
  runs a side with which the report's test (Mann-Whitney, two-sided) can reach
  the race's confidence against each of the other candidates, Holm-corrected.

A race whose test cannot decide within its budget (fewer than 2 blocks, a
first test past the budget) is refused.  One the model says will likely not
decide is planned with a warning (`undecidable`) naming the smallest
`--max-blocks` that likely would: at the spread the plan replays with, the
clearest gap the model predicts shown beyond the zone, or every pair within it,
by the last look.  A warning, not a refusal: the model's gaps are predictions,
and a paired t-test decides a gap the model missed from two blocks on.

What a run and a block cost follows the layout the sweep runs.  Per cell, a
run is the whole cell (its MiniCluster, blob, archive and distribution).
Nested, each run pays its nested start, its archive and its distribution (an
archive cannot be shared: each topology is its own Flux instance, with its
own content store), and the race holds one allocation for all its blocks (its
backend stays up: on Kubernetes one MiniCluster fed each next block,
backends/kubernetes/feed.py; here one outer instance), so the allocation's
start and each size's blob (kept on rank 0's disk) are `once_seconds`, paid
once by the nodes, and a block on Kubernetes adds the wait for the kubelet to
hand the driver its cells (FEED_EXPECTED_S).  What no block changes (the image
pull, provisioning) is `fixed`, paid once.
The plain and uniform sweeps are `kary plan`'s own estimate of the same sweep
in the same layout (every size in one cell).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.errors import UserError
from experiments.estimate.plan_estimate import estimate_for
from experiments.formats.cell_layout import format_size
from experiments.formats.events import strategy_events
from experiments.model.plan import Cell
from experiments.model.render_nested import FEED_EXPECTED_S
from experiments.plan_view import format_duration
from experiments.planned import PlannedSweep
from experiments.race.engine import Race
from experiments.race.plan_model import (
    block_sizes,
    cheapest_blocked,
    check_decidable,
    cost_driver,
    decided,
    percentile,
    replays,
)
from experiments.race.rules import ACROSS, RaceRules, uniform_runs_a_side
from experiments.race.spread import STATED_SPREAD, Spread, race_spread
from experiments.smoke import NO_SMOKE, SmokePlan

__all__ = ["Case", "RacePlan", "plan_race_cost"]


@dataclass(frozen=True)
class Case:
    """One way the race can go: runs, seconds of cells, and dollars."""

    key: str  # best, expected, worst, plain, uniform
    name: str
    runs: int
    seconds: float
    usd: float
    node_seconds: float
    note: str = ""
    usd_low: float | None = None  # the expected case's 10th and 90th percentile
    usd_high: float | None = None


@dataclass
class RacePlan:
    """The race's sweep (planned like `run`'s), its rules, and what it may cost."""

    base: PlannedSweep
    candidates: list[str]
    rules: RaceRules
    mode: str
    sizes: list[int]
    seconds: dict[tuple[str, int], float]  # predicted seconds of a run per (topology, size)
    block_seconds: dict[int, float]  # what a block pays once, per size (its allocation, blob)
    hourly_usd: float
    fixed_seconds: float
    sweep_seconds: float  # `kary plan`'s estimate of one plain iteration, fixed part out
    data_dir: Path
    max_cost: float | None = None
    allow_cpu_bound: bool = False
    expected_race: Race | None = None  # the median replay, which `expected` prices
    seed: int | None = None  # the race's seed (--seed), else drawn when it starts
    cases: list[Case] = field(default_factory=list)
    smoke: SmokePlan = NO_SMOKE  # a billed race's smoke cell, run before its first block
    # A held nested race's one MiniCluster start and each size's blob, paid once.
    once_seconds: float = 0.0
    spread: Spread = STATED_SPREAD  # what a replayed run varies by (spread.py)
    undecidable: str | None = None  # why the model says the budget will likely not decide

    @property
    def nodes(self) -> int:
        return self.template_cell.nodes

    @property
    def template_cell(self) -> Cell:
        return self.base.plan.cells[0]

    @property
    def strategy(self) -> str:
        return self.template_cell.strategies[0]

    def cell_seconds(self, topo: str, size: int) -> float:
        """A run of `topo` at `size` inside its block (the block's own start apart)."""
        return self.seconds.get((topo, size), 0.0)

    def runs_seconds(self, blocks: Sequence[tuple[int, Sequence[str]]]) -> float:
        """Blocks (size, topologies) priced: what the race pays once for them (its held
        MiniCluster and blobs), each block's start and blob, then its runs."""
        return (self.once_seconds if blocks else 0.0) + sum(
            self.block_seconds.get(size, 0.0) + sum(self.cell_seconds(t, size) for t in topos)
            for size, topos in blocks
        )

    def usd(self, seconds: float) -> float:
        return self.hourly_usd * seconds / 3600.0

    def settings(self) -> dict[str, Any]:
        """What a resumed race must share with the one in race.json (else it is refused)."""
        cell = self.template_cell
        settings = self.base.settings
        identity = settings.identity(cell) if settings is not None else {}
        identity.pop("sizes", None)
        return {
            "nodes": cell.nodes,
            "candidates": self.candidates,
            "sizes": self.sizes,
            "mode": self.mode,
            "rules": dataclasses.asdict(self.rules),
            "knobs": cell.knobs.values(),
            "network": cell.network,
            "identity": identity,
        }

    def case(self, name: str) -> Case:
        return next(c for c in self.cases if c.key == name)

    def check_cost(self, max_cost: float | None) -> None:
        """--max-cost must pay for the first test at least (the worst case stops at the cap)."""
        if max_cost is None:
            return
        best = self.case("best")
        smoke = self.smoke.cost_usd_high if self.smoke.runs else 0.0
        if best.usd + smoke > max_cost:
            with_smoke = f" and ${smoke:,.2f} for its smoke cell" if smoke else ""
            raise UserError(
                f"--max-cost ${max_cost:,.2f} does not pay for the race's first test "
                f"(${best.usd:,.2f} for {best.runs} runs{with_smoke}): raise it, or race "
                "fewer topologies"
            )

    def text(self, max_cost: float | None = None) -> str:
        lines = [
            f"race: {len(self.candidates)} topologies at {self.nodes} nodes "
            f"({', '.join(self.candidates)}), {self.mode}, sizes "
            f"{', '.join(format_size(s) for s in self.sizes)}",
            f"rules: confidence {self.rules.confidence:g}, zone {self.rules.zone:.0%}, first "
            f"test after {self.rules.first_test} blocks, at most {self.rules.max_blocks} blocks"
            + (f" a lane ({len(self.sizes)} lanes)" if self.mode != ACROSS else ""),
            f"where: {self.base.backend}" + (f" ({self.base.place})" if self.base.place else ""),
            "",
            f"{'case':<28} {'runs':>6} {'cell time':>10} {'node-hours':>11} {'cost':>10}",
        ]
        for case in self.cases:
            cost = f"${case.usd:,.0f}" if case.usd_low is not None else f"${case.usd:,.2f}"
            lines.append(
                f"{case.name:<28} {case.runs:>6} {format_duration(case.seconds):>10} "
                f"{case.node_seconds / 3600:>11.2f} {cost:>10}"
                + (f"  {case.note}" if case.note else "")
            )
        if self.once_seconds:
            fed = max(self.block_seconds.values(), default=0.0)
            lines.append(
                "one allocation for the whole race: its start and each size's blob "
                f"({format_duration(self.once_seconds)}) paid once"
                + (
                    f", each later block fed to it (about {format_duration(fed)} for the "
                    "kubelet to hand it over)"
                    if fed
                    else ""
                )
            )
        lines.append(
            f"fixed: {format_duration(self.fixed_seconds)} that no block changes (provisioning, "
            "image pull), in every cost above"
            if self.fixed_seconds
            else "fixed: none (nothing to provision here)"
        )
        drives = cost_driver(self)
        if drives:
            lines.append(drives)
        if self.undecidable:
            lines.append(self.undecidable)
        lines += self.smoke.lines()
        if max_cost is not None:
            lines.append(
                f"--max-cost ${max_cost:,.2f}: the race stops before a block that would pass it"
            )
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict[str, Any]:
        return {
            "candidates": self.candidates,
            "mode": self.mode,
            "sizes": self.sizes,
            "rules": dataclasses.asdict(self.rules),
            "cases": [dataclasses.asdict(c) for c in self.cases],
            "fixed_seconds": self.fixed_seconds,
            "once_seconds": self.once_seconds,
            "hourly_usd": self.hourly_usd,
            "undecidable": self.undecidable,
            "smoke": self.smoke.record(),
        }


def plan_race_cost(
    base: PlannedSweep,
    candidates: list[str],
    rules: RaceRules,
    mode: str,
    data_dir: Path,
    max_cost: float | None = None,
    allow_cpu_bound: bool = False,
) -> RacePlan:
    """Price the race (see the module docstring); nothing runs."""
    template = base.plan.cells[0]
    sizes = sorted(set(template.sizes))
    cells = [
        dataclasses.replace(template, topo=topo, sizes=(size,), iteration=0)
        for topo in candidates
        for size in sizes
    ]
    estimate = estimate_for(
        cells,
        base.backend,
        base.render.verify,
        base.cluster,
        base.sweep.history,
        up=base.sweep.up,
        down=base.sweep.down,
        links=base.checked.links,
        image=base.render.image,
        flux_view=base.render.flux_view,
        place=base.place,
    )
    # A fed block waits for the kubelet; an outer instance here takes cells at once.
    feed_s = float(FEED_EXPECTED_S) if base.backend == "kubernetes" else 0.0
    seconds, block_seconds, once = _run_and_block_seconds(
        estimate, base.checked.layout, template.nodes, feed_s
    )
    fixed = sum(v for k, v in estimate.parts.items() if k in _FIXED_PARTS)
    sweep = base.held_to()
    sweep_fixed = sum(v for k, v in sweep.parts.items() if k in _FIXED_PARTS)
    planned = RacePlan(
        base,
        candidates,
        rules,
        mode,
        sizes,
        seconds,
        block_seconds,
        estimate.hourly_usd,
        fixed,
        max(0.0, _layout_seconds(base) - sweep_fixed),
        Path(data_dir),
        max_cost,
        allow_cpu_bound,
        once_seconds=once,
    )
    event = strategy_events(template.strategies[0]).distribute_event()
    planned.spread = race_spread(base.sweep.history, event, template.blob)
    planned.undecidable = check_decidable(planned)
    planned.cases = _cases(planned)
    return planned


# Parts of an estimate that no block changes: paid once per race (or sweep).
_FIXED_PARTS = ("image pull", "provision", "teardown")


def _layout_seconds(base: PlannedSweep) -> float:
    """`kary plan`'s seconds for the sweep in the layout it runs."""
    chosen = next((lay for lay in base.layouts() if lay.name == base.checked.layout), None)
    return chosen.seconds if chosen is not None else base.estimate.seconds


def _run_and_block_seconds(
    estimate: Any, layout: str, nodes: int, feed_s: float
) -> tuple[dict[tuple[str, int], float], dict[int, float], float]:
    """Per (topology, size), what a run adds to its block; per size, what the block pays
    once (`feed_s` when nested); and what a nested race pays once for all its blocks, its
    one allocation's start and each size's blob (module doc)."""
    from experiments.estimate.layouts import load_levers
    from experiments.formats.run_record import NESTED

    runs: dict[tuple[str, int], float] = {}
    blocks: dict[int, float] = {}
    nested = layout == NESTED
    start = load_levers().nested_start_s(nodes) if nested else 0.0
    cluster_start = 0.0
    blobs: dict[int, float] = {}
    for cell_time in estimate.cells:
        size = cell_time.cell.sizes[0]
        parts = dict(cell_time.parts)
        if nested:
            # The MiniCluster start and the blob move to the block; each run starts nested.
            cluster_start = max(cluster_start, parts.pop("overhead", 0.0))
            blobs[size] = parts.pop("generate", 0.0)
            runs[(cell_time.cell.topo, size)] = sum(parts.values()) + start
        else:
            runs[(cell_time.cell.topo, size)] = cell_time.seconds
    if nested:
        return runs, dict.fromkeys(blobs, feed_s), cluster_start + sum(blobs.values())
    return runs, blocks, 0.0


def _cases(planned: RacePlan) -> list[Case]:
    rules, candidates, sizes = planned.rules, planned.candidates, planned.sizes
    lanes = 1 if planned.mode == ACROSS else len(sizes)

    def case(
        key: str, name: str, blocks: Sequence[tuple[int, Sequence[str]]], note: str = ""
    ) -> Case:
        cell_s = planned.runs_seconds(blocks)
        return Case(
            key,
            name,
            sum(len(topos) for _, topos in blocks),
            cell_s,
            planned.usd(planned.fixed_seconds + cell_s),
            planned.nodes * cell_s,
            note,
        )

    def sweep_case(key: str, name: str, iterations: int, note: str) -> Case:
        cell_s = planned.sweep_seconds * iterations
        runs = iterations * len(candidates) * len(sizes)
        usd = planned.usd(planned.fixed_seconds + cell_s)
        return Case(key, name, runs, cell_s, usd, planned.nodes * cell_s, note)

    def blocks(count: int) -> list[tuple[int, Sequence[str]]]:
        if planned.mode == ACROSS:
            return [(size, candidates) for size in block_sizes(planned, count)]
        return [(s, candidates) for s in sizes for _ in range(count)]

    worst_blocks = rules.max_blocks
    if planned.max_cost is not None:
        # The race stops before a block that would pass --max-cost: no more are paid for.
        while worst_blocks > 1 and case("", "", blocks(worst_blocks)).usd > planned.max_cost:
            worst_blocks -= 1
    held = dataclasses.replace(rules, max_blocks=worst_blocks)
    replayed = replays(planned, held)
    costs = [planned.usd(planned.fixed_seconds + seconds) for seconds, _ in replayed]
    planned.expected_race = replayed[len(replayed) // 2][1]
    expected = [(b.size_bytes, b.order) for b in planned.expected_race.blocks if b.times]
    share = sum(decided(race) for _, race in replayed) / len(replayed)
    low, high = percentile(costs, 0.10), percentile(costs, 0.90)
    uniform = uniform_runs_a_side(len(candidates), rules.confidence)
    expected_case = case(
        "expected",
        "expected (replayed)",
        expected,
        f"median of {len(replayed)} replays on the model, 10-90% ${low:,.0f}-${high:,.0f}, "
        f"{share:.0%} of them decided; {planned.spread.note}",
    )
    expected_case = dataclasses.replace(expected_case, usd_low=low, usd_high=high)
    fixed = cheapest_blocked(planned, held, share)
    blocked = (
        case(
            "blocked",
            "blocked, same test",
            blocks(fixed),
            f"{fixed} blocks of every topology, one look: the fewest that decide as often "
            f"({share:.0%}) on the model",
        )
        if fixed
        else None
    )
    return [
        case("best", "best (decided at 1st test)", blocks(rules.first_test)),
        expected_case,
        case(
            "worst",
            "worst (budget)",
            blocks(worst_blocks),
            f"{worst_blocks} blocks x {lanes} lane(s), nothing dropped"
            + (" (as many as --max-cost pays for)" if worst_blocks < rules.max_blocks else ""),
        ),
        *([blocked] if blocked else []),
        sweep_case("plain", "plain sweep, 1 iteration", 1, "decides nothing: 1 run a side"),
        sweep_case(
            "uniform",
            f"uniform, {uniform} iterations",
            uniform,
            f"the fewest a side for p < {1 - rules.confidence:g} (Holm) against each other",
        ),
    ]
