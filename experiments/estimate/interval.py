"""A plan's time as an estimate with an 80% interval, the assumptions it rests on,
and where it reaches beyond what its numbers were measured on.

The model behind a plan is one or more candidates: the fit of each history
environment that matches the plan's best (the same machines; else history
that does not say where it ran; else other machines on the same backend; else
another backend), and the backend's stated defaults where they match better
(alone without history).  Each cell's time is the candidates' geometric mean.
Its spread (log scale) adds up, in quadrature:

- how far whole sweeps scattered around the fit (the coverage's sweep_spread);
- the environment (of the best-matching candidate): none for the same
  machines, UNKNOWN_MACHINE_SPREAD where the history does not say,
  ANOTHER_ENVIRONMENT_SPREAD for other machines, ANOTHER_BACKEND_SPREAD for
  another backend;
- the candidates' disagreement (half the log of their max / min);
- how far the cell reaches beyond the history (coverage.reach);
- parameters the history could not inform, at ASSUMED_SPREAD of their share.

Where a distribution's time is its link floor (a cloud plan without random-blob
history), the floor is a lower bound: that part's low end is the floor itself and
its high end FLOOR_RATIO_HIGH times it before the spread above (floor_ratio.py).

Those are systematic (one sweep meets one load, one cloud), so cells' bounds add
up; cell-to-cell noise (cell_spread) averages over the plan's cells.  Image
pull, provisioning and teardown are stated defaults at FIXED_PART_SPREAD.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from experiments.estimate.coverage import (
    ANOTHER_BACKEND_SPREAD,
    ANOTHER_ENVIRONMENT_SPREAD,
    UNKNOWN_MACHINE_SPREAD,
    Coverage,
    Environment,
    Z,
    reach,
)
from experiments.estimate.floor_ratio import (
    FLOOR_RATIO_HIGH,
    floor_assumption_text,
    link_floor_seconds,
)
from experiments.estimate.parameters import TimeModel
from experiments.estimate.structure import (
    MOVED_PARAMETERS,
    PARTS,
    PING,
    CellTime,
    Step,
    cell_steps,
    step_seconds,
)
from experiments.formats.blobs import DEDUPLICATED
from experiments.model.plan import Cell
from experiments.model.topology import build_tree

if TYPE_CHECKING:  # fit.py needs pandas and scipy: loaded only when history is fitted
    from experiments.estimate.fit import FittedEnvironment

__all__ = [
    "LEVEL",
    "Assumption",
    "Candidate",
    "PlanInterval",
    "Z",
    "choose_candidates",
    "interval",
    "plan_steps",
]

LEVEL = 0.80
ASSUMED_SPREAD = 0.5  # a parameter left at its default: +-50% (log-sd) of its share
FIXED_PART_SPREAD = 0.3  # image pull, provision, teardown: stated defaults

PARAMETER_WORDS = {
    "create_s": "archive create, fixed",
    "create_s_per_gb": "archive create per GB",
    "distribute_s": "distribution start per wave",
    "extract_s_per_gb": "extract per GB",
    "fanout_s_per_gb": "per GB per child of the busiest broker",
    "hop_s_per_gb": "per GB per level below the first",
    "shared_cpu_s_per_gb": "per GB per rank reached (shared cores)",
    "verify_s": "verify, fixed",
    "verify_s_per_gb": "verify per GB",
    "verify_s_per_gb_per_rank": "verify per GB per target",
    "delete_s": "archive delete",
    "clean_s": "clean, fixed",
    "clean_s_per_gb": "clean per GB",
    "clean_s_per_rank": "clean per rank",
    "generate_s_per_gb": "blob generation per GB",
    "run_overhead_s": "start-up per cell",
    "broker_start_s": "start-up per broker",
    "cold_cache_s_per_rank": "cold-cache step per rank",
}


@dataclass(frozen=True)
class Candidate:
    """One model a plan may be predicted with, what backs it, and how well it matches."""

    model: TimeModel
    coverage: Coverage
    match: str  # same, unknown, other or foreign (Environment.match)
    informed: frozenset[str] | None  # None: the stated defaults, no history
    timed: frozenset[str] = frozenset()  # parameters of parts history has timings for
    blobs: frozenset[str] = frozenset()  # the blob kinds of the history's cells

    @property
    def environment_spread(self) -> float:
        if self.match == "foreign":
            return ANOTHER_BACKEND_SPREAD
        if self.match == "other":
            return ANOTHER_ENVIRONMENT_SPREAD
        # Defaults measured on no machine in particular (a 2-core test instance)
        # allow for the machine they meet in their own spread.
        if self.match == "unknown" and (
            self.informed is not None or self.coverage.environment.machine is not None
        ):
            return UNKNOWN_MACHINE_SPREAD
        return 0.0


@dataclass(frozen=True)
class Assumption:
    """A term the estimate takes on trust, and its share of the estimate."""

    term: str
    detail: str
    share: float


@dataclass(frozen=True)
class PlanInterval:
    cells: list[CellTime]
    low: float  # the cells' seconds only; fixed parts are the caller's
    high: float
    assumptions: list[Assumption]
    extrapolated: list[str]
    model: TimeModel  # the first candidate's, for the plan's JSON
    sources: list[str]  # every candidate's source, first first


_ORDER = {"same": 0, "unknown": 1, "other": 2, "foreign": 3}


def choose_candidates(
    plan_env: Environment,
    defaults: TimeModel,
    default_coverage: Coverage,
    fits: Sequence[FittedEnvironment],
    with_defaults: bool = True,
) -> list[Candidate]:
    """The history fits at the best match to the plan's environment; the defaults
    join them where they match better (and stand alone without history), unless
    `with_defaults` is off."""
    default_match = plan_env.match(default_coverage.environment)
    default = Candidate(defaults, default_coverage, default_match, None)
    if not fits:
        return [default]
    matches = [(plan_env.match(f.environment), f) for f in fits]
    best = min(_ORDER[m] for m, _ in matches)
    chosen = [
        Candidate(f.apply(defaults), f.coverage, m, f.informed, f.timed, f.blobs)
        for m, f in matches
        if _ORDER[m] == best
    ]
    if with_defaults and _ORDER[default_match] < best:
        chosen.append(default)
    return chosen


def _merged(coverages: Sequence[Coverage]) -> Coverage:
    first = coverages[0]
    if len(coverages) == 1:
        return first

    def span(attr: str) -> tuple[int, int]:
        return (
            min(getattr(c, attr)[0] for c in coverages),
            max(getattr(c, attr)[1] for c in coverages),
        )

    return Coverage(
        what="; ".join(c.what for c in coverages),
        environment=first.environment,
        nodes=span("nodes"),
        sizes=span("sizes"),
        fanouts=span("fanouts"),
        depths=span("depths"),
        sweep_spread=max(c.sweep_spread for c in coverages),
        cell_spread=max(c.cell_spread for c in coverages),
        spread_from=first.spread_from,
    )


def _uninformed_seconds(steps: Sequence[Step], candidate: Candidate) -> dict[str, float]:
    """Seconds of a cell each parameter the history left at its default accounts for."""
    if candidate.informed is None:
        return {}
    seconds: dict[str, float] = {}
    for step in steps:
        for name, feature in step.features.items():
            if name not in candidate.informed:
                value = getattr(candidate.model, name) * feature
                if value > 0:
                    seconds[name] = seconds.get(name, 0.0) + value
    return seconds


@dataclass(frozen=True)
class _CellEstimate:
    time: CellTime
    spread: float  # systematic log-spread of this cell
    uninformed: dict[str, float]  # seconds per default-held parameter (candidates' mean)
    beyond: dict[str, tuple[float, str]]
    floor: float = 0.0  # seconds that are a link floor, a lower bound (candidates' mean)


def _estimate_cell(
    cell: Cell,
    steps: Sequence[Step],
    candidates: Sequence[Candidate],
    coverage: Coverage,
    base2: float,
) -> _CellEstimate:
    """One cell: the candidates' geometric mean and its systematic spread."""
    per_candidate = []
    floors = []
    for candidate in candidates:
        parts = dict.fromkeys(PARTS, 0.0)
        for step in steps:
            parts[step.part] += step_seconds(step, candidate.model)
        per_candidate.append(parts)
        floors.append(sum(link_floor_seconds(step, candidate.model) for step in steps))
    totals = [max(sum(p.values()), 1e-9) for p in per_candidate]
    point = math.exp(sum(math.log(t) for t in totals) / len(totals))
    # The candidates' mean parts, scaled to add up to the cell's estimate.
    scale = point / (sum(totals) / len(totals))
    parts = {k: scale * sum(p[k] for p in per_candidate) / len(per_candidate) for k in PARTS}
    tree = build_tree(cell.topo, cell.nodes)
    # Node count moves distribution, verify and start-up; the tree's shape, distribution.
    exposed = {
        "nodes": (parts["distribute"] + parts["verify"] + parts["overhead"]) / point,
        "shape": parts["distribute"] / point,
    }
    sizes = () if cell.experiment == PING else cell.sizes  # a ping's pads move no blob
    beyond = reach(coverage, cell.nodes, sizes, tree.max_fanout, tree.depth, exposed)
    uninformed: dict[str, float] = {}
    for candidate in candidates:
        for name, value in _uninformed_seconds(steps, candidate).items():
            uninformed[name] = uninformed.get(name, 0.0) + value / len(candidates)
    assumed = sum(uninformed.values()) / point
    disagreement = 0.5 * math.log(max(totals) / min(totals))
    spread = math.sqrt(base2 + disagreement**2 + beyond.spread**2 + (ASSUMED_SPREAD * assumed) ** 2)
    floor = scale * sum(floors) / len(floors)
    return _CellEstimate(CellTime(cell, point, parts), spread, uninformed, beyond.dimensions, floor)


def plan_steps(cells: Sequence[Cell], verify: bool) -> list[tuple[Cell, list[Step]]]:
    """Every step of every cell a plan runs."""
    return [(cell, cell_steps(cell, verify)) for cell in cells]


def interval(
    cells: Sequence[tuple[Cell, Sequence[Step]]],
    candidates: Sequence[Candidate],
    plan_env: Environment,
) -> PlanInterval:
    """Each cell's estimate (over the steps given for it) and the 80% interval of their sum."""
    coverage = _merged([c.coverage for c in candidates])
    # The best-matching candidate's environment; the others' difference from it
    # shows as disagreement.
    environment = min(c.environment_spread for c in candidates)
    base2 = max(c.coverage.sweep_spread for c in candidates) ** 2 + environment**2
    estimates = [_estimate_cell(c, steps, candidates, coverage, base2) for c, steps in cells]
    total = sum(e.time.seconds for e in estimates)
    # Systematic: one sweep meets one load, so the cells' bounds add up.  A link floor
    # is a lower bound: it keeps its own low end, and its high end is the most the box
    # runs took over their floor (floor_ratio.py).
    low = sum((e.time.seconds - e.floor) * math.exp(-Z * e.spread) + e.floor for e in estimates)
    high = sum(
        (e.time.seconds + (FLOOR_RATIO_HIGH - 1) * e.floor) * math.exp(Z * e.spread)
        for e in estimates
    )
    if total > 0:
        # Cell-to-cell noise averages out over the plan; it widens the bounds in quadrature.
        noise = Z * coverage.cell_spread * math.sqrt(sum(e.time.seconds**2 for e in estimates))
        noise /= total
        low = total * math.exp(-math.hypot(math.log(total / low), noise))
        high = total * math.exp(math.hypot(math.log(high / total), noise))
    uninformed: dict[str, float] = {}
    words: dict[str, tuple[float, str]] = {}
    for e in estimates:
        for name, value in e.uninformed.items():
            uninformed[name] = uninformed.get(name, 0.0) + value
        for dimension, (doublings, text) in e.beyond.items():
            if doublings > words.get(dimension, (0.0, ""))[0]:
                words[dimension] = (doublings, text)
    assumptions = _assumptions(candidates, uninformed, total, plan_env)
    floor = sum(e.floor for e in estimates)
    if floor > 0 and total > 0:
        gbps = candidates[0].model.link_gbps
        assumptions.append(Assumption("link floor", floor_assumption_text(gbps), floor / total))
    return PlanInterval(
        cells=[e.time for e in estimates],
        low=low,
        high=high,
        assumptions=assumptions,
        extrapolated=[t for _, t in words.values()] + _environment_words(candidates, plan_env),
        model=candidates[0].model,
        sources=[c.model.source for c in candidates],
    )


def _assumptions(
    candidates: Sequence[Candidate],
    uninformed: dict[str, float],
    total: float,
    plan_env: Environment,
) -> list[Assumption]:
    out: list[Assumption] = []
    defaults = [c for c in candidates if c.informed is None]
    if defaults:
        share = len(defaults) / len(candidates)
        what = defaults[0].coverage.what
        detail = (
            f"no history for this environment: stated {what}"
            if share == 1
            else f"stated {what} weigh in beside the history: they match where the plan runs"
        )
        out.append(Assumption("defaults", detail, share))
    unknown = [c for c in candidates if c.match == "unknown" and c.informed is not None]
    if unknown:
        out.append(
            Assumption(
                "environment",
                f"history does not record its machines: taken as the plan's ({plan_env})",
                len(unknown) / len(candidates),
            )
        )
    timed = frozenset().union(*(c.timed for c in candidates))
    blobs = frozenset().union(*(c.blobs for c in candidates))
    deduplicated_only = bool(blobs) and blobs <= DEDUPLICATED
    for name, seconds in sorted(uninformed.items(), key=lambda item: -item[1]):
        value = getattr(candidates[0].model, name)
        if deduplicated_only and name in MOVED_PARAMETERS:
            why = (
                f"history holds {'/'.join(sorted(blobs))} blobs only, which move one chunk "
                "through the tree: stated default"
            )
        elif name in timed:
            why = "history cannot tell it apart, so it stays near its stated default"
        else:
            why = "history never times it: stated default"
        detail = f"{PARAMETER_WORDS.get(name, name)} {value:.3g} s: {why}"
        out.append(Assumption(name, detail, seconds / total if total > 0 else 0.0))
    return out


def _environment_words(candidates: Sequence[Candidate], plan_env: Environment) -> list[str]:
    others = [c for c in candidates if c.match in ("other", "foreign")]
    if not others:
        return []
    held = ", ".join(sorted({str(c.coverage.environment) for c in others}))
    return [f"another environment: {plan_env}, history has {held}"]
