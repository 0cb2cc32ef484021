"""Create, delete, inspect and reap clusters, with the guards that keep money in the bank.

- `up` refuses a cluster that already exists (a failed create must never
  delete something kary did not make), labels what it makes with a lease,
  arms the provider-side dead-man switch, and deletes what was made when any
  step fails or is interrupted.
- `delete` retries a failed delete once and then asks the provider what is
  left (EKS: the cluster and eksctl's CloudFormation stacks); it succeeds only
  when nothing is.
- `reap` deletes only clusters whose lease says kary made them for this owner
  and whose expiry has passed.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from experiments.clusters import clock
from experiments.clusters.base import ClusterState, Provider
from experiments.clusters.lease import Lease
from experiments.clusters.shell import CommandFailed, Shell
from experiments.errors import UserError
from experiments.estimate.prices import HourlyPrice, cluster_hourly_price, load_price_catalog
from experiments.model.cluster_spec import ClusterSpec
from experiments.plan_view import format_duration

__all__ = [
    "ReapReport",
    "cluster_down",
    "cluster_status",
    "cluster_up",
    "cost_lines",
    "delete_cluster",
    "down_plan",
    "hourly_cost",
    "provider_for",
    "reap_clusters",
    "shielded",
    "terminate_as_interrupt",
    "up_plan",
]

Echo = Callable[[str], None]


def provider_for(
    spec: ClusterSpec,
    shell: Shell | None = None,
    state_dir: Path | None = None,
    session_factory: Any = None,
) -> Provider:
    """The Provider for the spec's cloud."""
    shell = shell or Shell()
    if spec.provider == "eks":
        from experiments.clusters.eks import EksProvider

        return EksProvider(spec, shell, state_dir, session_factory)
    from experiments.clusters.gke import GkeProvider

    return GkeProvider(spec, shell, state_dir)


def hourly_cost(spec: ClusterSpec, catalog_path: Path | None = None) -> HourlyPrice:
    """What the cluster bills per hour today, from the price catalog."""
    # kary's clock: the control plane's rate depends on the day (Kubernetes support calendar).
    return cluster_hourly_price(spec, load_price_catalog(catalog_path), clock.utc_now().date())


def _money(usd: float) -> str:
    return f"${usd:,.2f}"


def up_plan(
    provider: Provider, lease: Lease, dead_man: bool = True, operator: bool = True
) -> list[str]:
    """The exact commands `up` runs, then what undoes them; for --dry-run and `kary plan`."""
    lines = [f"  {step.shown}" for step in provider.create_steps(lease, dead_man, operator)]
    lines.append(f"  on failure or Ctrl-C: {provider.delete_command()}")
    return lines


def down_plan(provider: Provider) -> list[str]:
    return [f"  {provider.delete_command()}"]


def cost_lines(spec: ClusterSpec, lease: Lease | None, up: bool, down: bool) -> list[str]:
    from experiments.estimate.plan_estimate import (
        PROVISION_SECONDS,  # pulls in pandas: only when asked
    )

    # A lease prices the day it starts (the control plane's rate follows the support calendar).
    cost = cluster_hourly_price(
        spec, load_price_catalog(), (lease.created if lease else clock.utc_now()).date()
    )
    create_s, delete_s = PROVISION_SECONDS[spec.provider]
    per_s = cost.usd_per_hour / 3600.0
    lines = [f"cost: {_money(cost.usd_per_hour)}/h ({cost.detail}; prices as of {cost.as_of})"]
    if up:
        lines.append(f"create: about {format_duration(create_s)} ({_money(create_s * per_s)})")
    if down:
        lines.append(f"delete: about {format_duration(delete_s)} ({_money(delete_s * per_s)})")
    if lease is not None:
        hours = (lease.expires - lease.created).total_seconds() / 3600.0
        lines.append(
            f"at most {_money(cost.usd_per_hour * hours)} if it lives until it expires "
            f"({hours:g} h, {lease.expires:%Y-%m-%d %H:%M} UTC)"
        )
    return lines


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt here, so `finally` blocks run as for Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def shielded(echo: Echo) -> Iterator[None]:
    """While deleting, a further Ctrl-C or SIGTERM would leave half a cluster: hold them."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def held(signum: int, frame: Any) -> None:
        echo("kary: still deleting; wait for it (every call has a timeout)")

    previous = {s: signal.signal(s, held) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _reason(err: BaseException) -> str:
    if isinstance(err, KeyboardInterrupt):
        return "interrupted"
    return str(err) or type(err).__name__


def cluster_up(
    provider: Provider,
    lease: Lease,
    echo: Echo,
    dead_man: bool = True,
    operator: bool = True,
) -> None:
    """Create the cluster and everything kary needs on it; on any failure delete what was made."""
    spec = provider.spec
    # Every tool of the cluster's life (the delete's included) before anything bills: a
    # missing one found after create leaves a billing cluster kary cannot use or remove.
    for program, why in provider.tools(operator):
        provider.shell.require(program, why)
    existing = provider.describe()
    if existing is not None:
        raise UserError(
            f"cluster {spec.name} already exists in {provider.location} ({existing.status}); "
            f"use it without --up, or delete it first with `kary cluster down {spec.path}`"
        )
    provider.preflight(dead_man, operator)
    steps = provider.create_steps(lease, dead_man, operator)
    billable = False
    try:
        for step in steps:
            echo(f"kary: {step.shown}")
            billable = billable or step.creates
            step.run()
    except BaseException as err:
        if not billable:
            raise
        echo(f"kary: creating {spec.name} failed ({_reason(err)}); deleting what was made")
        with shielded(echo):
            try:
                delete_cluster(provider, echo)
            except (UserError, CommandFailed) as cleanup:
                raise UserError(
                    f"creating cluster {spec.name} failed ({_reason(err)}), and deleting what "
                    f"was made did not finish: {cleanup}"
                ) from None
        echo(f"kary: deleted what the failed create of {spec.name} made")
        if isinstance(err, CommandFailed):
            raise UserError(
                f"creating cluster {spec.name} failed: {err}; what was made is deleted"
            ) from None
        if isinstance(err, UserError):
            raise UserError(f"{err}; what was made is deleted") from None
        raise
    echo(
        f"kary: cluster {spec.name} is up; it expires {lease.expires:%Y-%m-%d %H:%M} UTC "
        f"(`kary cluster down {spec.path}` deletes it sooner)"
    )


def _leftovers(provider: Provider, name: str) -> list[str]:
    """What is left of `name`; when the provider cannot say, one line that says so."""
    try:
        return provider.leftovers(name)
    except (UserError, CommandFailed) as err:
        raise UserError(
            f"could not check what is left of {name}: {err}. It bills while it exists: "
            f"check with `kary cluster status {provider.spec.path}` or in the console"
        ) from None


def delete_cluster(provider: Provider, echo: Echo, name: str | None = None) -> None:
    """Delete cluster `name` (default: the spec's): retry once, then insist nothing is left."""
    name = name or provider.spec.name
    command = provider.delete_command(name)
    for attempt in (1, 2):
        echo(f"kary: {command}")
        try:
            provider.shell.run(command)
        except CommandFailed as err:
            left = _leftovers(provider, name)
            if not left:
                break  # nothing was there to delete, or the delete got far enough
            if attempt == 2:
                raise UserError(
                    f"could not delete {name}: {err}. Still there: {', '.join(left)}. "
                    f"It bills until it is gone: run `{command}` again"
                ) from None
            echo(f"kary: delete failed ({err}); trying once more")
            continue
        left = _leftovers(provider, name)
        if left:
            raise UserError(
                f"`{command}` finished but {', '.join(left)} still exist; "
                f"run it again or delete them in the console"
            )
        break
    # What outlives the cluster (scheduler job, placement groups) does not bill: warn, go on.
    try:
        provider.after_delete(name)
    except (CommandFailed, UserError) as err:
        echo(f"kary: warning: {err}")


def cluster_down(provider: Provider, echo: Echo) -> bool:
    """Delete the spec's cluster; False when there was nothing to delete."""
    if provider.describe() is None and not provider.leftovers():
        echo(f"kary: no cluster {provider.spec.name} in {provider.location}: nothing to delete")
        try:
            provider.after_delete()
        except (CommandFailed, UserError) as err:
            echo(f"kary: warning: {err}")
        return False
    with shielded(echo):
        delete_cluster(provider, echo)
    echo(f"kary: deleted cluster {provider.spec.name}")
    return True


def _when(moment: datetime, now: datetime) -> str:
    delta = (moment - now).total_seconds()
    relative = f"in {format_duration(delta)}" if delta >= 0 else f"{format_duration(-delta)} ago"
    return f"{moment:%Y-%m-%d %H:%M} UTC ({relative})"


def cluster_status(provider: Provider, now: datetime | None = None) -> list[str]:
    """What exists, whose it is, when it expires, when the dead-man switch fires, what it costs."""
    now = now or clock.utc_now()
    spec = provider.spec
    where = f"{spec.name} ({spec.provider}, {provider.location})"
    state = provider.describe()
    if state is None:
        left = provider.leftovers()
        if left:
            return [f"cluster {where}: not found, but {', '.join(left)} still exist"]
        return [f"cluster {where}: not found"]
    lines = [
        f"cluster {where}: {state.status}"
        + (f", Kubernetes {state.version}" if state.version else "")
    ]
    lease = state.lease
    if lease is None:
        lines.append("lease: none (not created by kary; reap leaves it alone)")
    else:
        lines.append(
            f"owner {lease.owner} · created {_when(lease.created, now)} · "
            f"expires {_when(lease.expires, now)}"
        )
    switch = provider.dead_man_status()
    if switch is None:
        lines.append("dead-man switch: none")
    elif switch.fires_at is None:
        lines.append(f"dead-man switch: {switch.detail}")
    else:
        lines.append(f"dead-man switch: fires {_when(switch.fires_at, now)}: {switch.detail}")
    cost = hourly_cost(spec)
    line = f"cost: {_money(cost.usd_per_hour)}/h ({cost.detail})"
    if lease is not None:
        spent = cost.usd_per_hour * max((now - lease.created).total_seconds(), 0) / 3600.0
        line += f"; about {_money(spent)} so far"
    lines.append(line)
    return lines


@dataclass
class ReapReport:
    reaped: list[str]
    kept: list[str]
    failed: list[str]


def _keep_reason(state: ClusterState, owner: str, now: datetime) -> str | None:
    lease = state.lease
    if lease is None:
        return "no kary lease"
    if lease.owner != owner:
        return f"owner {lease.owner}"
    if not lease.expired(now):
        return f"expires {_when(lease.expires, now)}"
    return None


def reap_clusters(
    provider: Provider,
    owner: str,
    echo: Echo,
    dry_run: bool = False,
    now: datetime | None = None,
) -> ReapReport:
    """Delete every expired cluster kary made for `owner` in the spec's region or zone."""
    now = now or clock.utc_now()
    report = ReapReport([], [], [])
    for state in provider.list_clusters():
        reason = _keep_reason(state, owner, now)
        if reason is not None:
            report.kept.append(f"{state.name} ({reason})")
            continue
        if dry_run:
            echo(f"would run: {provider.delete_command(state.name)}")
            report.reaped.append(state.name)
            continue
        try:
            with shielded(echo):
                delete_cluster(provider, echo, state.name)
            report.reaped.append(state.name)
        except (UserError, CommandFailed) as err:
            report.failed.append(f"{state.name}: {err}")
    return report
