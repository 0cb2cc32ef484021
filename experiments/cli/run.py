"""`kary plan` and `kary run`: a few lines each over experiments.api (plan, run).

`kary plan ...` is exactly `kary run ... --dry-run`.  The sweep flags are
declared once, in sweep_options.py; each parameter is named as the Sweep field
it sets, so `sweep_from_flags(locals())` at the top of a command is the whole
translation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from experiments import api
from experiments.cli import sweep_options as o
from experiments.execution.progress import RichReporter, SilentReporter
from experiments.execution.replacements import PREEMPTION_WAIT_S

D = o.DEFAULT

EmulatorFault = Annotated[
    list[str] | None,
    typer.Option(
        "--emulator-fault",
        metavar="<fault>",
        help="Testing aid, emulator only (implies --backend local; repeatable): corrupt:RANK "
        "flips a byte of every blob extracted on RANK; kill:RANK[:LOADS] kills RANK's broker "
        "when an extract there asks for blob LOADS+1 (default 0).  Recorded in run.json.",
    ),
]


def plan(
    ctx: typer.Context, sweep_file: o.SweepFile = None,
    designs: o.Designs = D.designs, designs_old_name: o.DesignsOldName = None,
    exact_nodes: o.ExactNodes = None, max_nodes: o.MaxNodes = None,
    min_size_gb: o.MinSize = None, max_size_gb: o.MaxSize = None, sizes: o.Sizes = None,
    topos: o.Topo = None, iterations: o.Iters = D.iterations, strategies: o.Strategy = None,
    experiment: o.Experiment = D.experiment, blob: o.Blob = D.blob,
    data_dir: o.DataDir = D.data_dir, name: o.Name = D.name, backend: o.Backend = None,
    cluster: o.Cluster = None, history: o.History = None, template: o.Template = None,
    image: o.Image = D.image, flux_view: o.FluxView = None, verify: o.Verify = None,
    chunksize: o.Chunksize = None,
    mmap: o.Mmap = None, purge_target_size: o.PurgeTargetSize = None, only: o.Only = None,
    order: o.Order = D.order, seed: o.Seed = None, rerun_failed: o.RerunFailed = False,
    force: o.Force = False, up: o.Up = False, down: o.Down = False,
    link_bandwidth: o.LinkBandwidth = None, link_latency: o.LinkLatency = None,
    root_link_bandwidth: o.RootLinkBandwidth = None, place: o.Place = None,
    group_size: o.GroupSize = None, group_link_bandwidth: o.GroupLinkBandwidth = None,
    link_queue: o.LinkQueue = None,
    layout: o.Layout = None, smoke: o.Smoke = D.smoke,
    max_cost: o.MaxCost = None, as_json: o.Json = False,
) -> None:  # fmt: skip
    """Show the cells a run would execute and what they cost in time and dollars.

    Example:

    \b
        kary plan --exact-nodes 6 --min-size 1 --max-size 10 --iters 3 \\
            --cluster clusters/eks-6.yaml
        kary plan study.yaml --only nodes=4,chunksize=256K
    """
    planned = api.plan(o.sweep_from_flags(locals(), ctx))
    _show(planned, as_json, max_cost)
    planned.check_cost(max_cost)


def run(
    ctx: typer.Context, sweep_file: o.SweepFile = None,
    designs: o.Designs = D.designs, designs_old_name: o.DesignsOldName = None,
    exact_nodes: o.ExactNodes = None, max_nodes: o.MaxNodes = None,
    min_size_gb: o.MinSize = None, max_size_gb: o.MaxSize = None, sizes: o.Sizes = None,
    topos: o.Topo = None, iterations: o.Iters = D.iterations, strategies: o.Strategy = None,
    experiment: o.Experiment = D.experiment, blob: o.Blob = D.blob,
    data_dir: o.DataDir = D.data_dir, name: o.Name = D.name, backend: o.Backend = None,
    cluster: o.Cluster = None, history: o.History = None, template: o.Template = None,
    image: o.Image = D.image, flux_view: o.FluxView = None, verify: o.Verify = None,
    chunksize: o.Chunksize = None,
    mmap: o.Mmap = None, purge_target_size: o.PurgeTargetSize = None, only: o.Only = None,
    order: o.Order = D.order, seed: o.Seed = None, rerun_failed: o.RerunFailed = False,
    force: o.Force = False, up: o.Up = False, down: o.Down = False,
    link_bandwidth: o.LinkBandwidth = None, link_latency: o.LinkLatency = None,
    root_link_bandwidth: o.RootLinkBandwidth = None, place: o.Place = None,
    group_size: o.GroupSize = None, group_link_bandwidth: o.GroupLinkBandwidth = None,
    link_queue: o.LinkQueue = None,
    layout: o.Layout = None, allow_shared_nodes: o.AllowSharedNodes = False,
    pending_timeout: o.PendingTimeout = None, smoke: o.Smoke = D.smoke,
    max_cost: o.MaxCost = None, as_json: o.Json = False, emulator_faults: EmulatorFault = None,
    max_hours: o.MaxHours = None,
    timeout: Annotated[float | None, typer.Option(
        "--timeout", help="Seconds per cell (default: 4x its predicted time, at least 300)."
    )] = None,
    preemption_wait: Annotated[float, typer.Option(
        "--preemption-wait", metavar="SECONDS",
        help="After a cell loses a node to preemption, wait at most this long for "
        "replacement nodes before the next cell (billed: the cluster runs meanwhile), "
        f"then stop; the same command resumes.  Default {PREEMPTION_WAIT_S:g}."
    )] = PREEMPTION_WAIT_S,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Only show the plan (same as `kary plan`).")] = False,
    yes: Annotated[bool, typer.Option(
        "--yes", "-y", help="Start a billed run without asking.")] = False,
) -> None:  # fmt: skip
    """Run the planned cells and record each in the raw tree (default: real Flux here).

    Cells that succeeded before are skipped; Ctrl-C stops cleanly (exit 130)
    and the same command resumes.  Exit 0 when every cell succeeded, 1 when
    any failed.

    Example:

    \b
        kary run --exact-nodes 30 --topo kary:16 --iters 1
        kary run --exact-nodes 6 --iters 3 --cluster clusters/eks-6.yaml --yes
        kary run --exact-nodes 5 --sizes 2M --emulator-fault corrupt:3
        kary run study.yaml --iters 3
        kary run --exact-nodes 8 --topo kary:2 --strategy all,direct
        kary run --experiment ping --exact-nodes 8 --topo kary:2 --sizes 1M
    """
    planned = api.plan(o.sweep_from_flags(locals(), ctx))
    if dry_run:
        _show(planned, as_json, max_cost, max_hours)
        planned.check_cost(max_cost, max_hours)
        return
    summary = api.run(
        planned,
        yes=yes,
        timeout=timeout,
        max_cost=max_cost,
        max_hours=max_hours,
        reporter=SilentReporter() if as_json else RichReporter(),
        echo=lambda line: typer.echo(line, err=True),
        preemption_wait_s=preemption_wait,
    )
    if as_json:
        typer.echo(json.dumps(summary.to_json(), indent=2))
    if summary.outcomes or summary.interrupted:  # else api.run said "nothing to run"
        # The summary is the answer (stdout: `kary run ... > summary.txt` keeps it); with
        # --json the JSON is, and the summary joins the progress on stderr.
        typer.echo(f"kary run: {summary.text()}", err=as_json, nl=False)
    if summary.count("succeeded") and not summary.interrupted:
        raw = planned.plan.spec.data_dir
        typer.echo(f"next: kary parse --data {raw} --out {parsed_dir_for(raw)}", err=True)
    raise typer.Exit(summary.exit_code)


def parsed_dir_for(raw: Path) -> Path:
    """Where a raw tree's parse goes by the README's convention: data/raw -> data/parsed."""
    return raw.with_name("parsed") if raw.name == "raw" else raw.with_name(f"{raw.name}-parsed")


def _show(
    planned: api.PlannedSweep, as_json: bool, max_cost: float | None, max_hours: float | None = None
) -> None:
    if as_json:
        typer.echo(json.dumps(planned.to_json(max_cost, max_hours), indent=2))
    else:
        typer.echo(planned.text(max_cost, max_hours), nl=False)


def register(app: typer.Typer) -> None:
    app.command("plan", short_help="What a run would do and cost; nothing starts.")(plan)
    app.command("run", short_help="Run the planned cells into the raw tree.")(run)
