"""Ask before anything bills: the one confirmation `kary run` and `kary cluster up` share."""

from __future__ import annotations

import sys

import typer

from experiments.errors import UserError

__all__ = ["confirm_billed", "stdin_is_terminal"]


def stdin_is_terminal() -> bool:
    return sys.stdin.isatty()


def confirm_billed(
    lines: list[str],
    question: str,
    yes: bool,
    no_terminal: str,
    declined: str = "kary: nothing was started",
) -> None:
    """Show what is about to bill (on stderr), then ask; `yes` skips the question.

    Without a terminal to ask on (CI, a pipe) and without `yes`, refuse with the
    one-line `no_terminal` reason (a UserError: exit 2).  A "no" says `declined`
    and exits 1.
    """
    for line in lines:
        typer.echo(line, err=True)
    if yes:
        return
    if not stdin_is_terminal():
        raise UserError(no_terminal)
    if not typer.confirm(question, default=False, err=True):
        typer.echo(declined, err=True)
        raise typer.Exit(1)
