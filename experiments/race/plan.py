"""A race, priced before it runs: best, expected and worst case, beside a plain sweep.

Every (topology, size) is predicted by the sweep's own time model
(`estimate_for`, with `--history` where given), one cell each, and priced at
the plan's hourly rate.  Then:

- **best**: the first test decides: `first_test` blocks of every candidate;
- **expected**: the race replayed (engine.replay) on the model's predictions,
  each run drawn with a spread of `SPREAD` (log-normal; history's own spread is
  not yet carried per cell), the median of `REPLAYS` replays;
- **worst**: no candidate is ever dropped: `max_blocks` blocks of every candidate
  per lane, or as many as `--max-cost` pays for, whichever is fewer (the race
  stops before a block that would pass the cap, so the worst case holds it);
- **plain, 1 iteration**: every candidate at every size once (decides nothing:
  one run a side);
- **uniform, same confidence**: every candidate at every size with the fewest
  runs a side with which the report's test (Mann-Whitney, two-sided) can reach
  the race's confidence against each of the other candidates, Holm-corrected.

A block's cells share what does not depend on the topology (the cluster, a
nested allocation's start-up): those are in the plan's fixed seconds, once.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.errors import UserError
from experiments.estimate.plan_estimate import estimate_for
from experiments.formats.cell_layout import format_size
from experiments.model.plan import Cell
from experiments.plan_view import format_duration
from experiments.planned import PlannedSweep
from experiments.race.decide import ACROSS, RaceRules
from experiments.race.engine import Race, replay

__all__ = ["REPLAYS", "SPREAD", "Case", "RacePlan", "plan_race_cost", "uniform_runs_a_side"]

# The expected case's replays and the spread each replayed run is drawn with
# (a log-normal sigma: about 10% either way, what kary's box runs showed between
# iterations of one cell; docs/box.md's quartiles).
REPLAYS = 20
SPREAD = 0.10


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


@dataclass
class RacePlan:
    """The race's sweep (planned like `run`'s), its rules, and what it may cost."""

    base: PlannedSweep
    candidates: list[str]
    rules: RaceRules
    mode: str
    sizes: list[int]
    seconds: dict[tuple[str, int], float]  # predicted seconds per (topology, size)
    hourly_usd: float
    fixed_seconds: float
    data_dir: Path
    max_cost: float | None = None
    allow_cpu_bound: bool = False
    seed: int | None = None  # the race's seed (--seed), else drawn when it starts
    cases: list[Case] = field(default_factory=list)

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
        return self.seconds.get((topo, size), 0.0)

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
        if best.usd > max_cost:
            raise UserError(
                f"--max-cost ${max_cost:,.2f} does not pay for the race's first test "
                f"(${best.usd:,.2f} for {best.runs} runs): raise it, or race fewer topologies"
            )

    def text(self, max_cost: float | None = None) -> str:
        lines = [
            f"race: {len(self.candidates)} topologies at {self.nodes} nodes "
            f"({', '.join(self.candidates)}), {self.mode}, sizes "
            f"{', '.join(format_size(s) for s in self.sizes)}",
            f"rules: confidence {self.rules.confidence:g}, zone {self.rules.zone:.0%}, first "
            f"test after block {self.rules.first_test}, at most {self.rules.max_blocks} blocks"
            + (f" a lane ({len(self.sizes)} lanes)" if self.mode != ACROSS else ""),
            f"where: {self.base.backend}" + (f" ({self.base.place})" if self.base.place else ""),
            "",
            f"{'case':<28} {'runs':>6} {'cell time':>10} {'node-hours':>11} {'cost':>10}",
        ]
        for case in self.cases:
            lines.append(
                f"{case.name:<28} {case.runs:>6} {format_duration(case.seconds):>10} "
                f"{case.node_seconds / 3600:>11.2f} {'$' + format(case.usd, ',.2f'):>10}"
                + (f"  {case.note}" if case.note else "")
            )
        lines.append(
            f"fixed: {format_duration(self.fixed_seconds)} that no block changes (provisioning, "
            "image pull), in every cost above"
            if self.fixed_seconds
            else "fixed: none (nothing to provision here)"
        )
        drives = self.cost_driver()
        if drives:
            lines.append(drives)
        if max_cost is not None:
            lines.append(
                f"--max-cost ${max_cost:,.2f}: the race stops before a block that would pass it"
            )
        return "\n".join(lines) + "\n"

    def cost_driver(self) -> str | None:
        """Why the expected race costs about its budget: the model cannot tell the
        candidates apart by more than the zone, so replays on it never separate them."""
        expected, worst = self.case("expected"), self.case("worst")
        if expected.runs < worst.runs:
            return None
        spread = max(
            max(self.cell_seconds(t, s) for t in self.candidates)
            / max(min(self.cell_seconds(t, s) for t in self.candidates), 1e-9)
            for s in self.sizes
        )
        return (
            f"what drives the cost: the time model predicts the {len(self.candidates)} "
            f"topologies within {spread - 1:.1%} of each other (zone {self.rules.zone:.0%}), "
            "so its replays never separate them and spend the budget; history from runs "
            "like these (--history) or a wider --zone would let the plan expect less"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "candidates": self.candidates,
            "mode": self.mode,
            "sizes": self.sizes,
            "rules": dataclasses.asdict(self.rules),
            "cases": [dataclasses.asdict(c) for c in self.cases],
            "fixed_seconds": self.fixed_seconds,
            "hourly_usd": self.hourly_usd,
        }


def uniform_runs_a_side(candidates: int, confidence: float) -> int:
    """The fewest runs a side with which Mann-Whitney (exact, two-sided) can reach
    1 - confidence against each of the other candidates, Holm-corrected (its
    smallest p is 2 / C(2n, n); Holm's first step divides alpha by k - 1)."""
    alpha = (1 - confidence) / max(1, candidates - 1)
    runs = 2
    while 2 / math.comb(2 * runs, runs) >= alpha:
        runs += 1
    return runs


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
    seconds = {(c.cell.topo, c.cell.sizes[0]): c.seconds for c in estimate.cells}
    fixed = max(0.0, estimate.seconds - sum(seconds.values()))
    planned = RacePlan(
        base,
        candidates,
        rules,
        mode,
        sizes,
        seconds,
        estimate.hourly_usd,
        fixed,
        Path(data_dir),
        max_cost,
        allow_cpu_bound,
    )
    planned.cases = _cases(planned)
    return planned


def _cases(planned: RacePlan) -> list[Case]:
    rules, candidates, sizes = planned.rules, planned.candidates, planned.sizes
    lanes = 1 if planned.mode == ACROSS else len(sizes)

    def case(key: str, name: str, runs: Sequence[tuple[str, int]], note: str = "") -> Case:
        cell_s = sum(planned.cell_seconds(t, s) for t, s in runs)
        return Case(
            key,
            name,
            len(runs),
            cell_s,
            planned.usd(planned.fixed_seconds + cell_s),
            planned.nodes * cell_s,
            note,
        )

    def blocks(count: int) -> list[tuple[str, int]]:
        if planned.mode == ACROSS:
            return [(t, sizes[b % len(sizes)]) for b in range(count) for t in candidates]
        return [(t, s) for s in sizes for _ in range(count) for t in candidates]

    worst_blocks = rules.max_blocks
    if planned.max_cost is not None:
        # The race stops before a block that would pass --max-cost: no more are paid for.
        while worst_blocks > 1 and case("", "", blocks(worst_blocks)).usd > planned.max_cost:
            worst_blocks -= 1
    expected = _expected(planned, dataclasses.replace(rules, max_blocks=worst_blocks))
    uniform = uniform_runs_a_side(len(candidates), rules.confidence)
    plain = [(t, s) for s in sizes for t in candidates]
    return [
        case("best", "best (decided at 1st test)", blocks(rules.first_test)),
        case(
            "expected",
            "expected (replayed)",
            expected,
            f"median of {REPLAYS} replays on the model, spread {SPREAD:.0%}",
        ),
        case(
            "worst",
            "worst (budget)",
            blocks(worst_blocks),
            f"{worst_blocks} blocks x {lanes} lane(s), nothing dropped"
            + (" (as many as --max-cost pays for)" if worst_blocks < rules.max_blocks else ""),
        ),
        case("plain", "plain sweep, 1 iteration", plain, "decides nothing: 1 run a side"),
        case(
            "uniform",
            f"uniform, {uniform} iterations",
            plain * uniform,
            f"the fewest a side for p < {1 - rules.confidence:g} (Holm) against each other",
        ),
    ]


def _expected(planned: RacePlan, rules: RaceRules) -> list[tuple[str, int]]:
    """The runs of the median replay (by cell seconds) on the model's predictions."""
    replays = []
    for index in range(REPLAYS):
        noise = random.Random(index)
        race = Race.start(planned.candidates, planned.sizes, planned.mode, rules, index)

        def sample(topo: str, size: int, _iteration: int, noise: random.Random = noise) -> float:
            mean = max(planned.cell_seconds(topo, size), 1e-3)
            return mean * math.exp(noise.gauss(0.0, SPREAD))

        replay(race, sample)
        runs = [(t, b.size_bytes) for b in race.blocks if b.times for t in b.order]
        replays.append((sum(planned.cell_seconds(t, s) for t, s in runs), runs))
    replays.sort(key=lambda item: item[0])
    return replays[len(replays) // 2][1]
