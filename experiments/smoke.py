"""A billed sweep's smoke cell: planned and priced with the plan, run before the study.

experiments/model/smoke.py chooses the cells (fewest nodes, two topologies,
16M, every strategy); here they are priced the way the study's cells are
(estimate_for, with verify on), shown on the plan's own line, and run by
`kary run` before the first study cell, through the same runner and backend
settings, into the raw tree's `smoke/` (cell_layout.SMOKE_DIR), which `kary
parse` never reads.  If a smoke cell does not succeed, the sweep stops there
with one line and exit status 1; no study cell has started, so nothing of the
study's raw tree is touched.

Only billed backends (not model.places.UNBILLED) run one: a local failure costs
nothing, so there is nothing to save by checking first.

Resume: a smoke cell that succeeded before under the same data dir is not run
again when its run.json matches this sweep: the same identity (model/identity.py:
backend, place, layout, links, image, Flux view, blob kind, cluster, instance
type, ..., as the smoke cell would run it now), templates (template_hash), size
and strategies.  A per-cell pass does not excuse a nested sweep, nor a random-blob
pass a zero-blob one; a record from before smoke cells recorded their identity
is not relied on.  A cluster this run creates (--up) is new, so it is checked
again; --force runs the smoke cell again too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from experiments.estimate.time_model import Estimate
from experiments.files import write_atomic
from experiments.formats.cell_layout import SMOKE_MARKER, format_size, smoke_root
from experiments.formats.run_record import RunRecord, UnreadableRecord, read_record
from experiments.model.cluster_spec import ClusterSpec
from experiments.model.identity import StudySettings, identity_differences
from experiments.model.plan import Cell, ExperimentSpec, Plan
from experiments.model.render import RenderOptions, template_hash
from experiments.model.smoke import SMOKE_SIZE, smoke_cells
from experiments.model.sweep import Sweep
from experiments.plan_view import format_duration

if TYPE_CHECKING:
    from experiments.backends.base import BackendSettings
    from experiments.execution.ledger import Ledger
    from experiments.execution.summary import RunSummary

__all__ = [
    "NONE",
    "NO_SMOKE",
    "PASSED",
    "RUN",
    "SMOKE_LABEL",
    "SmokePlan",
    "plan_smoke",
    "run_smoke",
]

RUN, PASSED, NONE = "run", "passed", "none"
NOT_BILLED = "not billed"
SMOKE_LABEL = "kary/smoke"
_MARKER_TEXT = (
    "kary's smoke cells: a small run made before a billed sweep's first cell, to find a\n"
    "broken image, operator or template cheaply.  Not the study's data: `kary parse` skips\n"
    "this folder.\n"
)


@dataclass(frozen=True)
class SmokePlan:
    """What a sweep does about its smoke cell: run it, rely on an earlier pass, or none."""

    state: str  # RUN, PASSED or NONE
    reason: str = ""  # why NONE: not billed, --no-smoke, nothing to run
    cells: tuple[Cell, ...] = ()
    root: Path | None = None  # <data>/smoke
    estimate: Estimate | None = None  # for RUN
    cluster: str | None = None
    # What shapes the smoke cells' numbers (the study's, verify on), recorded in their run.json.
    settings: StudySettings | None = None

    @property
    def runs(self) -> bool:
        return self.state == RUN

    @property
    def cost_usd_high(self) -> float:
        """What --max-cost holds the smoke cell to (the high end of its interval)."""
        return self.estimate.cost_usd_high if self.runs and self.estimate else 0.0

    def lines(self) -> list[str]:
        """The plan's smoke line: its own time and dollars, or why there is none."""
        if self.state == NONE:
            # An unbilled plan reads as it did before smoke cells: none is the rule there.
            return [] if self.reason == NOT_BILLED else [f"smoke cell: none ({self.reason})"]
        what = self.description()
        if self.state == PASSED:
            on = f" on {self.cluster}" if self.cluster else ""
            return [
                f"smoke cell: passed before{on} ({what}; in {self.root}): not run again "
                "(--force runs it again)"
            ]
        assert self.estimate is not None
        est = self.estimate
        time = (
            f"{format_duration(est.seconds)} ({format_duration(est.seconds_low)} - "
            f"{format_duration(est.seconds_high)})"
        )
        if est.instance_type is None:
            cost = "cost unknown (no --cluster FILE to price)"
        else:
            cost = f"${est.cost_usd:.2f} (${est.cost_usd_low:.2f} - ${est.cost_usd_high:.2f})"
        return [
            f"smoke cell: {what}: {time}, {cost}",
            f"  runs before the first cell and stops the sweep if it fails; kept in {self.root} "
            "(never parsed); --no-smoke skips it",
        ]

    def description(self) -> str:
        first = self.cells[0]
        strategies = (
            f"strategies {','.join(first.strategies)}" if first.strategies else "experiment ping"
        )
        topos = " and ".join(cell.topo for cell in self.cells)
        return f"{first.nodes} nodes, {topos}, {format_size(SMOKE_SIZE)}, {strategies}, verify on"

    def record(self) -> dict[str, Any]:
        """The smoke cell in `kary plan --json`."""
        data: dict[str, Any] = {"state": self.state}
        if self.state == NONE:
            data["reason"] = self.reason
            return data
        data.update(
            cells=[cell.id for cell in self.cells],
            nodes=self.cells[0].nodes,
            topologies=[cell.topo for cell in self.cells],
            size_bytes=SMOKE_SIZE,
            strategies=list(self.cells[0].strategies),
            verify=True,
            dir=str(self.root),
        )
        if self.runs and self.estimate is not None:
            est = self.estimate
            data.update(
                predicted_seconds=round(est.seconds, 3),
                predicted_seconds_low=round(est.seconds_low, 3),
                predicted_seconds_high=round(est.seconds_high, 3),
                estimated_cost_usd=round(est.cost_usd, 2) if est.instance_type else None,
                estimated_cost_usd_low=round(est.cost_usd_low, 2) if est.instance_type else None,
                estimated_cost_usd_high=round(est.cost_usd_high, 2) if est.instance_type else None,
            )
        return data


# A PlannedSweep made without one (api.plan always plans one).
NO_SMOKE = SmokePlan(NONE, "not planned")


def plan_smoke(
    sweep: Sweep,
    cells: Sequence[Cell],
    to_run: Sequence[Cell],
    *,
    billed: bool,
    render: RenderOptions,
    cluster: str | None,
    data_dir: Path,
    estimate: Callable[[list[Cell]], Estimate],
    settings: StudySettings | None = None,
) -> SmokePlan:
    """The smoke cell of a sweep whose cells are `cells` (`to_run` still to run).

    `estimate` prices cells as the study's are (api.plan: estimate_for, verify on);
    `settings` are the study's (model/identity.py): the smoke cell runs them, verify on.
    """
    if not billed:
        return SmokePlan(NONE, NOT_BILLED)
    if not sweep.smoke:
        return SmokePlan(NONE, "--no-smoke")
    if not to_run:
        return SmokePlan(NONE, "no cell to run")
    chosen = smoke_cells(cells)
    root = smoke_root(data_dir)
    smoke_settings = dataclasses.replace(settings, verify=True) if settings else None
    if _passed_before(sweep, chosen, root, render, cluster, smoke_settings):
        return SmokePlan(
            PASSED, cells=tuple(chosen), root=root, cluster=cluster, settings=smoke_settings
        )
    return SmokePlan(
        RUN,
        cells=tuple(chosen),
        root=root,
        estimate=estimate(chosen),
        cluster=cluster,
        settings=smoke_settings,
    )


def _passed_before(
    sweep: Sweep,
    cells: list[Cell],
    root: Path,
    render: RenderOptions,
    cluster: str | None,
    settings: StudySettings | None,
) -> bool:
    """Every smoke cell succeeded before, here, on this cluster, with this image and
    templates, and (given `settings`) as the smoke cell would run now: its identity."""
    if sweep.force or sweep.up:
        return False
    templates = template_hash(sweep.template)
    for cell in cells:
        try:
            record = read_record(cell.raw_dir(root))
        except UnreadableRecord:  # nothing to rely on: check again
            return False
        if record is None or record.state != "succeeded":
            return False
        if (record.cluster, record.image, record.template_hash) != (
            cluster,
            render.image,
            templates,
        ):
            return False
        if (record.sizes, record.strategies) != (list(cell.sizes), list(cell.strategies)):
            return False
        if settings is not None and not _same_identity(record, settings.identity(cell)):
            return False
    return True


def _same_identity(record: RunRecord, planned: dict[str, Any]) -> bool:
    """The record states the identity the smoke cell has now (a record without one,
    written before smoke cells recorded it, could be any layout: not relied on)."""
    recorded = (record.model_extra or {}).get("identity")
    if not isinstance(recorded, dict):
        return False
    stated = {name: recorded[name] for name in planned if name in recorded}
    return set(stated) == set(planned) and not identity_differences(planned, stated)


def run_smoke(
    smoke: SmokePlan,
    *,
    backend: str,
    settings: BackendSettings,
    spec: ExperimentSpec,
    ledger: Ledger,
    template_dir: Path | None,
    cluster: ClusterSpec | None,
    timeout: float | None,
    echo: Callable[[str], None],
    make_backend: Callable[[str, Any], Any] | None = None,
    command: str = "kary run",
    what: str = "study cell",
) -> RunSummary | None:
    """Run the smoke cells; None when they passed, else the study's summary (nothing started).

    A failure is echoed as one line; the summary's `stopped_because` says the
    same, so `kary run --json` and the Python API see it (exit status 1).
    `command` and `what` name the caller and what the smoke cell guards (`kary
    race`: a race block); `make_backend` is the caller's (tests hand in a fake).
    """
    from experiments.backends import make_backend as backend_named
    from experiments.execution.ledger import Ledger
    from experiments.execution.progress import SilentReporter
    from experiments.execution.runner import run_plan
    from experiments.execution.summary import RunSummary

    if smoke.state == PASSED:
        echo(f"{command}: {smoke.lines()[0]}")
        return None
    if not smoke.runs or smoke.root is None or smoke.estimate is None:
        return None
    cells = list(smoke.cells)
    root = smoke.root
    # The marker keeps these cells out of a parse even where the tree is copied one
    # folder down (analysis/read/walk.py).
    write_atomic(root / SMOKE_MARKER, _MARKER_TEXT)
    assert settings.render is not None
    # Labelled, so `kubectl get miniclusters -l kary/smoke` tells it from the study's.
    labels = {**settings.render.labels, SMOKE_LABEL: "true"}
    render = dataclasses.replace(settings.render, verify=True, labels=labels)
    spec = spec.model_copy(update={"data_dir": root, "sizes": [SMOKE_SIZE]})
    echo(
        f"{command}: smoke cell first ({smoke.description()}; predicted "
        f"{format_duration(smoke.estimate.seconds)}) in {root}"
    )
    summary = run_plan(
        Plan(spec, cells, [SMOKE_SIZE]),
        (make_backend or backend_named)(backend, dataclasses.replace(settings, render=render)),
        render,
        ledger=Ledger(to_run=cells, done=[], failed=[]),
        template_dir=template_dir,
        timeout=timeout,
        predicted={c.cell.id: c.seconds for c in smoke.estimate.cells},
        reporter=SilentReporter(),
        cluster=cluster.name if cluster else None,
        instance_type=cluster.instance_type if cluster else None,
        settings=smoke.settings,
    )
    study = RunSummary(
        skipped_done=len(ledger.done),
        skipped_failed=len(ledger.failed),
        not_started=len(ledger.to_run),
        wall_seconds=summary.wall_seconds,
    )
    if summary.interrupted:
        echo(f"{command}: interrupted during the smoke cell; no {what} started")
        study.interrupted = True
        return study
    bad = [o for o in summary.outcomes if o.state != "succeeded"]
    if not bad and not summary.stopped_because and not summary.not_started:
        echo(f"{command}: smoke cell passed in {format_duration(summary.wall_seconds)}")
        return None
    if bad:
        why = f"{bad[0].cell.id} {bad[0].state}: {bad[0].error}"
    else:
        why = summary.stopped_because or "it did not finish"
    study.stopped_because = (
        f"the smoke cell failed ({why}), so no {what} started; its record is in {root} "
        "(--no-smoke skips the smoke cell)"
    )
    echo(f"{command}: {study.stopped_because}")
    return study
