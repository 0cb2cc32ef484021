"""After a cell lost a node to preemption: wait, bounded and billed, for replacement nodes.

A managed node group (EKS) or node pool (GKE) replaces a reclaimed Spot node
on its own: a new instance boots and joins in a few minutes.  The next cell
must not start before (its pods would be Pending, or land short of nodes), and
the whole cluster is billed while kary waits, so the wait has a bound
(`--preemption-wait`, PREEMPTION_WAIT_S by default) and says what it may cost.
If the nodes are not back in time, the run stops and the same command resumes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from experiments.backends.base import Backend
from experiments.model.plan import Cell

__all__ = ["PREEMPTION_WAIT_S", "ReplacementWait"]

# Ten minutes: EKS and GKE bring a replacement node to Ready in a few (a new
# instance's boot and join), with room for a slow one; longer bills the whole
# cluster for capacity that may not come back that day.
PREEMPTION_WAIT_S = 600.0


@dataclass(frozen=True)
class ReplacementWait:
    """The runner's `after_preemption` hook: echo the bounded wait and what it may
    cost, wait on the backend, and return why to stop (None: the nodes came)."""

    backend: Backend
    limit_s: float
    hourly_usd: float
    echo: Callable[[str], None]
    clock: Callable[[], float] = time.monotonic

    def __call__(self, cell: Cell) -> str | None:
        billed = ""
        if self.hourly_usd > 0:
            most = self.hourly_usd * self.limit_s / 3600.0
            billed = f"; billed while it waits: at most ${most:,.2f} at ${self.hourly_usd:,.2f}/h"
        self.echo(
            f"kary run: cell {cell.id} lost a node to preemption: waiting up to "
            f"{self.limit_s:g} s for replacement nodes (--preemption-wait){billed}"
        )
        started = self.clock()
        reason = self.backend.await_replacements(self.limit_s)
        if reason is not None:
            return reason
        took = self.clock() - started
        self.echo(f"kary run: the nodes are back after {took:.0f} s; going on")
        return None
