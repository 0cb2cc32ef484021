"""`kary plan` and `kary run`: plan cells, show what they cost, then run them.

`kary plan ...` is exactly `kary run ... --dry-run`.  The flags keep the
seed's runner names (--data, --exact-nodes, --max-nodes, --min-size,
--max-size, --topo, --iters, --template, --data-dir, --name).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from pathlib import Path

import typer

from experiments.clusterspec import ClusterSpec, load_cluster_spec
from experiments.cost import Estimate
from experiments.errors import UserError
from experiments.plan import ExperimentSpec, Plan, plan_experiment
from experiments.planview import plan_json, plan_text
from experiments.pricing import estimate_for
from experiments.render import DEFAULT_IMAGE, RenderOptions
from experiments.validate import image_ref, parse_size, parse_sizes

BACKENDS = ("local", "kubernetes")


@dataclass
class Prepared:
    """A validated sweep: what to run, how to render it, and what it will cost."""

    plan: Plan
    estimate: Estimate
    render: RenderOptions
    template_dir: Path | None
    cluster: ClusterSpec | None


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
    backend: str,
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
) -> Prepared:
    """Flags -> spec -> plan -> estimate; every check happens here, before anything runs."""
    if backend not in BACKENDS:
        raise UserError(f"unknown backend {backend!r}: choose from {', '.join(BACKENDS)}")
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
    if cluster is not None and backend == "local":
        backend = "kubernetes"  # a cluster file means the run happens on that cluster
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
    if cluster is not None and plan.max_nodes > cluster.nodes:
        raise UserError(
            f"the plan needs {plan.max_nodes} nodes but {cluster.path} has {cluster.nodes} workers"
        )
    # Verifying every rank's copy is cheap locally and on by default there.
    verify = (backend == "local") if verify is None else verify
    render = RenderOptions(
        name=name,
        image=image_ref(image),
        verify=verify,
        purge_target_size=parse_size(purge_target_size) if purge_target_size else None,
    )
    estimate = estimate_for(plan, backend, verify, cluster, history, up=up, down=down)
    return Prepared(plan, estimate, render, template, cluster)


def show_plan(prepared: Prepared, as_json: bool) -> None:
    backend = prepared.plan.spec.backend
    cluster = prepared.cluster.name if prepared.cluster else None
    if as_json:
        typer.echo(
            json.dumps(plan_json(prepared.plan, prepared.estimate, backend, cluster), indent=2)
        )
    else:
        typer.echo(plan_text(prepared.plan, prepared.estimate, backend, cluster), nl=False)


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
BACKEND = typer.Option("local", "--backend", help="local (emulated Flux here) or kubernetes.")
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


def register(app: typer.Typer) -> None:
    @app.command("plan")
    def plan_command(
        data: Path | None = DATA,
        exact_nodes: int | None = EXACT,
        max_nodes: int | None = MAXN,
        min_size: int | None = MINS,
        max_size: int | None = MAXS,
        sizes: str | None = SIZES,
        topo: list[str] = TOPO,
        iters: int = ITERS,
        strategy: list[str] = STRATEGY,
        data_dir: Path = DATA_DIR,
        name: str = NAME,
        backend: str = BACKEND,
        cluster: Path | None = CLUSTER,
        history: Path | None = HISTORY,
        template: Path | None = TEMPLATE,
        image: str = IMAGE,
        verify: bool | None = VERIFY,
        purge_target_size: str | None = PURGE,
        order: str = ORDER,
        seed: int | None = SEED,
        rerun_failed: bool = RERUN,
        force: bool = FORCE,
        up: bool = UP,
        down: bool = DOWN,
        as_json: bool = JSON,
    ) -> None:
        """Show the cells a run would execute and what they cost in time and dollars.

        Example:

        \b
            kary plan --exact-nodes 6 --min-size 1 --max-size 10 --iters 3 \\
                --cluster clusters/eks-6.yaml
        """
        prepared = prepare(
            data=data,
            exact_nodes=exact_nodes,
            max_nodes=max_nodes,
            min_size=min_size,
            max_size=max_size,
            sizes=sizes,
            topo=topo,
            iters=iters,
            strategy=strategy,
            data_dir=data_dir,
            name=name,
            backend=backend,
            cluster_file=cluster,
            history=history,
            template=template,
            image=image,
            verify=verify,
            purge_target_size=purge_target_size,
            order=order,
            seed=seed,
            rerun_failed=rerun_failed,
            force=force,
            up=up,
            down=down,
        )
        show_plan(prepared, as_json)
