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
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.backends import UNBILLED, check_backend_name, default_backend, describe_backend
from experiments.errors import UserError
from experiments.estimate.layouts import LayoutEstimate, layout_estimates
from experiments.estimate.plan_estimate import estimate_for
from experiments.estimate.time_model import Estimate
from experiments.execution.ledger import Ledger, read_ledger
from experiments.execution.progress import Reporter
from experiments.execution.summary import RunSummary
from experiments.files import write_atomic
from experiments.formats.cell_layout import sweep_copy_path
from experiments.formats.labels import new_sweep_id
from experiments.formats.run_record import BOX, NESTED
from experiments.model.axes import knob_flag
from experiments.model.cell_filter import parse_only
from experiments.model.cluster_spec import ClusterSpec, load_cluster_spec
from experiments.model.layout import check_layout, effective_layout
from experiments.model.plan import ExperimentSpec, Plan, plan_experiment
from experiments.model.render import RenderOptions, check_image_runs
from experiments.model.sweep_file import SweepFile
from experiments.model.validate import image_ref
from experiments.plan_view import format_duration, layout_lines, plan_json, plan_text
from experiments.sweep import (
    Sweep,
    check_sweep,
    load_sweep,
    sweep_sizes,
    sweep_strategies,
)

__all__ = ["PlannedSweep", "Sweep", "load_sweep", "plan", "run"]


@dataclass(frozen=True)
class PlannedSweep:
    """A validated, priced sweep: every cell, which still run (the ledger), and the estimate."""

    sweep: Sweep
    plan: Plan
    ledger: Ledger
    estimate: Estimate
    render: RenderOptions
    cluster: ClusterSpec | None

    @property
    def backend(self) -> str:
        return self.plan.spec.backend

    @property
    def place(self) -> str | None:
        """Where the flux backend runs the cells (box, test-instance, allocation); else None."""
        return _flux_place(self.sweep) if self.backend == "flux" else None

    @property
    def _cluster_name(self) -> str | None:
        return self.cluster.name if self.cluster else None

    @property
    def billed(self) -> bool:
        return self.backend not in UNBILLED

    def layouts(self) -> list[LayoutEstimate]:
        """The cells priced per layout: on a cluster, or where --layout nested is asked."""
        if self.backend != "kubernetes" and self.sweep.layout != NESTED:
            return []
        return layout_estimates(self.estimate)

    def cpu_bound_line(self) -> str | None:
        """A warning when box cells would measure this machine's cores, not its links."""
        if self.place != BOX or not self.ledger.to_run:
            return None
        from experiments.backends.flux.box import box_bottlenecks
        from experiments.box.links import link_settings

        links = link_settings(
            self.sweep.link_bandwidth, self.sweep.link_latency, self.sweep.root_link_bandwidth
        )
        bound = [
            c for c in self.ledger.to_run if any(b["cpu_bound"] for b in box_bottlenecks(c, links))
        ]
        if not bound:
            return None
        return (
            f"warning: {_cells(len(bound))} of {len(self.ledger.to_run)} would be CPU-bound in "
            "the box (every broker shares this machine's cores: at 5 s/GB per rank, the CPU is "
            "at least half the links' floor), so they measure the machine as much as the "
            "network; slower --link-bandwidth or fewer nodes make the links the bottleneck"
        )

    def text(self, max_cost: float | None = None, max_hours: float | None = None) -> str:
        """The plan as `kary plan` prints it (with what --up/--down will run)."""
        lines = plan_text(
            self.plan, self.ledger, self.estimate, self._cluster_name, self.place
        ).splitlines()
        if warning := self.cpu_bound_line():
            lines.append(warning)
        if self.sweep.group_size:
            lines.append(
                "note: the time model has no term for the groups' uplinks: where a tree "
                "crosses them more than its links' floor says, cells take longer than planned"
            )
        lines += layout_lines(self.layouts(), effective_layout(self.sweep.layout, self.backend))
        lines += self.guard(max_cost, max_hours).plan_lines()
        if self.sweep.emulator_faults:
            lines.append(faults_line(self.sweep.emulator_faults))
        lines += self._sweep_lines()
        return "\n".join(lines) + "\n"

    def _sweep_lines(self) -> list[str]:
        """Where the cells came from: the sweep file (by hash) and the --only filter."""
        lines = []
        if self.sweep.file is not None:
            lines.append(
                f"sweep file: {self.sweep.file.path} (sha256 {self.sweep.file.sha256[:12]})"
            )
        chosen = parse_only(self.sweep.only)
        if chosen is not None:
            lines.append(f"only: {chosen.text}")
        return lines

    def to_json(self, max_cost: float | None = None, max_hours: float | None = None) -> Any:
        """The plan as `kary plan --json` prints it."""
        data = plan_json(self.plan, self.ledger, self.estimate, self._cluster_name)
        if layouts := self.layouts():
            data["layouts"] = [layout.record() for layout in layouts]
        cluster_lines = self.guard(max_cost, max_hours).plan_lines()
        if cluster_lines:
            data["cluster_lifecycle"] = cluster_lines
        if self.sweep.emulator_faults:
            data["emulator_faults"] = list(self.sweep.emulator_faults)
        if self.sweep.file is not None:
            data["sweep_file"] = {
                "path": str(self.sweep.file.path),
                "sha256": self.sweep.file.sha256,
            }
        chosen = parse_only(self.sweep.only)
        if chosen is not None:
            data["only"] = chosen.text
        return data

    def check_cost(self, max_cost: float | None, max_hours: float | None = None) -> None:
        """Refuse (UserError) when the estimate's high end passes `max_cost` (--max-cost)."""
        guard = self.guard(max_cost, max_hours)
        guard.cap.check_plan(self.estimate.cost_usd_high, high_end=True)

    def guard(
        self,
        max_cost: float | None = None,
        max_hours: float | None = None,
        echo: Callable[[str], None] | None = None,
    ) -> Any:
        """The cluster session (--up/--down) and spending cap around this sweep."""
        from experiments.clusters.session import sweep_guard

        return sweep_guard(
            self.cluster,
            self.estimate,
            up=self.sweep.up,
            down=self.sweep.down,
            max_hours=max_hours,
            max_cost=max_cost,
            echo=echo or _stderr,
        )


def faults_line(faults: Sequence[str]) -> str:
    return (
        f"emulator faults: {', '.join(faults)} (a testing aid: these cells test the "
        "template, they measure nothing)"
    )


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _choose_backend(sweep: Sweep, cluster: ClusterSpec | None) -> str:
    """The backend a sweep runs on; shaped links run real Flux in a box where flux-core is."""
    shaped = _shaped(sweep)
    if sweep.backend is not None:
        backend = check_backend_name(sweep.backend)
    elif cluster is not None:
        backend = "kubernetes"
    elif sweep.emulator_faults:
        backend = "local"
    elif sweep.place is not None:
        backend = "flux"
    else:
        backend = default_backend()
    if shaped and backend not in ("local", "flux"):
        raise UserError(
            "--link-bandwidth and --link-latency shape links on this machine: the flux backend "
            "(a box) or the emulator (local), not " + backend
        )
    if sweep.root_link_bandwidth and backend != "flux":
        raise UserError("--root-link-bandwidth shapes a box's rank 0 link: flux backend only")
    if sweep.group_size is not None or sweep.group_link_bandwidth:
        if backend != "flux":
            raise UserError(
                "--group-size and --group-link-bandwidth group a box's nodes: flux backend only"
            )
        from experiments.box.links import link_settings

        try:
            link_settings(None, None, None, sweep.group_size, sweep.group_link_bandwidth)
        except ValueError as err:
            raise UserError(str(err)) from None
    if sweep.place is not None and backend != "flux":
        raise UserError(f"--place says where real Flux runs: flux backend only, not {backend}")
    if sweep.emulator_faults and backend != "local":
        raise UserError("--emulator-fault injects faults into the emulator: local backend only")
    check_layout(
        sweep.layout, backend, _flux_place(sweep) if backend == "flux" and sweep.layout else None
    )
    return backend


def plan(sweep: Sweep) -> PlannedSweep:
    """Validate `sweep`, list its cells, read which still run, and price them.

    Nothing is started; every mistake is a one-line UserError.
    """
    check_sweep(sweep)
    cluster = load_cluster_spec(sweep.cluster) if sweep.cluster is not None else None
    backend = _choose_backend(sweep, cluster)
    seed = sweep.seed
    if sweep.order == "random" and seed is None:
        seed = secrets.randbelow(2**31)
    spec = ExperimentSpec(
        designs_file=sweep.designs,
        exact_nodes=sweep.exact_nodes,
        max_nodes=sweep.max_nodes,
        topos=list(sweep.topos),
        iters=sweep.iterations,
        sizes=sweep_sizes(sweep.sizes),
        min_size_gb=sweep.min_size_gb,
        max_size_gb=sweep.max_size_gb,
        strategies=sweep_strategies(sweep.strategies),
        experiment=sweep.experiment,
        data_dir=sweep.data_dir,
        name=sweep.name,
        backend=backend,
        order=sweep.order,  # type: ignore[arg-type]
        seed=seed,
        matrix={axis: list(values) for axis, values in sweep.matrix.items()},
        zip={axis: list(values) for axis, values in sweep.zip.items()},
        chunksize=knob_flag("chunksize", sweep.chunksize),
        mmap=sweep.mmap,
        purge_target_size=knob_flag("purge_target_size", sweep.purge_target_size),
        sweep_file=str(sweep.file.path.resolve()) if sweep.file else None,
        sweep_sha256=sweep.file.sha256 if sweep.file else None,
    )
    cells = plan_experiment(spec).only(parse_only(sweep.only))
    if sweep.emulator_faults:
        from experiments.backends.emulator.backend import check_fault_ranks

        check_fault_ranks(sweep.emulator_faults, cells.cells)
    if cluster is not None and cells.max_nodes > cluster.nodes:
        raise UserError(
            f"the plan needs {cells.max_nodes} nodes but {cluster.path} has {cluster.nodes} workers"
        )
    ledger = read_ledger(cells.cells, spec.data_dir, sweep.rerun_failed, sweep.force)
    # Verifying every rank's copy is cheap where kary runs, and on by default there.
    verify = (backend in UNBILLED) if sweep.verify is None else sweep.verify
    render = RenderOptions(
        name=sweep.name,
        image=image_ref(sweep.image),
        verify=verify,
        node_selector=dict(cluster.node_selector) if cluster else {},
        tolerations=tuple(cluster.tolerations) if cluster else (),
    )
    if backend not in UNBILLED:  # a cluster's backend runs the image's own Flux (or a view's)
        check_image_runs(render.image, sorted({cell.topo for cell in cells.cells}))
    estimate = estimate_for(
        ledger.to_run,
        backend,
        verify,
        cluster,
        sweep.history,
        up=sweep.up,
        down=sweep.down,
        link_bandwidth=sweep.link_bandwidth,
        link_latency=sweep.link_latency,
        image=render.image,
        flux_view=render.flux_view,
        place=_flux_place(sweep) if backend == "flux" else None,
    )
    return PlannedSweep(sweep, cells, ledger, estimate, render, cluster)


def _shaped(sweep: Sweep) -> bool:
    """Links shaped on this machine: a box (flux-core here) or the emulator."""
    return bool(
        sweep.link_bandwidth
        or sweep.link_latency
        or sweep.root_link_bandwidth
        or sweep.group_size
        or sweep.group_link_bandwidth
    )


def _flux_place(sweep: Sweep) -> str:
    from experiments.backends.flux.backend import choose_place

    shaped = _shaped(sweep)
    return choose_place(sweep.place, shaped=shaped)


def run(
    sweep: Sweep | PlannedSweep,
    *,
    yes: bool = False,
    timeout: float | None = None,
    max_cost: float | None = None,
    max_hours: float | None = None,
    reporter: Reporter | None = None,
    echo: Callable[[str], None] = _stderr,
) -> RunSummary:
    """Run a sweep (planned here if given as a Sweep) and record every cell in the raw tree.

    A billed backend shows the plan and asks first (`yes=True` skips; without a
    terminal it refuses).  `max_cost` refuses a plan above it and stops before a
    cell that would pass it; `max_hours` is the --up cluster's lease.  Progress
    goes to `reporter` (default: a progress bar); one-line notes to `echo`.
    Ctrl-C stops cleanly: the summary says `interrupted` and the same call resumes.
    """
    from experiments.backends import BackendSettings, make_backend
    from experiments.execution.progress import RichReporter
    from experiments.execution.runner import run_plan

    planned = plan(sweep) if isinstance(sweep, Sweep) else sweep
    if timeout is not None and timeout <= 0:
        raise UserError(f"invalid --timeout {timeout:g}: must be > 0 seconds")
    # --up/--down and --max-cost: checked now, before anything starts or is billed.
    guard = planned.guard(max_cost, max_hours, echo)
    guard.cap.check_plan(planned.estimate.cost_usd_high, high_end=True)
    to_run, ledger = planned.ledger.to_run, planned.ledger
    if not to_run:
        message = f"nothing to run: {_cells(len(ledger.done))} done"
        if ledger.failed:
            message += f", {len(ledger.failed)} failed before (--rerun-failed to retry them)"
        echo(message)
        if planned.sweep.down and guard.provider is not None:
            with dataclasses.replace(guard, up=False).session():
                pass
        return RunSummary(skipped_done=len(ledger.done), skipped_failed=len(ledger.failed))
    if planned.billed:
        _confirm(planned, yes, max_cost, max_hours)
    settings = BackendSettings(
        render=planned.render,
        cluster=planned.cluster,
        link_bandwidth=planned.sweep.link_bandwidth,
        link_latency=planned.sweep.link_latency,
        root_link_bandwidth=planned.sweep.root_link_bandwidth,
        group_size=planned.sweep.group_size,
        group_link_bandwidth=planned.sweep.group_link_bandwidth,
        place=planned.sweep.place,
        layout=effective_layout(planned.sweep.layout, planned.backend),
        options={
            # Labels what this run creates (kary/sweep), so one sweep's leftovers can be found.
            "sweep_id": new_sweep_id(),
            "allow_shared_nodes": planned.sweep.allow_shared_nodes,
            **(
                {"faults": tuple(planned.sweep.emulator_faults)}
                if planned.sweep.emulator_faults
                else {}
            ),
        },
    )
    backend = make_backend(planned.backend, settings)
    spec = planned.plan.spec
    echo(
        f"kary run: {_cells(len(to_run))} on {describe_backend(spec.backend, planned.place)}; "
        f"predicted "
        f"{format_duration(planned.estimate.seconds)}; raw results in {spec.data_dir}"
        + (f"; seed {spec.seed}" if spec.seed is not None else "")
    )
    if planned.sweep.emulator_faults:
        echo(f"kary run: {faults_line(planned.sweep.emulator_faults)}")
    if warning := planned.cpu_bound_line():
        echo(f"kary run: {warning}")
    if planned.sweep.file is not None:
        _keep_sweep_file(planned.sweep.file, spec.data_dir)
    cluster = planned.cluster
    try:
        # --up creates the cluster before the backend comes up; --down deletes it after.
        with guard.session():
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


def _cells(count: int) -> str:
    return f"{count} cell" if count == 1 else f"{count} cells"
