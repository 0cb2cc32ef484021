"""kary as a library: a sweep spec, `plan()` and `run()`.  The `kary` commands are
thin layers over these, so a notebook gets exactly what the command line does.

    from experiments import Sweep, plan, run

    sweep = Sweep(exact_nodes=8, topos=["kary:1", "kary:2"], sizes="16M", iterations=2)
    sweep = Sweep.from_file("study.yaml", iterations=3)   # or a sweep file, with overrides
    planned = plan(sweep)        # validated and priced; nothing runs
    print(planned.text())        # what `kary plan` prints
    summary = run(planned)       # what `kary run` does; a RunSummary
    summary.exit_code            # 0 all succeeded, 1 some failed, 130 interrupted

Everything is checked in `plan()`, before anything starts; a mistake is a
UserError with a one-line message.  A billed sweep asks before it starts (on
a terminal) or needs `yes=True`.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Callable, Sequence
from pathlib import Path

from experiments.errors import UserError
from experiments.estimate.plan_estimate import estimate_for
from experiments.estimate.time_model import Estimate
from experiments.execution.ledger import read_ledger
from experiments.execution.progress import Reporter
from experiments.execution.replacements import PREEMPTION_WAIT_S, ReplacementWait
from experiments.execution.summary import RunSummary
from experiments.files import check_data_dir, write_atomic
from experiments.formats.blobs import DEFAULT_BLOB, check_blob
from experiments.formats.cell_layout import sweep_copy_path
from experiments.machine_probes import here_now
from experiments.model.cell_filter import parse_only
from experiments.model.disk import disk_need
from experiments.model.identity import StudySettings
from experiments.model.operator import OPERATOR_IMAGE
from experiments.model.pins import OPERATOR_PIN_KEY, require_pinned
from experiments.model.places import UNBILLED, describe_backend
from experiments.model.plan import Cell, ExperimentSpec, plan_experiment
from experiments.model.pod_resources import pod_requests
from experiments.model.render import (
    RenderOptions,
    check_image_runs,
    flux_view_for,
    template_hash,
)
from experiments.model.sweep import Sweep, load_sweep
from experiments.model.sweep_check import CheckedSweep, check_cells, check_sweep
from experiments.model.sweep_file import SweepFile
from experiments.model.validate import image_ref
from experiments.plan_view import format_duration
from experiments.planned import PlannedSweep, cells_text, faults_line, stderr_line
from experiments.smoke import plan_smoke, run_smoke

__all__ = ["PlannedSweep", "Sweep", "check_pins", "load_sweep", "plan", "run"]


def plan(sweep: Sweep) -> PlannedSweep:
    """Check `sweep`, list its cells, read which still run, and price them.

    Every flag is checked once, here (model/sweep_check.py); nothing is
    started; every mistake is a one-line UserError.
    """
    checked = check_sweep(sweep, here_now())
    check_data_dir(Path(sweep.data_dir))
    seed = sweep.seed
    if sweep.order == "random" and seed is None:
        seed = secrets.randbelow(2**31)
    spec = ExperimentSpec(
        designs_file=sweep.designs,
        exact_nodes=sweep.exact_nodes,
        max_nodes=sweep.max_nodes,
        # --topo takes a comma list as --strategy does: kary:1,kary:2 is two topologies.
        topos=[topo.strip() for value in sweep.topos for topo in value.split(",") if topo.strip()],
        iters=sweep.iterations,
        sizes=checked.sizes,
        min_size_gb=sweep.min_size_gb,
        max_size_gb=sweep.max_size_gb,
        strategies=checked.strategies,
        experiment=sweep.experiment,
        data_dir=sweep.data_dir,
        name=sweep.name,
        backend=checked.backend,
        order=sweep.order,  # type: ignore[arg-type]
        seed=seed,
        matrix={axis: list(values) for axis, values in sweep.matrix.items()},
        zip={axis: list(values) for axis, values in sweep.zip.items()},
        chunksize=checked.chunksize,
        mmap=sweep.mmap,
        purge_target_size=checked.purge_target_size,
        network=checked.links.dirname(),
        blob=check_blob(sweep.blob or DEFAULT_BLOB),
        sweep_file=str(sweep.file.path.resolve()) if sweep.file else None,
        sweep_sha256=sweep.file.sha256 if sweep.file else None,
    )
    cells = plan_experiment(spec).only(parse_only(sweep.only))
    check_cells(checked, cells.cells, cells.max_nodes)
    backend, cluster = checked.backend, checked.cluster
    # Verifying every rank's copy is cheap where kary runs, and on by default there.
    verify = (backend in UNBILLED) if sweep.verify is None else sweep.verify
    render = RenderOptions(
        name=sweep.name,
        image=checked.image,
        flux_view=image_ref(sweep.flux_view, "--flux-view") if sweep.flux_view else None,
        verify=verify,
        node_selector=dict(cluster.node_selector) if cluster else {},
        tolerations=tuple(cluster.tolerations) if cluster else (),
        requests=pod_requests(cluster, _pod_writes(checked, cells.cells)) or {},
    )
    settings = study_settings(checked, render)
    ledger = read_ledger(
        cells.cells,
        spec.data_dir,
        sweep.rerun_failed,
        sweep.force,
        settings=settings,
        template_hash=template_hash(sweep.template),
    )
    if backend not in UNBILLED:  # a cluster's backend runs the image's own Flux (or a view's)
        check_image_runs(render.image, sorted({cell.topo for cell in cells.cells}))

    def priced(to_run: list[Cell], verify: bool, up: bool, down: bool) -> Estimate:
        return estimate_for(
            to_run,
            backend,
            verify,
            cluster,
            sweep.history,
            up=up,
            down=down,
            links=checked.links,
            image=render.image,
            flux_view=render.flux_view,
            place=checked.place,
        )

    estimate = priced(ledger.to_run, verify, sweep.up, sweep.down)
    smoke = plan_smoke(
        sweep,
        cells.cells,
        ledger.to_run,
        billed=backend not in UNBILLED,
        render=render,
        cluster=cluster.name if cluster else None,
        data_dir=spec.data_dir,
        # Priced as the study's cells are, with verify on, inside the study's session.
        estimate=lambda chosen: priced(chosen, True, False, False),
        settings=settings,
    )
    return PlannedSweep(sweep, cells, ledger, estimate, render, checked, smoke, settings)


def study_settings(checked: CheckedSweep, render: RenderOptions) -> StudySettings:
    """What every cell of the plan shares that shapes its numbers (model/identity.py)."""
    runs_image = checked.backend not in UNBILLED  # elsewhere the Flux on PATH, or the emulator
    cluster = checked.cluster
    return StudySettings(
        backend=checked.backend,
        place=checked.place,
        layout=checked.layout,
        links=checked.links,
        image=render.image if runs_image else None,
        flux_view=flux_view_for(render.image, render.flux_view) if runs_image else None,
        verify=render.verify,
        cluster=cluster.name if cluster else None,
        instance_type=cluster.instance_type if cluster else None,
        emulator_faults=tuple(checked.sweep.emulator_faults),
        shared_nodes=checked.sweep.allow_shared_nodes,
    )


def check_pins(planned: PlannedSweep) -> None:
    """A billed run's flux view, and the operator `--up` installs, named by digest
    (model/pins.py): else a one-line UserError before anything is made."""
    render = planned.render
    view = flux_view_for(render.image, render.flux_view)
    if view is not None:
        require_pinned(
            view,
            "the flux view",
            "pass --flux-view REPO@sha256:DIGEST (a sweep file: flux_view)",
        )
    cluster = planned.cluster
    if planned.sweep.up and cluster is not None and cluster.operator_image is None:
        require_pinned(
            OPERATOR_IMAGE,
            "the Flux Operator's controller image",
            f"name it in {cluster.path} as metadata.annotations {OPERATOR_PIN_KEY}: "
            "ghcr.io/flux-framework/flux-operator@sha256:DIGEST",
        )


def run(
    sweep: Sweep | PlannedSweep,
    *,
    yes: bool = False,
    timeout: float | None = None,
    max_cost: float | None = None,
    max_hours: float | None = None,
    reporter: Reporter | None = None,
    echo: Callable[[str], None] = stderr_line,
    preemption_wait_s: float = PREEMPTION_WAIT_S,
) -> RunSummary:
    """Run a sweep (planned here if given as a Sweep) and record every cell in the raw tree.

    A billed backend shows the plan and asks first (`yes=True` skips; without a
    terminal it refuses).  `max_cost` refuses a plan above it and stops before a
    cell that would pass it; `max_hours` is the --up cluster's lease.  Progress
    goes to `reporter` (default: a progress bar); one-line notes to `echo`.
    Ctrl-C stops cleanly: the summary says `interrupted` and the same call resumes.
    After a cell that lost a node to preemption, the run waits at most
    `preemption_wait_s` (billed) for replacement nodes, else stops with the cells left.
    A billed sweep runs its smoke cell first (experiments/smoke.py); if that fails, no
    cell runs and the summary's `stopped_because` says why.
    """
    from experiments.backends import make_backend
    from experiments.execution.progress import RichReporter
    from experiments.execution.runner import run_plan

    planned = plan(sweep) if isinstance(sweep, Sweep) else sweep
    if timeout is not None and timeout <= 0:
        raise UserError(f"invalid --timeout {timeout:g}: must be > 0 seconds")
    if preemption_wait_s < 0:
        raise UserError(f"invalid --preemption-wait {preemption_wait_s:g}: must be >= 0 seconds")
    # --up/--down and --max-cost: checked now, before anything starts or is billed.
    guard = planned.guard(max_cost, max_hours, echo)
    guard.cap.check_plan(
        planned.cost_usd_high,
        high_end=True,
        note=planned.capacity_note(),
        what=planned.guarded_text(),
    )
    if planned.billed:
        check_pins(planned)
    to_run, ledger = planned.ledger.to_run, planned.ledger
    if not to_run:
        message = f"nothing to run: {cells_text(len(ledger.done))} done"
        if ledger.failed:
            message += f", {len(ledger.failed)} failed before (--rerun-failed to retry them)"
        echo(message)
        if planned.sweep.down and guard.provider is not None:
            with dataclasses.replace(guard, up=False).session():
                pass
        return RunSummary(skipped_done=len(ledger.done), skipped_failed=len(ledger.failed))
    if planned.billed:
        _confirm(planned, yes, max_cost, max_hours)
    settings = planned.backend_settings()
    backend = make_backend(planned.backend, settings)
    spec = planned.plan.spec
    echo(
        f"kary run: {cells_text(len(to_run))} on {describe_backend(spec.backend, planned.place)}; "
        f"predicted "
        f"{format_duration(planned.estimate.seconds)}; raw results in {spec.data_dir}"
        + (f"; seed {spec.seed}" if spec.seed is not None else "")
    )
    if planned.sweep.emulator_faults:
        echo(f"kary run: {faults_line(planned.sweep.emulator_faults)}")
    for warning in planned.warnings():
        echo(f"kary run: {warning}")
    if planned.sweep.file is not None:
        _keep_sweep_file(planned.sweep.file, spec.data_dir)
    cluster = planned.cluster
    try:
        # --up creates the cluster before the backend comes up; --down deletes it after.
        with guard.session():
            # A billed sweep's smoke cell first: if it fails, no study cell starts.
            stopped = run_smoke(
                planned.smoke,
                backend=planned.backend,
                settings=settings,
                spec=spec,
                ledger=ledger,
                template_dir=planned.sweep.template,
                cluster=cluster,
                timeout=timeout,
                echo=echo,
            )
            if stopped is not None:
                return stopped
            return run_plan(
                planned.plan,
                backend,
                planned.render,
                ledger=ledger,
                template_dir=planned.sweep.template,
                timeout=timeout,
                predicted={c.cell.id: c.seconds for c in planned.estimate.cells},
                reporter=reporter or RichReporter(),
                cluster=cluster.name if cluster else None,
                instance_type=cluster.instance_type if cluster else None,
                before_cell=guard.cap.before_cell,
                settings=planned.settings,
                after_preemption=ReplacementWait(
                    backend, preemption_wait_s, guard.cap.hourly_usd, echo
                ),
            )
    except KeyboardInterrupt:
        echo("kary run: interrupted while the cluster was being created")
        return RunSummary(
            skipped_done=len(ledger.done),
            skipped_failed=len(ledger.failed),
            not_started=len(to_run),
            interrupted=True,
        )


def _keep_sweep_file(file: SweepFile, data_dir: Path) -> None:
    """Keep the sweep file's bytes in the raw tree, named by the hash each run.json records."""
    copy = sweep_copy_path(data_dir, file.sha256)
    if not copy.is_file():
        write_atomic(copy, file.data)


def _confirm(
    planned: PlannedSweep, yes: bool, max_cost: float | None, max_hours: float | None
) -> None:
    """Billed runs show their plan and ask; without a terminal they need --yes."""
    from experiments.confirm import confirm_billed

    if yes:
        return
    confirm_billed(
        planned.text(max_cost, max_hours).splitlines(),
        "Start this run?",
        yes,
        "this run is billed and there is no terminal to confirm it: "
        "check the plan above and add --yes",
    )


def _pod_writes(checked: CheckedSweep, cells: Sequence[Cell]) -> int | None:
    """What rank 0's pod writes at its peak on a cluster (model/disk.py), which each pod
    requests as ephemeral-storage (model/pod_resources.py); None elsewhere."""
    if checked.cluster is None or checked.backend != "kubernetes" or not cells:
        return None
    need = disk_need(cells, checked.layout, checked.image, checked.cluster.provider)
    return need.pod_writes
