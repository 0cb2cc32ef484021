"""`kary designs`: show one TBON as `flux overlay status` would, or generate a design set."""

from __future__ import annotations

from pathlib import Path

import typer

from experiments.model.designs import generate_designs, write_designs
from experiments.model.topology import build_tree, render_overlay
from experiments.model.validate import dns1123_name, node_count

app = typer.Typer(
    short_help="Show TBON trees; generate design files.",
    help="Show TBON designs and generate design sets.",
    no_args_is_help=True,
)


@app.command("show", short_help="Print a TBON as `flux overlay status` does.")
def show(
    nodes: int = typer.Option(..., "--exact-nodes", "--nodes", help="Number of brokers (ranks)."),
    topo: str = typer.Option("kary:2", "--topo", help="kary:K, binomial or mincrit[:K]."),
    hostname: str | None = typer.Option(
        None, "--hostname", help="Show every rank on this host (as flux start --test-size)."
    ),
    name: str = typer.Option(
        "flux-sample", "--name", help="Host prefix: rank r is NAME-r (Flux Operator pods)."
    ),
) -> None:
    """Print the overlay of NODES ranks under TOPO, as `flux overlay status` shows it.

    Example:

    \b
        kary designs show --exact-nodes 6 --topo kary:2
    """
    node_count(nodes)
    if hostname is None:
        dns1123_name(name)
    typer.echo(render_overlay(build_tree(topo, nodes), hostname=hostname, name=name), nl=False)


@app.command("generate", short_help="Write the design set for a range of nodes.")
def generate(
    min_nodes: int = typer.Option(..., "--min-nodes", help="Smallest node count (inclusive)."),
    max_nodes: int = typer.Option(..., "--max-nodes", help="Largest node count (inclusive)."),
    min_kary: int = typer.Option(1, "--min-kary", help="Smallest kary fan-out."),
    max_kary: int | None = typer.Option(
        None, "--max-kary", help="Largest kary fan-out (default: nodes // 2)."
    ),
    out: Path = typer.Option(..., "--out", help="Design file to write (JSON)."),
) -> None:
    """Write the design set for a node range: kary:k for k <= N/2, plus binomial.

    Example:

    \b
        kary designs generate --min-nodes 4 --max-nodes 31 --out designs/kary-designs.json
    """
    designs = generate_designs(min_nodes, max_nodes, min_kary, max_kary)
    write_designs(designs, out)
    typer.echo(f"wrote {len(designs)} designs for {min_nodes}..{max_nodes} nodes to {out}")
