"""Leave-one-sweep-out: would the time model have predicted each sweep it has?

For every sweep, fit the model on all the others, predict the held-out sweep's
cells as a plan would (same environment matching, same interval), and compare
with what it took.  What is compared depends on what the sweep recorded: the
cells' wall times where run.json has them all; else a known total of the whole
sweep (`totals`); else the sum of its timed steps (flux-distribute's CSVs: no
overhead).  A failed step is in neither side.  The stated defaults stay out of the
prediction (the cloud's were measured on flux-distribute's EKS sweep, so they would
predict that sweep from itself); parameters no other sweep informs keep them.

This is how a user learns whether to trust a plan: the share of sweeps whose
actual fell inside, and how wide the intervals were where nothing was
extrapolated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from experiments.errors import UserError
from experiments.estimate.defaults import default_coverage, default_time_model
from experiments.estimate.history import Sweep, load_sweep
from experiments.estimate.interval import LEVEL, choose_candidates, interval
from experiments.estimate.plan_estimate import fits_for
from experiments.estimate.structure import Step
from experiments.formats.run_record import ALLOCATION
from experiments.model.plan import Cell

__all__ = ["CheckRow", "check_sweeps", "load_check_sweeps", "predict_sweep", "summary"]


@dataclass(frozen=True)
class CheckRow:
    """One held-out sweep: predicted (low - high) against actual."""

    sweep: str
    environment: str
    cells: int
    compared: str  # "wall" (run.json), "total" (given) or "steps" (timed steps only)
    predicted: float
    low: float
    high: float
    actual: float
    extrapolated: tuple[str, ...]
    trained_on: int  # sweeps in the fit

    @property
    def inside(self) -> bool:
        return self.low <= self.actual <= self.high

    @property
    def width(self) -> float:
        """high / low: how many times wider the top of the interval is than its bottom."""
        return self.high / self.low if self.low > 0 else math.inf

    @property
    def error(self) -> float:
        """predicted / actual - 1."""
        return self.predicted / self.actual - 1 if self.actual > 0 else math.inf


def load_check_sweeps(dirs: Sequence[Path], totals: Mapping[str, float]) -> list[Sweep]:
    """One sweep per given directory (its parsed directories below pooled into one)."""
    from experiments.estimate.history import find_parsed_dirs

    sweeps = []
    for folder in dirs:
        found = find_parsed_dirs(folder)
        if not found:
            raise UserError(
                f"{folder}: no parsed directory (topologies-events.csv) found; "
                "a raw tree needs `kary parse --data RAW --out DIR` first"
            )
        parts = [load_sweep(f, what=str(folder)) for f in found]
        cells = tuple(c for p in parts for c in p.cells)
        if not cells:
            raise UserError(f"{folder}: no timed cells to check")
        sweeps.append(Sweep(str(folder), parts[0].environment, cells, totals.get(str(folder))))
    unknown = set(totals) - {s.name for s in sweeps}
    if unknown:
        raise UserError(f"--total names {', '.join(sorted(unknown))}, not one of the DIRs given")
    return sweeps


def _compared(sweep: Sweep) -> tuple[str, float, list[tuple[Cell, list[Step]]]]:
    """What to compare for a sweep, its actual seconds, and the steps to predict per cell."""
    with_overhead = sweep.walls_known or sweep.total_wall is not None
    cells = []
    for observed in sweep.cells:
        steps = [step for step, _ in observed.observed()]
        if with_overhead:
            steps.insert(0, observed.steps()[0])
        cells.append((observed.cell, steps))
    if sweep.walls_known:
        return "wall", sum(c.wall or 0.0 for c in sweep.cells), cells
    steps_total = sum(seconds for c in sweep.cells for _, seconds in c.observed())
    if sweep.total_wall is not None:
        return "total", sweep.total_wall, cells
    return "steps", steps_total, cells


def predict_sweep(held: Sweep, history: Sequence[Sweep]) -> CheckRow:
    """Predict `held` from a fit on `history` (which should not hold it)."""
    environment = held.environment
    place = ALLOCATION if environment.machine == ALLOCATION else None
    model = default_time_model(environment.backend, place=place)
    fits = fits_for(history, environment, model)
    coverage = default_coverage(environment.backend, place)
    candidates = choose_candidates(environment, model, coverage, fits, with_defaults=False)
    compared, actual, cells = _compared(held)
    spread = interval(cells, candidates, environment)
    return CheckRow(
        sweep=held.name,
        environment=str(environment),
        cells=len(held.cells),
        compared=compared,
        predicted=sum(c.seconds for c in spread.cells),
        low=spread.low,
        high=spread.high,
        actual=actual,
        extrapolated=tuple(spread.extrapolated),
        trained_on=len(history),
    )


def check_sweeps(sweeps: Sequence[Sweep]) -> list[CheckRow]:
    """Leave each sweep out in turn, fit on the rest, and predict it."""
    if len(sweeps) < 2:
        raise UserError("model check needs at least two sweeps: each is predicted from the others")
    return [
        predict_sweep(held, [s for i, s in enumerate(sweeps) if i != index])
        for index, held in enumerate(sweeps)
    ]


def summary(rows: Sequence[CheckRow]) -> str:
    """`6 of 9 sweeps inside their 80% interval; where nothing was extrapolated: ...`."""
    inside = sum(r.inside for r in rows)
    plain = [r for r in rows if not r.extrapolated]
    line = f"{inside} of {len(rows)} sweeps inside their {LEVEL:.0%} interval"
    if plain:
        widest = max(r.width for r in plain)
        line += (
            f"; not extrapolated: {sum(r.inside for r in plain)} of {len(plain)} inside, "
            f"widest interval x{widest:.2f}"
        )
    return line
