"""How much a run varies between repeats, from history: the spread the plan replays with.

The plan's expected case replays the race on the time model's predictions, each
run drawn log-normally around its prediction.  How wide that draw is decides how
long the replayed race runs, so where `--history` holds repeated cells (one
cell, several iterations) the spread is theirs: the pooled standard deviation
of log seconds of the distribution step within each (sweep, cell, size) group,
weighted by its degrees of freedom.  Only cells of the plan's own blob kind
count: flux-distribute's zero blobs move one distinct chunk (formats/blobs.py), so
their repeats say nothing of how a random blob's distribution varies.  Without
repeats of that kind the plan says it uses the stated default, and why.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from experiments.estimate.history import load_sweeps

__all__ = ["DEFAULT_SPREAD", "STATED_SPREAD", "Spread", "race_spread"]

# About 10% either way: what kary's box runs showed between iterations of one cell
# (docs/box.md's quartiles); used where history holds no repeats.
DEFAULT_SPREAD = 0.10


@dataclass(frozen=True)
class Spread:
    """A log-normal sigma for a replayed run, and where it came from."""

    sigma: float
    groups: int = 0  # repeated (cell, size) groups it pools; 0: the stated default
    runs: int = 0
    why_stated: str = "--history with repeated cells sets it"

    @property
    def note(self) -> str:
        if not self.groups:
            return f"spread {self.sigma:.0%} (stated; {self.why_stated})"
        return (
            f"spread {self.sigma:.1%} from history ({self.runs} runs of {self.groups} "
            "repeated cells)"
        )


STATED_SPREAD = Spread(DEFAULT_SPREAD)


def race_spread(history: Path | None, event: str, blob: str | None = None) -> Spread:
    """The pooled spread of `event`'s seconds over repeats in `history` of cells with
    `blob` (None: any), else the default."""
    if history is None:
        return STATED_SPREAD
    groups: dict[tuple[object, ...], list[float]] = defaultdict(list)
    other_kinds: set[str] = set()
    for sweep in load_sweeps(Path(history)):
        for observed in sweep.cells:
            if blob is not None and observed.cell.blob != blob:
                other_kinds.add(observed.cell.blob)
                continue
            cell = dataclasses.replace(observed.cell, iteration=0)
            for (step, size), seconds in observed.seconds.items():
                if step == event and seconds > 0:
                    groups[(sweep.name, cell, size)].append(math.log(seconds))
    repeated = [logs for logs in groups.values() if len(logs) >= 2]
    freedom = sum(len(logs) - 1 for logs in repeated)
    if not freedom:
        if other_kinds:
            kinds = ", ".join(sorted(other_kinds))
            why = f"history's repeats are of {kinds} blobs, which say nothing of {blob} ones"
            return dataclasses.replace(STATED_SPREAD, why_stated=why)
        return STATED_SPREAD
    squares = sum(sum((x - sum(logs) / len(logs)) ** 2 for x in logs) for logs in repeated)
    return Spread(math.sqrt(squares / freedom), len(repeated), sum(map(len, repeated)))
