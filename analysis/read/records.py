"""The small records the log parsers produce and the problems they report."""

from __future__ import annotations

from functools import partial
from typing import Any, Literal, NamedTuple

__all__ = [
    "FAILED",
    "OK",
    "VOID",
    "PingStep",
    "Problem",
    "ProblemKind",
    "Step",
    "few",
    "is_void",
    "step_of",
    "void_mask",
    "void_status",
]

OK = "ok"
FAILED = "failed"
# A step whose precondition failed (experiments.formats.kary_line.step_void):
# status `void: <reason>`, no time.  Neither a timing nor a failure of the
# step itself, so it is counted apart from both.
VOID = "void"


def void_status(reason: str) -> str:
    """`void: cold cache not established`: the status says why, in the tables too."""
    return f"{VOID}: {reason}"


def is_void(status: object) -> bool:
    """True for a void step's status."""
    return isinstance(status, str) and status.startswith(f"{VOID}:")


def void_mask(statuses: Any) -> Any:
    """`is_void` of every status in a pandas Series at once, as a boolean Series (a
    table's rows, where a call per row costs seconds; pandas is not imported here, as
    the parse's workers never load it)."""
    return statuses.astype(str).str.startswith(f"{VOID}:", na=False).astype(bool)


# skipped: the file gave no rows.  partial: it gave rows but something in it
# was dropped or cut short.  warning: every row kept, but something looks off.
# ignored: a file in the tree that is not kary's (notes, editor backups).
ProblemKind = Literal["skipped", "partial", "warning", "ignored"]


class Step(NamedTuple):
    """One timed benchmark step of one log; a failed or void step has seconds=None."""

    event: str
    size_label: str
    size_bytes: int
    seconds: float | None
    status: str
    reason: str


# A Step from its six values as one tuple, made in C: a named tuple's own
# __new__ (and _make) is a Python call per step, a cost at 220,000 steps.
step_of = partial(tuple.__new__, Step)


class PingStep(NamedTuple):
    """One `flux ping` of the ping variant; a failed ping has ms=None."""

    service: str
    rank: int
    size_label: str
    pad_bytes: int
    ms: float | None
    hops: int | None
    status: str
    reason: str


class Problem(NamedTuple):
    """Something wrong with one input file, said in one line."""

    path: str
    kind: ProblemKind
    reason: str

    def __str__(self) -> str:
        return f"{self.kind} {self.path}: {self.reason}"


def few(names: list[str], limit: int = 3) -> str:
    """`a, b, c and 4 more`: a short list for a one-line message."""
    shown = ", ".join(names[:limit])
    return shown if len(names) <= limit else f"{shown} and {len(names) - limit} more"
