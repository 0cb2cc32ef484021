"""The `kary` command line: thin commands over the experiments and analysis libraries.

Each command group lives in its own module here and is registered below. A
UserError raised anywhere under a command becomes one line on stderr and exit
code 2 (see `_KaryGroup`); anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from typing import Any

import typer
from typer._click.exceptions import UsageError  # typer vendors click; no public alias
from typer.core import TyperGroup

from experiments.errors import Declined, UserError

__all__ = ["app", "main"]


class _KaryGroup(TyperGroup):
    """A UserError or a bad flag: one line, `kary: error: ...`, exit code 2.  A "no" to a
    billed start (Declined): its one line, exit code 1."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except UserError as err:
            typer.echo(f"kary: error: {err}", err=True)
            raise typer.Exit(2) from None
        except Declined as err:
            typer.echo(str(err), err=True)
            raise typer.Exit(1) from None
        except UsageError as err:
            where = err.ctx.command_path if err.ctx is not None else "kary"
            typer.echo(f"kary: error: {err.format_message()} (see '{where} --help')", err=True)
            raise typer.Exit(2) from None


app = typer.Typer(
    cls=_KaryGroup,
    name="kary",
    help="Plan, run and analyse k-ary data-distribution benchmarks of Flux.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _register() -> None:
    # Imported here so `experiments.cli` stays importable while a module is edited.
    from experiments.cli import (
        analysis,
        cluster,
        designs,
        model,
        network,
        prices,
        render,
        report,
        run,
    )

    app.add_typer(designs.app, name="designs")
    app.add_typer(prices.app, name="prices")
    app.add_typer(network.app, name="network")
    app.add_typer(cluster.app, name="cluster")
    app.add_typer(model.app, name="model")
    render.register(app)
    run.register(app)
    analysis.register(app)
    report.register(app)


_register()


def main() -> None:
    """Console-script entry point."""
    app(prog_name="kary")
