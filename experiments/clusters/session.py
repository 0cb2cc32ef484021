"""A cluster around one sweep: `kary run --cluster FILE [--up] [--down] [--max-cost USD]`.

- `cluster_session` creates the cluster first (`--up`) and deletes it at the
  end (`--down`): in `finally`, so also on an error, Ctrl-C or SIGTERM.
- `lease_hours` sizes the lease (and so the dead-man switch) to the plan, so
  the switch never fires in the middle of a sweep that was expected to fit.
- `SpendingCap` refuses a plan whose estimate is over `--max-cost` and, during
  the sweep, stops before a cell whose predicted cost would take the spend
  so far past it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from experiments.clusters.base import Provider
from experiments.clusters.lease import DEFAULT_MAX_HOURS, Lease
from experiments.clusters.lifecycle import (
    cluster_down,
    cluster_up,
    cost_lines,
    provider_for,
    shielded,
    terminate_as_interrupt,
    up_plan,
)
from experiments.clusters.shell import CommandFailed, Shell
from experiments.errors import UserError
from experiments.estimate.time_model import Estimate
from experiments.model.cluster_spec import ClusterSpec
from experiments.model.plan import Cell

__all__ = [
    "SpendingCap",
    "SweepGuard",
    "cluster_session",
    "lease_hours",
    "run_cluster_lines",
    "sweep_guard",
]

# Margin over the estimate before the dead-man switch may fire.
_LEASE_MARGIN = 1.5


def lease_hours(estimate_seconds: float, max_hours: float | None) -> float:
    """The lease for a sweep: the given --max-hours, else the estimate with margin."""
    needed = estimate_seconds / 3600.0
    if max_hours is None:
        return max(DEFAULT_MAX_HOURS, math.ceil(needed * _LEASE_MARGIN + 1))
    if max_hours < needed:
        raise UserError(
            f"--max-hours {max_hours:g} is shorter than the plan (about {needed:.1f} h): the "
            "dead-man switch would remove the nodes mid-sweep; raise --max-hours"
        )
    return max_hours


def run_cluster_lines(
    provider: Provider, lease: Lease | None, up: bool, down: bool, with_cost: bool = True
) -> list[str]:
    """What --up / --down will run, for the plan on screen."""
    lines: list[str] = []
    if up and lease is not None:
        lines.append(
            f"--up creates {provider.spec.name} first (lease until "
            f"{lease.expires:%Y-%m-%d %H:%M} UTC):"
        )
        lines += up_plan(provider, lease)
    if down:
        lines.append("--down deletes it at the end, also on error, Ctrl-C or SIGTERM:")
        lines.append(f"  {provider.delete_command()}")
    if with_cost:
        lines += cost_lines(provider.spec, lease if up else None, up, down)
    elif up and lease is not None:
        lines.append(cost_lines(provider.spec, lease, False, False)[-1])
    return lines


@dataclass
class SpendingCap:
    """Stop before the spend so far plus the next cell (plus teardown) would pass `max_usd`."""

    max_usd: float | None
    hourly_usd: float
    predicted_s: list[float]
    teardown_s: float = 0.0
    clock: Callable[[], float] = time.monotonic
    started: float = field(default=0.0)

    def __post_init__(self) -> None:
        self.started = self.started or self.clock()

    def check_plan(
        self, estimate_usd: float, high_end: bool = False, note: str = "", what: str = ""
    ) -> None:
        """Refuse a plan estimated above the cap; `high_end`: the figure is the high
        end of the plan's interval (what kary checks, so a likely overrun is refused);
        `what` says which figure it is, as the plan prints it (default: that high end);
        `note` follows the refusal (a spot plan: what the same plan costs on demand)."""
        if self.max_usd is not None and estimate_usd > self.max_usd:
            interval = " (the high end of its 80% interval)" if high_end else ""
            what = f" at most ({what})" if what else interval
            raise UserError(
                f"the plan is estimated at ${estimate_usd:,.2f}{what}, more than --max-cost "
                f"${self.max_usd:,.2f}: run fewer cells or raise --max-cost"
                + (f"; {note}" if note else "")
            )

    def spent(self) -> float:
        return self.hourly_usd * (self.clock() - self.started) / 3600.0

    def before_cell(self, index: int, cell: Cell) -> str | None:
        """The runner's hook: a reason to stop before `cell`, or None to go on."""
        if self.max_usd is None:
            return None
        spent = self.spent()
        upcoming = self.hourly_usd * (self.predicted_s[index] + self.teardown_s) / 3600.0
        if spent + upcoming > self.max_usd:
            return (
                f"--max-cost ${self.max_usd:,.2f}: ${spent:,.2f} spent so far and cell {cell.id} "
                f"(with teardown) would add about ${upcoming:,.2f}"
            )
        return None


@contextmanager
def cluster_session(
    provider: Provider,
    up: bool,
    down: bool,
    lease: Lease | None,
    echo: Callable[[str], None],
) -> Iterator[None]:
    """Create the cluster before the body (`up`), delete it after (`down`), whatever happens."""
    with terminate_as_interrupt():
        try:
            if up:
                if lease is None:
                    raise ValueError("--up needs a lease")
                cluster_up(provider, lease, echo)
            yield
        finally:
            if down:
                with shielded(echo):
                    cluster_down(provider, echo)


@dataclass
class SweepGuard:
    """What `kary run` wraps a sweep in: the cluster session and the spending cap."""

    provider: Provider | None
    lease: Lease | None
    up: bool
    down: bool
    cap: SpendingCap
    echo: Callable[[str], None]

    def plan_lines(self) -> list[str]:
        if self.provider is None or not (self.up or self.down):
            return []
        return run_cluster_lines(self.provider, self.lease, self.up, self.down, with_cost=False)

    @contextmanager
    def session(self) -> Iterator[None]:
        """Around the sweep; a cloud CLI failure is one line (UserError), not a traceback."""
        if self.provider is None or not (self.up or self.down):
            yield
            return
        try:
            with cluster_session(self.provider, self.up, self.down, self.lease, self.echo):
                yield
        except CommandFailed as err:
            raise UserError(str(err)) from None


def sweep_guard(
    cluster: ClusterSpec | None,
    estimate: Estimate,
    *,
    up: bool,
    down: bool,
    max_hours: float | None,
    max_cost: float | None,
    echo: Callable[[str], None],
    shell: Shell | None = None,
) -> SweepGuard:
    """The guard for a sweep on `cluster` (None: a local run, only the cap applies)."""
    if max_cost is not None and max_cost <= 0:
        raise UserError(f"invalid --max-cost {max_cost:g}: must be above 0 dollars")
    teardown = estimate.model.teardown_s if down else 0.0
    # Spot nodes are counted at the high end of their price (the p90, else on demand):
    # the cap must hold whatever the spot price does while the sweep runs.
    hourly = estimate.hourly_usd_high
    cap = SpendingCap(max_cost, hourly, [c.seconds for c in estimate.cells], teardown)
    if cluster is None:
        return SweepGuard(None, None, False, False, cap, echo)
    provider = provider_for(cluster, shell or Shell(echo=lambda line: echo(f"  | {line}")))
    lease = Lease.new(lease_hours(estimate.seconds, max_hours)) if up else None
    return SweepGuard(provider, lease, up, down, cap, echo)
