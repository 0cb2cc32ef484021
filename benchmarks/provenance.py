"""What made a benchmark's samples: the one "made by" line, and the refusal of mixed runs.

A benchmark script keeps, for the runs its samples came from, each run's
template hash and kary commit (run.json's `template_hash` and `kary_commit`,
runs.csv's columns of those names) and when it started and finished.  From
them it says, once, what made a table:

    made by template 34a26727090491be, kary commit not recorded,
        2026-11-25T03:31:52+00:00 to 2026-11-25T03:51:00+00:00

(the first start to the last finish; "runs started A to B" where only starts
were recorded; "not recorded" for what no run recorded, and "(some runs did
not record one)" after a value some runs lacked).  Samples of more than one
template hash or recorded kary commit make no table: `check_one_source` raises
`MixedRuns` naming the values and where each ran (a run that recorded none is
no second value).

`or_refused` runs a script's body and turns MixedRuns into one line on stderr
and exit status 2.  `summarize` folds the runs of one group (a place, a link speed) into a small
JSON-able dict: what a script keeps beside its samples, and what
`describe` and `check_one_source` read.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "KEPT_BEFORE",
    "Made",
    "MixedRuns",
    "check_one_source",
    "describe",
    "made_by",
    "or_refused",
    "recorded",
    "summarize",
]

# Samples kept before kary recorded what made them: said so, nothing made up.
KEPT_BEFORE = "template and kary commit not recorded (samples kept before kary recorded them)"
# The kept keys, and what a refusal calls several of each.
KEYS = (("template_hash", "template hashes"), ("kary_commit", "kary commits"))


@dataclass(frozen=True)
class Made:
    """What made one run: run.json's (or runs.csv's) template hash, kary commit and times."""

    template_hash: str | None = None
    kary_commit: str | None = None
    started: str | None = None
    finished: str | None = None

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> Made:
        """From a run's record or a runs table's row (a missing, empty or NaN cell: None)."""

        def text(key: str) -> str | None:
            value = row.get(key)
            return value if isinstance(value, str) and value else None

        return cls(text("template_hash"), text("kary_commit"), text("started"), text("finished"))


class MixedRuns(ValueError):
    """The samples came from more than one template hash or recorded kary commit."""


def summarize(runs: Iterable[Made]) -> dict[str, Any]:
    """The runs of one group, folded: how many; the template hashes and kary commits they
    recorded, sorted, with None last where some run recorded none; the first start and the
    last finish (and, where no run recorded a finish, the last start)."""
    runs = list(runs)

    def values(key: str) -> list[str | None]:
        found = [getattr(r, key) for r in runs if getattr(r, key)]
        unrecorded: list[str | None] = [None] if len(found) < len(runs) else []
        return [*sorted(set(found)), *unrecorded]

    starts = [r.started for r in runs if r.started]
    finishes = [r.finished for r in runs if r.finished]
    made: dict[str, Any] = {
        "runs": len(runs),
        "template_hash": values("template_hash"),
        "kary_commit": values("kary_commit"),
        "started": min(starts, default=None),
        "finished": max(finishes, default=None),
    }
    if starts and not finishes:
        made["last_started"] = max(starts)
    return made


def recorded(made: Mapping[str, Any], key: str) -> list[str]:
    """The recorded values of `key` (template_hash, kary_commit) in a summary."""
    return [v for v in made.get(key, []) if v]


def check_one_source(groups: Mapping[str, Mapping[str, Any] | None]) -> None:
    """MixedRuns, naming each value and the groups where it ran, when the groups' runs
    recorded more than one template hash or kary commit (a group of None: unknown)."""
    problems = []
    for key, what in KEYS:
        where: dict[str, list[str]] = {}
        for name, made in groups.items():
            for value in recorded(made or {}, key):
                where.setdefault(value, []).append(name)
        if len(where) > 1:
            each = "; ".join(f"{v}: {', '.join(w)}" for v, w in sorted(where.items()))
            problems.append(f"the runs come from {len(where)} {what} ({each})")
    if problems:
        raise MixedRuns("; ".join(problems))


def describe(made: Mapping[str, Any]) -> str:
    """`template X, kary commit Y, <first start> to <last finish>` of a summary; every value
    where there are several (a caller that refuses them has already)."""

    def said(key: str) -> str:
        known = recorded(made, key)
        if not known:
            return "not recorded"
        some = " (some runs did not record one)" if None in made.get(key, []) else ""
        return ", ".join(known) + some

    if made.get("started") and made.get("finished"):
        span = f"{made['started']} to {made['finished']}"
    elif made.get("started") and made.get("last_started"):
        span = f"runs started {made['started']} to {made['last_started']}"
    else:
        span = "time not recorded"
    return f"template {said('template_hash')}, kary commit {said('kary_commit')}, {span}"


def made_by(groups: Mapping[str, Iterable[Made]]) -> str:
    """The one "made by" line of every group's runs together; MixedRuns, naming the groups,
    when they recorded more than one template hash or kary commit."""
    runs = {name: list(made) for name, made in groups.items()}
    check_one_source({name: summarize(made) for name, made in runs.items()})
    return "made by " + describe(summarize(r for made in runs.values() for r in made))


def or_refused(script: str, body: Callable[[], int]) -> int:
    """`body()`'s exit status; where it raised MixedRuns, one line on stderr saying so
    (`<script>: refused: ...`) and exit status 2."""
    try:
        return body()
    except MixedRuns as error:
        print(f"{script}: refused: {error}", file=sys.stderr)
        return 2
