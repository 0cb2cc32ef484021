"""Fit the time model's parameters to history, one environment at a time.

Every step is linear in the parameters (structure.py), so each part (create,
distribute, verify, ...) is a small least-squares problem with every
parameter >= 0, solved exactly (nonnegative.py).  The residuals are seconds, not ratios: a plan
predicts a sum, and least squares on seconds predicts sums without the bias a
fit on ratios or logs has on right-skewed timings.

A parameter the history cannot inform (a fixed cost where every step had one
size; a per-rank cost where every cell had one node count; the overhead where
no run.json recorded a wall time) keeps its stated default: each parameter is
also pulled toward its default with the weight of one observation, which
decides only what the data leave open.  `informed` says which ones the data
decided, so a plan can report the rest as assumptions with their share.

The spread that makes a plan's interval comes from the residuals: how far each
sweep's total lies from the fit (sweep_spread; assumed where the environment
has one sweep) and each cell from its sweep (cell_spread).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from experiments.estimate.coverage import Coverage, Environment
from experiments.estimate.history import ObservedCell, Sweep
from experiments.estimate.nonnegative import nonnegative_least_squares
from experiments.estimate.parameters import FITTED_PARAMETERS, TimeModel
from experiments.estimate.structure import OVERHEAD, Step, step_seconds
from experiments.model.topology import build_tree

__all__ = ["ONE_SWEEP_SPREAD", "FittedEnvironment", "fit_environment", "group_by_environment"]

# Each part's parameters, most physical first: where two features move
# together in the history (one size; one node count), the first is the one the
# data are said to inform and the later one keeps its default.
PART_PARAMETERS = {
    "overhead": ("run_overhead_s", "broker_start_s", "cold_cache_s_per_rank"),
    "generate": ("generate_s_per_gb",),
    "create": ("create_s_per_gb", "create_s"),
    "distribute": (
        "extract_s_per_gb",
        "shared_cpu_s_per_gb",
        "fanout_s_per_gb",
        "hop_s_per_gb",
        "distribute_s",
    ),
    "verify": ("verify_s_per_gb", "verify_s_per_gb_per_rank", "verify_s"),
    "delete": ("delete_s",),
    "clean": ("clean_s_per_gb", "clean_s_per_rank", "clean_s"),
}
assert sorted(p for ps in PART_PARAMETERS.values() for p in ps) == sorted(FITTED_PARAMETERS)

PRIOR_OBSERVATIONS = 1.0  # how hard a default pulls: one observation's worth
# A column adds information only if this share of it is not already explained
# by the columns before it.
_INDEPENDENT_SHARE = 0.05
# One sweep says nothing about how the next one scatters: assumed (flux-distribute's
# EKS sweep's 12 cells scatter 5% around their mean, and a sweep on another
# day meets other load and other nodes).
ONE_SWEEP_SPREAD = 0.15
MIN_SPREAD = 0.03


@dataclass(frozen=True)
class FittedEnvironment:
    """The parameters fitted for one environment, which the data decided, and what
    the history behind them spans."""

    environment: Environment
    parameters: dict[str, float]
    informed: frozenset[str]
    coverage: Coverage
    timed: frozenset[str]  # parameters of parts the history has any timing for
    rows: int
    sweeps: tuple[str, ...]
    # The blob kinds of the history's cells: zero blobs inform no term priced per byte
    # moved (structure.MOVED_PARAMETERS).
    blobs: frozenset[str] = frozenset()

    def apply(self, model: TimeModel) -> TimeModel:
        """`model` with the fitted parameters (its image pull, links, provision kept)."""
        source = (
            f"fitted on {self.rows} timings of {len(self.sweeps)} sweep(s) "
            f"({self.environment}); {model.source}"
        )
        return model.model_copy(
            update={**self.parameters, "source": source, "calibrated_from": self.rows}
        )


def group_by_environment(sweeps: Sequence[Sweep]) -> dict[Environment, list[Sweep]]:
    groups: dict[Environment, list[Sweep]] = defaultdict(list)
    for sweep in sweeps:
        groups[sweep.environment].append(sweep)
    return dict(groups)


def _overhead_rows(sweep: Sweep) -> list[tuple[Step, float]]:
    """The overhead each cell paid: its wall time less its steps' (or, given only the
    sweep's total, the total less every step, shared out per cell by the same features)."""
    rows = []
    for observed in sweep.cells:
        if observed.wall is not None:
            timed = sum(seconds for _, seconds in observed.observed())
            rows.append((observed.steps()[0], observed.wall - timed))
    if rows or sweep.total_wall is None or not sweep.cells:
        return rows
    timed = sum(seconds for c in sweep.cells for _, seconds in c.observed())
    per_cell = (sweep.total_wall - timed) / len(sweep.cells)
    return [(c.steps()[0], per_cell) for c in sweep.cells]


def _informed(matrix: np.ndarray) -> list[bool]:
    """Per column: does it vary in a way the columns before it (that were informed) do not?"""
    accepted: list[int] = []
    informed = []
    for j in range(matrix.shape[1]):
        column = matrix[:, j]
        norm = float(np.linalg.norm(column))
        if norm == 0.0 or matrix.shape[0] < 2:
            informed.append(False)
            continue
        if accepted:
            basis = matrix[:, accepted]
            coef, *_ = np.linalg.lstsq(basis, column, rcond=None)
            left = float(np.linalg.norm(column - basis @ coef))
        else:
            left = norm
        independent = left > _INDEPENDENT_SHARE * norm
        informed.append(independent)
        if independent:
            accepted.append(j)
    return informed


def _fit_part(
    names: Sequence[str], rows: Sequence[tuple[Step, float]], prior: TimeModel
) -> tuple[dict[str, float], set[str]]:
    matrix = np.array([[step.features.get(n, 0.0) for n in names] for step, _ in rows])
    target = np.array([seconds for _, seconds in rows])
    defaults = np.array([getattr(prior, n) for n in names])
    scale = np.sqrt(np.mean(matrix**2, axis=0))
    # A feature that never appears (a column of zeros) is held at its default.
    weight = math.sqrt(PRIOR_OBSERVATIONS) * np.where(scale > 0, scale, 1.0)
    augmented = np.vstack([matrix, np.diag(weight)])
    wanted = np.concatenate([target, weight * defaults])
    solution = nonnegative_least_squares(augmented, wanted)
    flags = _informed(matrix)
    return (
        {n: float(v) for n, v in zip(names, solution, strict=True)},
        {n for n, flag in zip(names, flags, strict=True) if flag},
    )


def _fit_parameters(
    sweeps: Sequence[Sweep], prior: TimeModel
) -> tuple[dict[str, float], set[str], set[str], int]:
    """The fitted parameters, those the data decided, those of parts with any
    timing, and the rows they were fitted on."""
    by_part: dict[str, list[tuple[Step, float]]] = defaultdict(list)
    for sweep in sweeps:
        for observed in sweep.cells:
            for step, seconds in observed.observed():
                by_part[step.part].append((step, seconds))
        by_part[OVERHEAD].extend(_overhead_rows(sweep))
    parameters = {name: float(getattr(prior, name)) for name in FITTED_PARAMETERS}
    informed: set[str] = set()
    timed: set[str] = set()
    for part, names in PART_PARAMETERS.items():
        if by_part.get(part):
            values, flags = _fit_part(names, by_part[part], prior)
            parameters.update(values)
            informed |= flags
            timed |= set(names)
    return parameters, informed, timed, sum(len(r) for r in by_part.values())


def fit_environment(sweeps: Sequence[Sweep], prior: TimeModel) -> FittedEnvironment:
    """Fit one environment's sweeps, each parameter pulled toward `prior`'s value."""
    parameters, informed, timed, rows = _fit_parameters(sweeps, prior)
    model = prior.model_copy(update=parameters)
    return FittedEnvironment(
        sweeps[0].environment,
        parameters,
        frozenset(informed),
        _coverage(sweeps, model, prior),
        frozenset(timed),
        rows,
        tuple(s.name for s in sweeps),
        frozenset(c.cell.blob for s in sweeps for c in s.cells),
    )


def _sweep_log_error(sweep: Sweep, model: TimeModel) -> float | None:
    """log(actual / predicted) of a sweep's total (None: nothing to compare)."""
    pairs = [cell_actual_and_predicted(c, model) for c in sweep.cells]
    pairs = [(a, p) for a, p in pairs if a > 0 and p > 0]
    if not pairs:
        return None
    return math.log(sum(a for a, _ in pairs) / sum(p for _, p in pairs))


def _sweep_spread(sweeps: Sequence[Sweep], prior: TimeModel) -> tuple[float, str]:
    """How far a sweep the fit has not seen lands from it: each sweep predicted by a
    fit on the others (the load, the day and the node count all differ between
    sweeps, which residuals of a fit that saw them would hide)."""
    if len(sweeps) < 2:
        return ONE_SWEEP_SPREAD, (
            f"assumed: history has one sweep here (sweep-to-sweep {ONE_SWEEP_SPREAD:.2f})"
        )
    errors = []
    for index, held in enumerate(sweeps):
        others = [s for i, s in enumerate(sweeps) if i != index]
        parameters, *_ = _fit_parameters(others, prior)
        error = _sweep_log_error(held, prior.model_copy(update=parameters))
        if error is not None:
            errors.append(error)
    spread = math.sqrt(sum(e * e for e in errors) / len(errors)) if errors else ONE_SWEEP_SPREAD
    return spread, f"each of {len(errors)} sweeps predicted by a fit on the others"


def cell_actual_and_predicted(observed: ObservedCell, model: TimeModel) -> tuple[float, float]:
    """A history cell's seconds and the model's: its wall time where known, else
    the sum of the steps it has times for."""
    pairs = observed.observed()
    predicted = sum(step_seconds(step, model) for step, _ in pairs)
    actual = sum(seconds for _, seconds in pairs)
    if observed.wall is not None:
        return observed.wall, predicted + step_seconds(observed.steps()[0], model)
    return actual, predicted


def _coverage(sweeps: Sequence[Sweep], model: TimeModel, prior: TimeModel) -> Coverage:
    cells = [c for s in sweeps for c in s.cells]
    trees = [build_tree(c.cell.topo, c.cell.nodes) for c in cells]
    sizes = [size for c in cells for size in c.cell.sizes]
    within: list[float] = []
    for sweep in sweeps:
        pairs = [cell_actual_and_predicted(c, model) for c in sweep.cells]
        logs = [math.log(a / p) for a, p in pairs if a > 0 and p > 0]
        if logs:
            mean = sum(logs) / len(logs)
            within.extend(value - mean for value in logs)
    spread, spread_from = _sweep_spread(sweeps, prior)
    cell_spread = math.sqrt(sum(v * v for v in within) / max(len(within) - 1, 1))
    return Coverage(
        what=f"history: {len(sweeps)} sweep(s), {len(cells)} cells",
        environment=sweeps[0].environment,
        nodes=(min(c.cell.nodes for c in cells), max(c.cell.nodes for c in cells)),
        sizes=(min(sizes), max(sizes)),
        fanouts=(min(t.max_fanout for t in trees), max(t.max_fanout for t in trees)),
        depths=(min(t.depth for t in trees), max(t.depth for t in trees)),
        sweep_spread=max(spread, MIN_SPREAD),
        cell_spread=max(cell_spread, MIN_SPREAD),
        spread_from=spread_from,
    )
