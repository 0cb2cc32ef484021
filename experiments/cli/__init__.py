"""The `kary` command line: thin commands over the experiments and analysis libraries.

Each command group lives in its own module here and is registered below. A
UserError raised anywhere under a command becomes one line on stderr and exit
code 2 (see `_KaryGroup`); anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import gc
import importlib
import sys
from typing import Any

import typer
from typer._click.exceptions import (  # typer vendors click; no public alias
    NoSuchOption,
    UsageError,
)
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
            message = err.format_message()
            if isinstance(err, NoSuchOption) and err.ctx is not None:
                from experiments.cli.flag_typos import no_such_flag

                flags = [f for p in err.ctx.command.params for f in getattr(p, "opts", [])]
                command = where.removeprefix("kary").strip()
                message = no_such_flag(command, err.option_name, flags)
            typer.echo(f"kary: error: {message} (see '{where} --help')", err=True)
            raise typer.Exit(2) from None


# The module that registers each top-level command.  `kary parse` imports the
# one module it runs: importing all of them (cluster specs, the renderer, the
# sweep machinery) took a quarter of a second before any command started.
# In the order `kary --help` lists them: the everyday path first.
COMMAND_MODULES = {
    "plan": "run",
    "run": "run",
    "race": "race",
    "parse": "analysis",
    "compare": "analysis",
    "report": "report",
    "render": "render",
    "designs": "designs",
    "model": "model",
    "prices": "prices",
    "cluster": "cluster",
    "network": "network",
    "box": "box",
}


def _version(value: bool) -> None:
    if value:
        typer.echo(_version_line())
        raise typer.Exit()


def _version_line() -> str:
    from experiments.version import __version__, kary_commit

    commit = kary_commit()
    return f"kary {__version__}" + (f" (commit {commit})" if commit else "")


def _group(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print kary's version."
    ),
) -> None:
    pass


def build_app(modules: list[str] | None = None) -> typer.Typer:
    """The `kary` app with the commands of `modules` (default: every command)."""
    app = typer.Typer(
        cls=_KaryGroup,
        name="kary",
        help="Plan, run and analyse k-ary data-distribution benchmarks of Flux.\n\n"
        "Start with `kary plan --exact-nodes 8 --topo kary:2,kary:4` (what would run, its "
        "time and cost, nothing started), then `kary run` with the same flags, then `kary "
        "parse --data data/raw --out data/parsed`; `kary race` decides which fan-out is "
        "fastest.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    # A group even with one command in it: typer would run a lone command as the
    # whole app, and `kary report x` would read "report" as its argument.
    app.callback()(_group)
    wanted = list(dict.fromkeys(COMMAND_MODULES.values())) if modules is None else modules
    for name in wanted:
        module = importlib.import_module(f"experiments.cli.{name}")
        if isinstance(getattr(module, "app", None), typer.Typer):
            app.add_typer(module.app, name=name)  # a command group: `kary cluster up`
        else:
            module.register(app)
    return app


def __getattr__(name: str) -> Any:
    # `experiments.cli.app`, every command, is built on first use (tests, docs).
    if name == "app":
        globals()["app"] = built = build_app()
        return built
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: only the named command's module is imported."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:  # no command module to import for it
        print(_version_line())
        return
    module = COMMAND_MODULES.get(args[0]) if args else None
    # Anything else (--help, a typo) gets every command, to list them.
    app = build_app([module]) if module is not None else build_app()
    try:
        app(args=args, prog_name="kary")
    finally:
        # The command is done and its files written and closed.  Whatever is
        # left is freed by the exit; the interpreter's own collections on the
        # way out walked all of it first (0.1 s after an 8,000-log parse).
        gc.freeze()
