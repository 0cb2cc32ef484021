"""A race's blocks in the raw tree: their cells, whether each cell is a timing, and the
line `kary race` prints after each (run.py runs them).

A block is its lane's survivors at one size, as cells of one iteration.  A cell
is a timing only if its run.json says it succeeded, its distribution is a
timing by the rule `kary parse` uses (formats.kary_line.step_timings), and, in
the box, its cores did not bound it; the first cell that is not voids the block.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from experiments.formats.events import strategy_events
from experiments.formats.kary_line import step_timings
from experiments.formats.run_record import LOG_NAME, read_record
from experiments.model.plan import Cell
from experiments.race.engine import Block, Race
from experiments.race.plan import RacePlan

__all__ = ["Verdict", "block_cells", "block_line", "judge_block", "judge_cell"]


def block_cells(planned: RacePlan, block: Block) -> list[Cell]:
    """The block's cells, in its order: one size each, the block's iteration."""
    template = planned.template_cell
    return [
        dataclasses.replace(
            template, topo=topo, iteration=block.iteration, sizes=(block.size_bytes,)
        )
        for topo in block.order
    ]


Verdict = tuple[float | None, str | None]


def judge_block(
    data_dir: Path, planned: RacePlan, block: Block, judged: Mapping[str, Verdict] | None = None
) -> tuple[dict[str, float] | None, str | None]:
    """The block's timings from the raw tree, or why it is void (the first cell that is
    no timing: judge_cell).  `judged` holds verdicts already read this block, by cell id
    (the run judges each cell before the next starts), so no file is read twice."""
    times: dict[str, float] = {}
    for cell in block_cells(planned, block):
        known = (judged or {}).get(cell.id)
        seconds, why = known or judge_cell(data_dir, planned, cell, block.size_bytes)
        if why is not None or seconds is None:
            return None, why
        times[cell.topo] = seconds
    return times, None


def judge_cell(data_dir: Path, planned: RacePlan, cell: Cell, size_bytes: int) -> Verdict:
    """A race cell's distribution seconds, or why it is no timing: not succeeded, a
    distribution that is not a timing (formats.kary_line.step_timings, the rule `kary
    parse` uses), or a CPU-bound box."""
    event = strategy_events(planned.strategy).distribute_event()
    folder = cell.raw_dir(data_dir)
    record = read_record(folder)
    if record is None or record.state != "succeeded":
        state = record.state if record else "not run"
        why = f": {record.error}" if record and record.error else ""
        return None, f"{cell.id} {state}{why}"
    box = (record.model_extra or {}).get("box") or {}
    if isinstance(box, dict) and box.get("cpu_bound") and not planned.allow_cpu_bound:
        return None, f"{cell.id} was CPU-bound in the box (its time measures the cores)"
    try:
        log = (folder / LOG_NAME).read_text()
    except OSError as err:
        return None, f"{cell.id}: its log is not readable ({err.strerror})"
    found = [
        (step, problem)
        for step, problem in step_timings(log)
        if step.get("event") == event and step.get("size_bytes") == size_bytes
    ]
    if len(found) != 1:
        return None, f"{cell.id}: {len(found)} {event} steps at this size, not 1"
    step, problem = found[0]
    if problem is not None:
        return None, f"{cell.id}: {event} is no timing ({problem})"
    return float(step["seconds"]), None


def block_line(race: Race, block: Block, decision: Any) -> str:
    """One line per finished block: its times or why it was void, then what was decided."""
    from experiments.formats.cell_layout import format_size

    head = f"kary race: block {block.iteration} ({format_size(block.size_bytes)}"
    head += f", {block.lane})" if race.mode != "across-sizes" else ")"
    if block.void:
        return f"{head}: void, runs again: {block.void}"
    times = (
        ", ".join(f"{c} {block.times[c]:.2f}s" for c in sorted(block.times)) if block.times else ""
    )
    if decision is None:
        return f"{head}: {times}"
    lane = race.lane(block.lane)
    what = (
        decision.test
        if decision.p is None or decision.level is None
        else f"paired t-tests, error spent {decision.level:.2g} at this look: smallest p adj "
        f"{decision.p:.3g}"
    )
    dropped = (
        "; dropped "
        + ", ".join(
            f"{c.candidate} (p adj {c.p_adjusted:.3g})" for c in decision.comparisons if c.dropped
        )
        if decision.dropped
        else ""
    )
    return (
        f"{head}: {times}; {what}{dropped}; {len(lane.survivors)} left: {', '.join(lane.survivors)}"
    )
