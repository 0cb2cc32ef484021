"""`kary box`: the box's housekeeping (cells run in a box through `kary run --place box`)."""

from __future__ import annotations

import typer

from experiments.box.reap import reap_dead_boxes

app = typer.Typer(
    short_help="Clean up what dead boxes left (brokers here).",
    help="Real Flux brokers in network namespaces on this machine (kary run --place box).",
    no_args_is_help=True,
)


@app.command("reap", short_help="Remove what kary runs that are gone left.")
def reap() -> None:
    """Stop boxes and delete scratch folders left by kary runs that are gone.

    Only what carries a dead run's id (kary-box-<pid>-<tag>) is touched;
    `kary run --place box` does the same before its first cell.

    Example:

    \b
        kary box reap
    """
    typer.echo(f"kary box reap: {reap_dead_boxes().text()}")
