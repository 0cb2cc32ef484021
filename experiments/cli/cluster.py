"""`kary cluster up|down|status|reap FILE`: real clusters with a lease and a dead-man switch.

`up` starts billing, so it shows what it will run, the hourly cost and the most
the cluster can cost before its lease expires, then asks (`--yes` skips the
question; with no terminal and no `--yes` it refuses before any cloud call).
"""

from __future__ import annotations

from pathlib import Path

import typer

from experiments.clusters import (
    DEFAULT_MAX_HOURS,
    CommandFailed,
    Lease,
    Provider,
    Shell,
    cluster_down,
    cluster_status,
    cluster_up,
    cost_lines,
    current_owner,
    down_plan,
    hourly_cost,
    provider_for,
    reap_clusters,
    terminate_as_interrupt,
    up_plan,
)
from experiments.confirm import confirm_billed
from experiments.errors import UserError
from experiments.model.cluster_spec import ClusterSpec, load_cluster_spec

__all__ = ["app"]

app = typer.Typer(
    short_help="Create, check and delete EKS/GKE clusters.",
    help="Create, inspect and delete EKS/GKE clusters (labelled, with a dead-man switch).",
    no_args_is_help=True,
)

FILE = typer.Argument(..., help="Cluster file: an eksctl ClusterConfig or a GKECluster spec.")
DRY_RUN = typer.Option(False, "--dry-run", help="Print the exact commands and cost; run nothing.")
MAX_HOURS = typer.Option(
    DEFAULT_MAX_HOURS, "--max-hours", help="Lease: the cluster expires after this many hours."
)
YES = typer.Option(False, "--yes", "-y", help="Create the (billed) cluster without asking.")


def _err(line: str) -> None:
    typer.echo(line, err=True)


def _shell() -> Shell:
    # The cloud tools' progress goes to stderr, so stdout stays what kary says.
    return Shell(echo=lambda line: _err(f"  | {line}"))


def _up_lines(
    spec: ClusterSpec, provider: Provider, lease: Lease, dead_man: bool, operator: bool
) -> list[str]:
    """The cluster, its lease, the exact commands and what it costs: dry run and question alike."""
    labels = " ".join(f"{k}={v}" for k, v in lease.labels().items())
    return [
        f"{spec.provider} cluster {spec.name} in {provider.location}: "
        + ", ".join(f"{g.count} x {g.instance_type}" for g in spec.node_groups),
        f"lease: {labels}",
        *up_plan(provider, lease, dead_man, operator),
        *cost_lines(spec, lease, up=True, down=True),
    ]


@app.command("up", short_help="Create the cluster, labelled, with a dead-man switch.")
def up(
    file: Path = FILE,
    max_hours: float = MAX_HOURS,
    dry_run: bool = DRY_RUN,
    operator: bool = typer.Option(
        True, "--operator/--no-operator", help="Install the Flux Operator on it."
    ),
    dead_man: bool = typer.Option(
        True,
        "--dead-man-switch/--no-dead-man-switch",
        help="Have the provider remove the workers at expiry, even without kary.",
    ),
    yes: bool = YES,
) -> None:
    """Create the cluster, labelled with owner/created/expires; a failed create is deleted.

    Shows the commands, the hourly cost and the most the cluster can cost before
    it expires, then asks; --yes skips the question (needed without a terminal).

    Example:

    \b
        kary cluster up clusters/eks-30.yaml --max-hours 3 --dry-run
    """
    spec = load_cluster_spec(file)
    lease = Lease.new(max_hours)
    provider = provider_for(spec, _shell())
    lines = _up_lines(spec, provider, lease, dead_man, operator)
    if dry_run:
        typer.echo(f"kary cluster up {file}: dry run, nothing is created")
        for line in lines:
            typer.echo(line)
        return
    hourly = hourly_cost(spec).usd_per_hour
    confirm_billed(
        [f"kary cluster up {file}:", *lines],
        f"Create {spec.name}? It bills ${hourly:,.2f}/h until it is deleted",
        yes,
        f"creating {spec.name} bills ${hourly:,.2f}/h and there is no terminal to confirm it: "
        "check the plan above and add --yes",
        declined="kary: nothing was created",
    )
    with terminate_as_interrupt():
        try:
            cluster_up(provider, lease, _err, dead_man=dead_man, operator=operator)
        except CommandFailed as err:
            raise UserError(str(err)) from None
        except KeyboardInterrupt:
            _err("kary: interrupted; what was made is deleted")
            raise typer.Exit(130) from None


@app.command("down", short_help="Delete the cluster and check nothing is left.")
def down(file: Path = FILE, dry_run: bool = DRY_RUN) -> None:
    """Delete the cluster (retried once) and check that nothing of it is left.

    Example:

    \b
        kary cluster down clusters/eks-30.yaml
    """
    spec = load_cluster_spec(file)
    provider = provider_for(spec, _shell())
    if dry_run:
        typer.echo(f"kary cluster down {file}: dry run, nothing is deleted")
        for line in down_plan(provider):
            typer.echo(line)
        return
    with terminate_as_interrupt():
        try:
            cluster_down(provider, _err)
        except CommandFailed as err:
            raise UserError(str(err)) from None


@app.command("status", short_help="Whether it exists, its lease and dead-man switch.")
def status(file: Path = FILE) -> None:
    """Show whether the cluster exists, its lease, when its dead-man switch fires, its cost.

    Example:

    \b
        kary cluster status clusters/gke-30.yaml
    """
    provider = provider_for(load_cluster_spec(file), _shell())
    try:
        lines = cluster_status(provider)
    except CommandFailed as err:
        raise UserError(str(err)) from None
    for line in lines:
        typer.echo(line)


@app.command("reap", short_help="Delete your expired clusters of the file's kind.")
def reap(
    file: Path = FILE,
    dry_run: bool = DRY_RUN,
    owner: str | None = typer.Option(
        None, "--owner", help="Whose expired clusters to delete (default: yours, see KARY_OWNER)."
    ),
) -> None:
    """Delete expired clusters kary created for you in the file's region or zone.

    Clusters without kary's lease labels, another owner's, and unexpired ones
    are listed and left alone.

    Example:

    \b
        kary cluster reap clusters/eks-30.yaml --dry-run
    """
    spec = load_cluster_spec(file)
    provider = provider_for(spec, _shell())
    who = owner or current_owner()
    with terminate_as_interrupt():
        try:
            report = reap_clusters(provider, who, _err, dry_run=dry_run)
        except CommandFailed as err:
            raise UserError(str(err)) from None
    verb = "would delete" if dry_run else "deleted"
    typer.echo(
        f"{verb} {len(report.reaped)} expired cluster(s) of {who} in {provider.location}"
        + (f": {', '.join(report.reaped)}" if report.reaped else "")
    )
    for kept in report.kept:
        typer.echo(f"kept {kept}")
    if report.failed:
        raise UserError("could not delete " + "; ".join(report.failed))
