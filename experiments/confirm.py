"""Ask before anything bills: the one confirmation `kary run` and `kary cluster up` share.

Plain stdin/stderr, no CLI framework, so the Python API (experiments.api) asks
the same way the commands do.
"""

from __future__ import annotations

import sys

from experiments.errors import Declined, UserError

__all__ = ["confirm_billed", "stdin_is_terminal"]


def stdin_is_terminal() -> bool:
    return sys.stdin.isatty()


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _ask(question: str) -> bool:
    """y/yes is yes; anything else, an empty answer or end of input is no."""
    sys.stderr.write(f"{question} [y/N]: ")
    sys.stderr.flush()
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def confirm_billed(
    lines: list[str],
    question: str,
    yes: bool,
    no_terminal: str,
    declined: str = "kary: nothing was started",
) -> None:
    """Show what is about to bill (on stderr), then ask; `yes` skips the question.

    Without a terminal to ask on (CI, a pipe, a notebook) and without `yes`,
    refuse with the one-line `no_terminal` reason (a UserError: exit 2).  A "no"
    raises Declined(`declined`): exit 1, nothing started.
    """
    for line in lines:
        _say(line)
    if yes:
        return
    if not stdin_is_terminal():
        raise UserError(no_terminal)
    if not _ask(question):
        raise Declined(declined)
