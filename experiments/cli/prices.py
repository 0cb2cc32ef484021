"""`kary prices`: refresh the dated price catalog the cost estimate uses."""

from __future__ import annotations

from pathlib import Path

import typer

from experiments.estimate.price_refresh import refresh_catalog
from experiments.resources import resource_path

app = typer.Typer(
    help="Keep the price catalog (clusters/prices.yaml) current.", no_args_is_help=True
)


@app.command("refresh")
def refresh(
    region: str = typer.Option("us-east-2", "--region", help="AWS region to price."),
    instance_type: list[str] = typer.Option(
        [], "--instance-type", help="Instance type (repeatable; default: those already listed)."
    ),
    catalog: Path | None = typer.Option(
        None, "--catalog", help="Catalog to update (default: the shipped clusters/prices.yaml)."
    ),
) -> None:
    """Fetch on-demand prices from the AWS Price List API into the catalog.

    Example:

    \b
        kary prices refresh --region us-east-2 --instance-type c5a.4xlarge
    """
    path = catalog or resource_path("clusters", "prices.yaml")
    fresh = refresh_catalog(path, region, list(instance_type))
    for name, price in sorted(fresh.items()):
        typer.echo(f"{region} {name}: ${price:.4f}/h")
    typer.echo(f"updated {path}")
