"""`kary prices`: refresh the dated price catalog the cost estimate uses."""

from __future__ import annotations

from pathlib import Path

import typer

from experiments.resources import resource_path

app = typer.Typer(
    short_help="Refresh the price catalog.",
    help="Keep the price catalog (clusters/prices.yaml) current.",
    no_args_is_help=True,
)


@app.command("refresh", short_help="Fetch on-demand prices into the catalog.")
def refresh(
    region: str = typer.Option("us-east-2", "--region", help="AWS region to price."),
    instance_type: list[str] = typer.Option(
        [], "--instance-type", help="Instance type (repeatable; default: those already listed)."
    ),
    catalog: Path | None = typer.Option(
        None, "--catalog", help="Catalog to update (default: the shipped clusters/prices.yaml)."
    ),
    spot: bool = typer.Option(
        False, "--spot", help="Spot prices from EC2's price history instead of on-demand ones."
    ),
    zone: list[str] = typer.Option(
        [], "--zone", help="With --spot: a zone to price (repeatable; default: every zone)."
    ),
    days: int = typer.Option(30, "--days", help="With --spot: the window, 1-90 days back."),
    cluster: Path | None = typer.Option(
        None,
        "--cluster",
        help="With --spot: price this cluster file's region, worker zones and instance types.",
    ),
) -> None:
    """Fetch on-demand prices from the AWS Price List API into the catalog; with --spot,
    each zone's time-weighted median and p90 spot price from EC2's price history.

    Example:

    \b
        kary prices refresh --region us-east-2 --instance-type c5a.4xlarge
        kary prices refresh --spot --cluster clusters/eks-30-spot.yaml --days 30
    """
    path = catalog or resource_path("clusters", "prices.yaml")
    if not spot:
        from experiments.estimate.price_refresh import refresh_catalog

        fresh = refresh_catalog(path, region, list(instance_type))
        for name, price in sorted(fresh.items()):
            typer.echo(f"{region} {name}: ${price:.4f}/h")
        typer.echo(f"updated {path}")
        return
    from experiments.estimate.spot_refresh import refresh_spot_prices

    types, zones = list(instance_type), list(zone)
    if cluster is not None:
        from experiments.model.cluster_spec import SPOT, load_cluster_spec

        spec = load_cluster_spec(cluster)
        region = spec.region
        groups = [g for g in spec.node_groups if g.capacity == SPOT] or spec.node_groups
        types = types or sorted({t for g in groups for t in g.types})
        zones = zones or sorted({z for g in groups for z in g.zones or (spec.zone,) if z})
    written = refresh_spot_prices(path, region, types, zones, days)
    for (where, name), summary in sorted(written.items()):
        typer.echo(
            f"{where} {name}: median ${summary['usd_per_hour']:.4f}/h, "
            f"p90 ${summary['p90_usd_per_hour']:.4f}/h over {days} days"
        )
    typer.echo(f"updated {path}")
