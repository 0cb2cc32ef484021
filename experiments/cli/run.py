"""`kary plan` and `kary run`: plan cells, show what they cost, then run them.

`kary plan ...` is exactly `kary run ... --dry-run`.  The flags keep the
seed's runner names (--data, --exact-nodes, --max-nodes, --min-size,
--max-size, --topo, --iters, --template, --data-dir, --name).  Both commands
take the same sweep flags (declared once, in `SWEEP_FLAGS`); `run` adds its
own.  Local runs start at once; anything billed shows the plan and asks first
(or needs --yes).  `run --emulator-fault` injects the emulator's faults, a
testing aid for templates (local backend only).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from experiments.backends import (
    UNBILLED,
    check_backend_name,
    default_backend,
    describe_backend,
)
from experiments.cli.confirm import confirm_billed
from experiments.errors import UserError
from experiments.estimate.plan_estimate import estimate_for
from experiments.estimate.time_model import Estimate
from experiments.model.cluster_spec import ClusterSpec, load_cluster_spec
from experiments.model.plan import ExperimentSpec, Plan, plan_experiment
from experiments.model.render import DEFAULT_IMAGE, RenderOptions
from experiments.model.validate import image_ref, parse_size, parse_sizes
from experiments.plan_view import plan_json, plan_text


@dataclass
class Prepared:
    """A validated sweep: what to run, how to render it, and what it will cost."""

    plan: Plan
    estimate: Estimate
    render: RenderOptions
    template_dir: Path | None
    cluster: ClusterSpec | None
    link_bandwidth: str | None = None
    link_latency: str | None = None
    emulator_faults: tuple[str, ...] = ()


def _strategies(values: list[str]) -> list[str]:
    return [s.strip() for v in values for s in v.split(",") if s.strip()]


def prepare(
    *,
    data: Path | None,
    exact_nodes: int | None,
    max_nodes: int | None,
    min_size: int | None,
    max_size: int | None,
    sizes: str | None,
    topo: list[str],
    iters: int,
    strategy: list[str],
    data_dir: Path,
    name: str,
    backend: str | None,
    cluster_file: Path | None,
    history: Path | None,
    template: Path | None,
    image: str,
    verify: bool | None,
    purge_target_size: str | None,
    order: str,
    seed: int | None,
    rerun_failed: bool,
    force: bool,
    up: bool,
    down: bool,
    link_bandwidth: str | None = None,
    link_latency: str | None = None,
    emulator_faults: Sequence[str] = (),
) -> Prepared:
    """Flags -> spec -> plan -> estimate; every check happens here, before anything runs."""
    if backend is not None:
        check_backend_name(backend)
    if emulator_faults:
        from experiments.backends.local import parse_faults

        parse_faults(emulator_faults)
    if iters < 1:
        raise UserError(f"invalid --iters {iters}: must be >= 1")
    if order not in ("given", "random"):
        raise UserError(f"invalid --order {order!r}: choose given or random")
    if template is not None and not (template / "entrypoint.sh.j2").is_file():
        raise UserError(
            f"--template {template}: expected a folder with minicluster.yaml.j2 "
            "and entrypoint.sh.j2"
        )
    cluster = load_cluster_spec(cluster_file) if cluster_file is not None else None
    emulated_links = bool(link_bandwidth or link_latency)
    if backend is None:
        # A cluster file means the run happens on that cluster; emulated links or
        # faults mean the emulator; otherwise real Flux when flux-core is on PATH,
        # else the emulator.
        if cluster is not None:
            backend = "kubernetes"
        else:
            backend = "local" if emulated_links or emulator_faults else default_backend()
    if emulated_links and backend != "local":
        raise UserError("--link-bandwidth and --link-latency emulate links: local backend only")
    if emulator_faults and backend != "local":
        raise UserError("--emulator-fault injects faults into the emulator: local backend only")
    if (up or down) and cluster is None:
        raise UserError("--up and --down need --cluster FILE")
    if order == "random" and seed is None:
        seed = secrets.randbelow(2**31)
    spec = ExperimentSpec(
        designs_file=data,
        exact_nodes=exact_nodes,
        max_nodes=max_nodes,
        topos=list(topo),
        iters=iters,
        sizes=parse_sizes(sizes) if sizes else None,
        min_size_gb=min_size,
        max_size_gb=max_size,
        strategies=_strategies(strategy) or ["all"],
        data_dir=data_dir,
        name=name,
        backend=backend,
        order=order,  # type: ignore[arg-type]
        seed=seed,
    )
    plan = plan_experiment(spec, rerun_failed=rerun_failed, force=force)
    if emulator_faults:
        from experiments.backends.local import check_fault_ranks

        check_fault_ranks(emulator_faults, plan.cells)
    if cluster is not None and plan.max_nodes > cluster.nodes:
        raise UserError(
            f"the plan needs {plan.max_nodes} nodes but {cluster.path} has {cluster.nodes} workers"
        )
    # Verifying every rank's copy is cheap where kary runs, and on by default there.
    verify = (backend in UNBILLED) if verify is None else verify
    render = RenderOptions(
        name=name,
        image=image_ref(image),
        verify=verify,
        purge_target_size=parse_size(purge_target_size) if purge_target_size else None,
    )
    estimate = estimate_for(
        plan,
        backend,
        verify,
        cluster,
        history,
        up=up,
        down=down,
        link_bandwidth=link_bandwidth,
        link_latency=link_latency,
        image=render.image,
        flux_view=render.flux_view,
        place=_flux_place() if backend == "flux" else None,
    )
    return Prepared(
        plan,
        estimate,
        render,
        template,
        cluster,
        link_bandwidth,
        link_latency,
        tuple(emulator_faults),
    )


def _flux_place() -> str:
    from experiments.backends.flux import current_place

    return current_place()


def show_plan(prepared: Prepared, as_json: bool, cluster_lines: list[str] | None = None) -> None:
    """The plan; `cluster_lines` are what --up/--down will run (see `_cluster_lines`)."""
    backend = prepared.plan.spec.backend
    cluster = prepared.cluster.name if prepared.cluster else None
    if as_json:
        data = plan_json(prepared.plan, prepared.estimate, backend, cluster)
        if cluster_lines:
            data["cluster_lifecycle"] = cluster_lines
        if prepared.emulator_faults:
            data["emulator_faults"] = list(prepared.emulator_faults)
        typer.echo(json.dumps(data, indent=2))
    else:
        typer.echo(plan_text(prepared.plan, prepared.estimate, backend, cluster), nl=False)
        for line in cluster_lines or []:
            typer.echo(line)
        if prepared.emulator_faults:
            typer.echo(_faults_line(prepared.emulator_faults))


def _faults_line(faults: Sequence[str]) -> str:
    return (
        f"emulator faults: {', '.join(faults)} (a testing aid: these cells test the "
        "template, they measure nothing)"
    )


def _sweep_guard(
    prepared: Prepared, up: bool, down: bool, max_hours: float | None, max_cost: float | None
) -> Any:
    """The cluster session and spending cap around a sweep (experiments/clusters/session.py)."""
    from experiments.clusters.session import sweep_guard

    return sweep_guard(
        prepared.cluster,
        prepared.estimate,
        up=up,
        down=down,
        max_hours=max_hours,
        max_cost=max_cost,
        echo=lambda line: typer.echo(line, err=True),
    )


# Shared option declarations: `plan` and `run` take the same flags.
DATA = typer.Option(
    None, "--data", help="Design file (default: the shipped designs/kary-designs.json)."
)
EXACT = typer.Option(None, "--exact-nodes", help="Run the designs for exactly N nodes.")
MAXN = typer.Option(None, "--max-nodes", help="Run every design with at most N nodes.")
MINS = typer.Option(None, "--min-size", help="Smallest size in GB (seed flag; with --max-size).")
MAXS = typer.Option(None, "--max-size", help="Largest size in GB (seed flag).")
SIZES = typer.Option(None, "--sizes", help="Sizes with units, e.g. 512M,2G (default: per backend).")
TOPO = typer.Option([], "--topo", help="Topology to run (repeatable); needs --exact-nodes.")
ITERS = typer.Option(1, "--iters", help="Iterations per design.")
STRATEGY = typer.Option([], "--strategy", help="all, leaves, middle (repeatable or comma list).")
DATA_DIR = typer.Option(Path("data/raw"), "--data-dir", help="Raw tree to write cells into.")
NAME = typer.Option("flux-sample", "--name", help="MiniCluster name (hosts are NAME-rank).")
BACKEND = typer.Option(
    None,
    "--backend",
    help="flux (real flux-core: here, or nested in a Flux allocation), local (emulated "
    "Flux here) or kubernetes.  Default: flux when `flux` is on PATH, else local.",
)
CLUSTER = typer.Option(
    None, "--cluster", help="Cluster file (clusters/*.yaml) to run on and price."
)
HISTORY = typer.Option(None, "--history", help="Parsed results to calibrate the time model.")
TEMPLATE = typer.Option(None, "--template", help="Folder with your own templates.")
IMAGE = typer.Option(DEFAULT_IMAGE, "--image", help="Container image with Flux.")
VERIFY = typer.Option(None, "--verify/--no-verify", help="sha256 every copy (default: on locally).")
PURGE = typer.Option(None, "--purge-target-size", help="Content cache size per broker, e.g. 16M.")
ORDER = typer.Option("given", "--order", help="given, or random (shuffled per iteration).")
SEED = typer.Option(None, "--seed", help="Seed for --order random (recorded either way).")
RERUN = typer.Option(False, "--rerun-failed", help="Run cells that failed before again.")
FORCE = typer.Option(False, "--force", help="Run every cell again (old results kept aside).")
UP = typer.Option(False, "--up", help="Create the --cluster first.")
DOWN = typer.Option(
    False, "--down", help="Delete the --cluster at the end, also on error or Ctrl-C."
)
JSON = typer.Option(False, "--json", help="Print the plan as one JSON object.")


LINK_BANDWIDTH = typer.Option(
    None,
    "--link-bandwidth",
    help="Emulator only (implies --backend local): link per node, e.g. 1Gbit; "
    "the plan's time model uses it too.",
)
LINK_LATENCY = typer.Option(
    None,
    "--link-latency",
    help="Emulator only (implies --backend local): latency per hop, e.g. 200us.",
)
EMULATOR_FAULT = typer.Option(
    [],
    "--emulator-fault",
    help="Testing aid, emulator only (implies --backend local; repeatable): corrupt:RANK "
    "flips a byte of every blob extracted on RANK; kill:RANK[:LOADS] kills RANK's broker "
    "when an extract there asks for blob LOADS+1 (default 0).  Recorded in run.json.",
)
TIMEOUT = typer.Option(
    None, "--timeout", help="Seconds per cell (default: 4x its predicted time, at least 300)."
)
DRY_RUN = typer.Option(False, "--dry-run", help="Only show the plan (same as `kary plan`).")
MAX_COST = typer.Option(
    None,
    "--max-cost",
    help="Dollars: refuse a plan estimated above it; stop before a cell that would pass it.",
)
MAX_HOURS = typer.Option(
    None, "--max-hours", help="With --up: the cluster's lease (default: the plan x 1.5 + 1 h)."
)
YES = typer.Option(False, "--yes", "-y", help="Start a billed run without asking.")
RUN_JSON = typer.Option(
    False, "--json", help="Print the plan (--dry-run) or the run summary as one JSON object."
)

# The flags `plan` and `run` share, in help order: (parameter, annotation, option).
SWEEP_FLAGS: list[tuple[str, Any, Any]] = [
    ("data", Path | None, DATA),
    ("exact_nodes", int | None, EXACT),
    ("max_nodes", int | None, MAXN),
    ("min_size", int | None, MINS),
    ("max_size", int | None, MAXS),
    ("sizes", str | None, SIZES),
    ("topo", list[str], TOPO),
    ("iters", int, ITERS),
    ("strategy", list[str], STRATEGY),
    ("data_dir", Path, DATA_DIR),
    ("name", str, NAME),
    ("backend", str | None, BACKEND),
    ("cluster", Path | None, CLUSTER),
    ("history", Path | None, HISTORY),
    ("template", Path | None, TEMPLATE),
    ("image", str, IMAGE),
    ("verify", bool | None, VERIFY),
    ("purge_target_size", str | None, PURGE),
    ("order", str, ORDER),
    ("seed", int | None, SEED),
    ("rerun_failed", bool, RERUN),
    ("force", bool, FORCE),
    ("up", bool, UP),
    ("down", bool, DOWN),
    ("link_bandwidth", str | None, LINK_BANDWIDTH),
    ("link_latency", str | None, LINK_LATENCY),
]


def _sweep_command(
    extra: list[tuple[str, Any, Any]],
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a command every SWEEP_FLAGS parameter plus `extra`, declared once for all.

    The command receives them as keyword arguments; `prepare_from_flags`
    turns the sweep ones into a Prepared.
    """

    def decorate(body: Callable[..., None]) -> Callable[..., None]:
        flags = SWEEP_FLAGS + extra

        def command(**kwargs: Any) -> None:
            body(**kwargs)

        command.__name__ = body.__name__
        command.__doc__ = body.__doc__
        command.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [
                inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=o, annotation=a)
                for n, a, o in flags
            ]
        )
        command.__annotations__ = {n: a for n, a, _ in flags}
        return command

    return decorate


def prepare_from_flags(flags: dict[str, Any], emulator_faults: Sequence[str] = ()) -> Prepared:
    """The sweep flags of a `plan` or `run` call -> Prepared (every check happens here)."""
    sweep = {name: flags[name] for name, _, _ in SWEEP_FLAGS}
    sweep["cluster_file"] = sweep.pop("cluster")
    return prepare(**sweep, emulator_faults=emulator_faults)


def register(app: typer.Typer) -> None:
    @app.command("plan")
    @_sweep_command([("as_json", bool, JSON)])
    def plan_command(*, as_json: bool, **flags: Any) -> None:
        """Show the cells a run would execute and what they cost in time and dollars.

        Example:

        \b
            kary plan --exact-nodes 6 --min-size 1 --max-size 10 --iters 3 \\
                --cluster clusters/eks-6.yaml
        """
        prepared = prepare_from_flags(flags)
        guard = _sweep_guard(prepared, flags["up"], flags["down"], None, None)
        show_plan(prepared, as_json, guard.plan_lines())

    @app.command("run")
    @_sweep_command(
        [
            ("dry_run", bool, DRY_RUN),
            ("yes", bool, YES),
            ("as_json", bool, RUN_JSON),
            ("timeout", float | None, TIMEOUT),
            ("max_cost", float | None, MAX_COST),
            ("max_hours", float | None, MAX_HOURS),
            ("emulator_fault", list[str], EMULATOR_FAULT),
        ]
    )
    def run_command(
        *,
        dry_run: bool,
        yes: bool,
        as_json: bool,
        timeout: float | None,
        max_cost: float | None,
        max_hours: float | None,
        emulator_fault: list[str],
        **flags: Any,
    ) -> None:
        """Run the planned cells and record each in the raw tree (local: emulated Flux here).

        Cells that succeeded before are skipped; Ctrl-C stops cleanly (exit 130)
        and the same command resumes.  Exit 0 when every cell succeeded, 1 when
        any failed.

        Example:

        \b
            kary run --exact-nodes 30 --topo kary:16 --iters 1
            kary run --exact-nodes 6 --iters 3 --cluster clusters/eks-6.yaml --yes
            kary run --exact-nodes 5 --sizes 2M --emulator-fault corrupt:3
        """
        prepared = prepare_from_flags(flags, emulator_fault)
        if dry_run:
            guard = _sweep_guard(prepared, flags["up"], flags["down"], max_hours, max_cost)
            show_plan(prepared, as_json, guard.plan_lines())
            guard.cap.check_plan(prepared.estimate.cost_usd)
            return
        code = run_prepared(
            prepared,
            yes=yes,
            as_json=as_json,
            timeout=timeout,
            up=flags["up"],
            down=flags["down"],
            max_cost=max_cost,
            max_hours=max_hours,
        )
        raise typer.Exit(code)


def _confirm_billed(prepared: Prepared, yes: bool, cluster_lines: list[str] | None = None) -> None:
    """Billed runs show their plan and ask; without a terminal they need --yes."""
    if yes:
        return
    plan = plan_text(
        prepared.plan,
        prepared.estimate,
        prepared.plan.spec.backend,
        prepared.cluster.name if prepared.cluster else None,
    )
    confirm_billed(
        [*plan.splitlines(), *(cluster_lines or [])],
        "Start this run?",
        yes,
        "this run is billed and there is no terminal to confirm it: "
        "check the plan above and add --yes",
    )


def _cells(count: int) -> str:
    return f"{count} cell" if count == 1 else f"{count} cells"


def run_prepared(
    prepared: Prepared,
    *,
    yes: bool = False,
    as_json: bool = False,
    timeout: float | None = None,
    up: bool = False,
    down: bool = False,
    max_cost: float | None = None,
    max_hours: float | None = None,
    reporter: Any = None,
) -> int:
    """Run a prepared sweep on its backend; returns the exit code (0, 1, or 130)."""
    from experiments.backends import BackendSettings, make_backend
    from experiments.execution.progress import RichReporter, SilentReporter
    from experiments.execution.runner import run_plan
    from experiments.plan_view import format_duration

    plan, spec = prepared.plan, prepared.plan.spec
    if timeout is not None and timeout <= 0:
        raise UserError(f"invalid --timeout {timeout:g}: must be > 0 seconds")
    # --up/--down and --max-cost: checked now, before anything starts or is billed.
    guard = _sweep_guard(prepared, up, down, max_hours, max_cost)
    guard.cap.check_plan(prepared.estimate.cost_usd)
    settings = BackendSettings(
        render=prepared.render,
        cluster=prepared.cluster,
        link_bandwidth=prepared.link_bandwidth,
        link_latency=prepared.link_latency,
        options={"faults": prepared.emulator_faults} if prepared.emulator_faults else {},
    )
    backend = make_backend(spec.backend, settings)
    if not plan.cells:
        message = f"nothing to run: {_cells(len(plan.done))} done"
        if plan.failed:
            message += f", {len(plan.failed)} failed before (--rerun-failed to retry them)"
        typer.echo(message, err=True)
        if down and guard.provider is not None:
            with dataclasses.replace(guard, up=False).session():
                pass
        return 0
    if spec.backend not in UNBILLED:
        _confirm_billed(prepared, yes, guard.plan_lines())
    where = describe_backend(spec.backend)
    typer.echo(
        f"kary run: {_cells(len(plan.cells))} on {where}; predicted "
        f"{format_duration(prepared.estimate.seconds)}; raw results in {spec.data_dir}"
        + (f"; seed {spec.seed}" if spec.seed is not None else ""),
        err=True,
    )
    if prepared.emulator_faults:
        typer.echo(f"kary run: {_faults_line(prepared.emulator_faults)}", err=True)
    if reporter is None:
        reporter = SilentReporter() if as_json else RichReporter()
    try:
        # --up creates the cluster before the backend comes up; --down deletes it after.
        with guard.session():
            summary = run_plan(
                plan,
                backend,
                prepared.render,
                template_dir=prepared.template_dir,
                timeout=timeout,
                predicted=[c.seconds for c in prepared.estimate.cells],
                reporter=reporter,
                cluster=prepared.cluster.name if prepared.cluster else None,
                instance_type=prepared.cluster.instance_type if prepared.cluster else None,
                before_cell=guard.cap.before_cell,
            )
    except KeyboardInterrupt:
        typer.echo("kary run: interrupted while the cluster was being created", err=True)
        return 130
    if as_json:
        typer.echo(json.dumps(summary.to_json(), indent=2))
    typer.echo(f"kary run: {summary.text()}", err=True, nl=False)
    return summary.exit_code
