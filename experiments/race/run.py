"""`kary race`: run a race's blocks as cells of the raw tree, decide after each.

The sweep options are `run`'s (nodes, topologies, sizes, where, links, knobs,
blob kind); the race adds its rules (decide.py) and a mode.  It is planned like
a sweep (every check `run` makes, in `api.plan`), priced per block
(plan.py), and then, block by block:

1. the engine names the next block: a lane's survivors at one size, in a random
   order from the race's seed, as a new iteration;
2. its cells run through the backend like any sweep's (experiments.execution),
   each recorded in the raw tree with its run.json;
3. the block is judged from what was recorded: every cell must have succeeded and
   its distribution be a timing (formats.kary_line.step_timings, the rule
   `kary parse` uses), and no box cell may be CPU-bound, or the block is void
   (its reason kept) and runs again;
4. the test decides (decide.py) and race.json is written.

One backend serves every block: brought up at the first and down at the race's
end (also on an error or Ctrl-C), so the kubernetes backend's nested layout
holds one MiniCluster for the whole race and feeds it each next block
(backends/kubernetes/feed.py) rather than making one per block.

Ctrl-C ends the block under way (its cell is recorded interrupted) and leaves
the race resumable: the same command picks up the pending block, reusing the
cells of it that succeeded.  A changed setting is refused, as `run` refuses it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.errors import UserError
from experiments.execution.ledger import read_ledger
from experiments.execution.progress import Reporter, SilentReporter
from experiments.execution.runner import run_plan
from experiments.files import check_data_dir
from experiments.formats.race_state import RaceFile, write_race
from experiments.model.plan import Cell, Plan
from experiments.model.render import template_hash
from experiments.model.sweep import Sweep
from experiments.planned import PlannedSweep, stderr_line
from experiments.race.blocks import Verdict, block_cells, block_line, judge_block, judge_cell
from experiments.race.engine import Block, Race
from experiments.race.held_backend import HeldBackend
from experiments.race.plan import RacePlan, plan_race_cost
from experiments.race.resume import resume_or_start
from experiments.race.rules import BY_SIZE, TIE, WINNER, RaceRules
from experiments.smoke import SmokePlan, plan_smoke, run_smoke

__all__ = ["RaceOutcome", "plan_race", "run_race"]

# A lane that ended with one of these answered the question.
DECIDED = (WINNER, TIE, BY_SIZE)


@dataclass
class RaceOutcome:
    """How a `kary race` call ended."""

    race: Race
    interrupted: bool = False
    stopped_because: str | None = None

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 130
        decided = all(lane.outcome in DECIDED for lane in self.race.lanes)
        return 0 if decided and self.stopped_because is None else 1


_ONE_NODE_COUNT = "kary race decides among topologies at one node count: give --exact-nodes N"


def plan_race(
    sweep: Sweep,
    rules: RaceRules,
    mode: str,
    max_cost: float | None = None,
    allow_cpu_bound: bool = False,
) -> RacePlan:
    """Check the race's sweep (every check `run` makes) and price it; nothing runs."""
    from experiments import api

    if sweep.iterations != 1:
        raise UserError("kary race runs blocks, not iterations: drop --iters")
    if sweep.experiment != "distribute":
        raise UserError("kary race times distributions: --experiment ping cannot race")
    if len(tuple(sweep.strategies)) != 1:
        raise UserError(
            f"kary race ranks one strategy at a time; --strategy gave {', '.join(sweep.strategies)}"
        )
    _check_rules(rules)
    # Planned against a folder that never exists: the race's own cells (one size each)
    # are its business, and `run`'s ledger would call them a different study.
    check_data_dir(Path(sweep.data_dir))  # the one line run and plan give, before anything
    if sweep.exact_nodes is None and sweep.max_nodes is None and "nodes" not in sweep.matrix:
        # Not `run`'s "--exact-nodes N or --max-nodes N": a race has no --max-nodes.
        raise UserError(
            "kary race decides among topologies at one node count: give --exact-nodes N"
        )
    nowhere = Path(sweep.data_dir) / ".race-plan"
    base = api.plan(dataclasses.replace(sweep, order="given", seed=None, data_dir=nowhere))
    cells = base.plan.cells
    if len({c.nodes for c in cells}) != 1:
        raise UserError(_ONE_NODE_COUNT)
    if len({(c.knobs, c.blob) for c in cells}) != 1:
        raise UserError(
            "kary race decides among topologies: give one value of each knob and --blob"
        )
    candidates = list(dict.fromkeys(c.topo for c in cells))
    if len(candidates) < 2:
        raise UserError("kary race needs two or more topologies (--topo A,B or a design file)")
    if not allow_cpu_bound:
        _refuse_cpu_bound(base, candidates)
    planned = plan_race_cost(
        base, candidates, rules, mode, sweep.data_dir, max_cost, allow_cpu_bound
    )
    planned.seed = sweep.seed
    planned.smoke = _smoke_here(base, sweep)
    return planned


def _smoke_here(base: PlannedSweep, sweep: Sweep) -> SmokePlan:
    """The billed race's smoke cell, as `run` plans it, but kept under the race's own
    data dir (the base plan's is a folder that never exists): one that passed there
    before, on the same cluster and identity, is not run again."""
    smoke = base.smoke
    if not smoke.runs:
        return smoke
    return plan_smoke(
        sweep,
        base.plan.cells,
        base.plan.cells,
        billed=base.billed,
        render=base.render,
        cluster=smoke.cluster,
        data_dir=Path(sweep.data_dir),
        estimate=lambda _chosen: smoke.estimate,  # type: ignore[arg-type,return-value]
        settings=base.settings,
    )


def _refuse_cpu_bound(base: PlannedSweep, candidates: list[str]) -> None:
    """A box cell the cores bound would void every block it is in: refuse it up front."""
    from experiments.estimate.bottleneck import box_bottlenecks
    from experiments.formats.run_record import BOX

    if base.place != BOX:
        return
    template = base.plan.cells[0]
    bound = [
        topo
        for topo in candidates
        if any(
            b["cpu_bound"]
            for b in box_bottlenecks(dataclasses.replace(template, topo=topo), base.checked.links)
        )
    ]
    if bound:
        raise UserError(
            f"{', '.join(bound)} would be CPU-bound in the box (the cores' share is at least "
            "half the links' floor), so every block with them would be void: race without "
            "them, on slower --link-bandwidth, or add --allow-cpu-bound to rank them anyway"
        )


def _check_rules(rules: RaceRules) -> None:
    if not 0.5 <= rules.confidence < 1:
        raise UserError(f"invalid --confidence {rules.confidence:g}: give 0.5 <= c < 1")
    if not 0 < rules.zone < 1:
        raise UserError(f"invalid --zone {rules.zone:g}: give a fraction, 0 < zone < 1")
    if rules.first_test < 2:
        raise UserError(f"invalid --first-test {rules.first_test}: give 2 or more blocks")
    if not 0 <= rules.futility < 1:
        raise UserError(f"invalid --futility {rules.futility:g}: give a chance, 0 <= f < 1")
    if rules.max_blocks < rules.first_test:
        raise UserError(
            f"invalid --max-blocks {rules.max_blocks}: the first test is after "
            f"{rules.first_test} blocks"
        )


def run_race(
    planned: RacePlan,
    *,
    yes: bool = False,
    timeout: float | None = None,
    max_cost: float | None = None,
    reporter: Reporter | None = None,
    echo: Callable[[str], None] = stderr_line,
    make_backend: Callable[[str, Any], Any] | None = None,
    max_hours: float | None = None,
) -> RaceOutcome:
    """Run the race to its end (or the budget, or Ctrl-C); race.json keeps where it is.

    `make_backend(name, settings)` makes each block's backend (default: the
    backend the plan names, as `kary run` makes it); tests hand in a fake.
    """
    base = planned.base
    data_dir = planned.data_dir
    race = resume_or_start(planned, data_dir)
    if race.finished:
        echo("kary race: already decided (race.json): its answer stands")
        return RaceOutcome(race)
    planned.check_cost(max_cost)
    if base.billed:
        from experiments.api import check_pins

        check_pins(base)  # as `kary run` does: a billed race names its Flux by digest
    if base.billed and not yes:
        from experiments.confirm import confirm_billed

        confirm_billed(
            planned.text(max_cost).splitlines(),
            "Start this race?",
            yes,
            "this race is billed and there is no terminal to confirm it: "
            "check the plan above and add --yes",
        )
    guard = base.guard(max_cost, max_hours, echo)  # max_hours: an --up cluster's lease
    echo(
        f"kary race: {len(race.candidates)} topologies at {race.nodes} nodes, "
        f"{race.mode}; raw results and race.json in {data_dir}; seed {race.seed}"
    )
    held = HeldBackend(base.backend, base.backend_settings(), make_backend)
    try:
        with guard.session():
            try:
                ended = _blocks(planned, race, guard, held, timeout, max_cost, reporter, echo)
            finally:
                # Inside the session: a --down that tears the cluster down comes after
                # the race's MiniCluster went.
                held.release()
    except KeyboardInterrupt:
        ended = None
    if ended is None:
        _save(planned, race)
        echo("kary race: interrupted; the same command resumes the race")
        return RaceOutcome(race, interrupted=True)
    return ended


def _blocks(
    planned: RacePlan,
    race: Race,
    guard: Any,
    held: HeldBackend,
    timeout: float | None,
    max_cost: float | None,
    reporter: Reporter | None,
    echo: Callable[[str], None],
) -> RaceOutcome | None:
    """The smoke cell (first time only), then block after block until the race ends or
    stops (its outcome), or a Ctrl-C (None)."""
    if not race.blocks:
        # A billed race's smoke cell first, as `run`'s: a broken image or
        # operator fails one small cell, not a block of every topology.
        stopped = _smoke_first(planned, timeout, echo, held.make_backend)
        if stopped is not None:
            if stopped.interrupted:
                return None
            return RaceOutcome(race, stopped_because=stopped.stopped_because)
    while (block := race.next_block()) is not None:
        _save(planned, race)
        stop = _budget_reason(guard, planned, block, max_cost)
        if stop:
            race.stop_for_budget(stop)
            _save(planned, race)
            return RaceOutcome(race, stopped_because=stop)
        voided: list[str] = []
        judged: dict[str, Verdict] = {}
        summary = _run_block(planned, race, block, timeout, reporter, held, voided, judged)
        if summary.interrupted:
            return None
        times, void = judge_block(planned.data_dir, planned, block, judged)
        if voided:
            block.ran = len(block.order) - voided.count("")
        decision = race.record(block, times, void)
        _save(planned, race)
        echo(block_line(race, block, decision))
        if summary.stopped_because and not voided:
            return RaceOutcome(race, stopped_because=summary.stopped_because)
    return RaceOutcome(race)


def _smoke_first(
    planned: RacePlan,
    timeout: float | None,
    echo: Callable[[str], None],
    make_backend: Callable[[str, Any], Any] | None,
) -> Any:
    """Run the race's smoke cell (experiments/smoke.py); None when it passed or there is none."""
    from experiments.execution.ledger import Ledger

    base = planned.base
    return run_smoke(
        planned.smoke,
        backend=base.backend,
        settings=base.backend_settings(),
        spec=base.plan.spec.model_copy(update={"data_dir": planned.data_dir}),
        ledger=Ledger(to_run=[], done=[], failed=[]),
        template_dir=base.sweep.template,
        cluster=base.cluster,
        timeout=timeout,
        echo=echo,
        make_backend=make_backend,
        command="kary race",
        what="race block",
    )


def _save(planned: RacePlan, race: Race) -> None:
    write_race(planned.data_dir, RaceFile(planned.settings(), race.to_json()))


def _budget_reason(
    guard: Any, planned: RacePlan, block: Block, max_cost: float | None
) -> str | None:
    """--max-cost: a reason to stop before `block` when it would pass the cap."""
    cap = guard.cap
    if max_cost is None or cap.max_usd is None:
        return None
    seconds = sum(planned.cell_seconds(topo, block.size_bytes) for topo in block.order)
    upcoming = cap.hourly_usd * (seconds + cap.teardown_s) / 3600.0
    spent = cap.spent()
    if spent + upcoming > cap.max_usd:
        return (
            f"--max-cost ${cap.max_usd:,.2f}: ${spent:,.2f} spent so far and block "
            f"{block.iteration} would add about ${upcoming:,.2f}"
        )
    return None


def _run_block(
    planned: RacePlan,
    race: Race,
    block: Block,
    timeout: float | None,
    reporter: Reporter | None,
    backend: HeldBackend,
    voided: list[str],
    judged: dict[str, Verdict],
) -> Any:
    """Run the block's cells; stop at the first that is no timing (the block is void
    with it, so the rest would be paid for nothing).  `voided` gets, when it stopped,
    the reason, then an empty string per cell left unrun; `judged` each verdict read."""
    base = planned.base
    spec = base.plan.spec.model_copy(update={"data_dir": planned.data_dir})
    cells = block_cells(planned, block)
    plan = Plan(spec, cells, [block.size_bytes])
    ledger = read_ledger(
        cells,
        spec.data_dir,
        False,
        # --force: cells of another study at these paths are moved aside (never deleted).
        base.sweep.force,
        settings=base.settings,
        template_hash=template_hash(base.sweep.template),
    )
    cluster = base.cluster
    return run_plan(
        plan,
        backend,
        base.render,
        ledger=ledger,
        template_dir=base.sweep.template,
        timeout=timeout,
        predicted={c.id: planned.cell_seconds(c.topo, block.size_bytes) for c in cells},
        reporter=reporter or SilentReporter(),
        cluster=cluster.name if cluster else None,
        instance_type=cluster.instance_type if cluster else None,
        settings=base.settings,
        before_cell=lambda index, _cell: _void_so_far(planned, block, cells, index, voided, judged),
    )


def _void_so_far(
    planned: RacePlan,
    block: Block,
    cells: list[Cell],
    index: int,
    voided: list[str],
    judged: dict[str, Verdict],
) -> str | None:
    """Before cell `index`: why the block is already void (a cell before it is no
    timing), so the runner stops; None to go on.  The verdict is kept in `judged`."""
    if index == 0:
        return None
    before = cells[index - 1]
    judged[before.id] = judge_cell(planned.data_dir, planned, before, block.size_bytes)
    why = judged[before.id][1]
    if why is None:
        return None
    voided[:] = [why] + [""] * (len(cells) - index)
    return f"block {block.iteration} is void ({why}): its other cells are not run"
