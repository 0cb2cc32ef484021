"""What to say for a flag a command does not have: the flag the user most likely meant.

click suggests by difflib alone, over the command's own flags: `kary race --iter`
got "Possible options: --cluster, --history, --sizes".  Here a flag that another
kary command takes but this one has no place for (race's iterations, parse's
--data-dir) is explained, and otherwise the suggestions are this command's flags
that the typed one begins, else the closest by difflib at a stricter cutoff.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["no_such_flag"]

# (command, flag) -> why it has no such flag and what it takes instead.
_ELSEWHERE = {
    ("race", "--iters"): "a race runs blocks, not iterations: --max-blocks is its budget",
    ("race", "--max-nodes"): "a race decides at one node count: --exact-nodes N",
    ("race", "--only"): "a race runs its candidates whole: --topo names them",
    ("race", "--order"): "a race orders each block's cells itself (--seed)",
    ("race", "--rerun-failed"): "a race voids a block with a failed cell and runs it again",
    ("parse", "--data-dir"): "parse reads the raw tree from --data",
    ("parse", "--designs"): "parse reads the raw tree from --data; --designs is run's",
    ("plan", "--yes"): "a plan starts nothing",
}
_CUTOFF = 0.75


def no_such_flag(command: str, typed: str, flags: Iterable[str]) -> str:
    """One line for `typed`, which `command` (`race`, `cluster up`) does not take."""
    flags = sorted(set(flags))
    known = {flag for (name, flag) in _ELSEWHERE if name == command}
    candidates = [*flags, *sorted(known)]
    begun = [flag for flag in candidates if flag.startswith(typed)]
    close = begun or difflib.get_close_matches(typed, candidates, n=3, cutoff=_CUTOFF)
    elsewhere = [flag for flag in close if flag in known]
    if elsewhere:
        flag = elsewhere[0]
        return f"kary {command} has no {flag}: {_ELSEWHERE[(command, flag)]}"
    if close:
        return f"No such option: {typed} (did you mean {', '.join(close)}?)"
    return f"No such option: {typed}"
