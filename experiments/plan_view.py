"""What a plan looks like on screen and as JSON: cells, time, dollars."""

from __future__ import annotations

from typing import Any

from experiments.estimate.layouts import LayoutEstimate
from experiments.estimate.time_model import Estimate
from experiments.execution.ledger import Ledger
from experiments.formats.cell_layout import format_size
from experiments.formats.run_record import ALLOCATION
from experiments.model.places import UNBILLED, describe_backend
from experiments.model.plan import ExperimentSpec, Plan

__all__ = [
    "bill_json",
    "bill_lines",
    "capacity_json",
    "capacity_line",
    "format_duration",
    "layout_lines",
    "plan_json",
    "plan_text",
]

_SHOWN_CELLS = 20
# Assumptions smaller than this share of the estimate are counted, not listed.
_SHOWN_SHARE = 0.01


def format_duration(seconds: float) -> str:
    """7.5 s, 12 min 5 s, 2 h 42 min."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _sizes(sizes: list[int] | tuple[int, ...]) -> str:
    return ",".join(format_size(s) for s in sizes)


# The sizes a header spells out in bytes; more are shown as the first and last.
_SIZES_IN_BYTES = 4


def sizes_in_bytes(sizes: list[int] | tuple[int, ...]) -> str:
    """`sizes in bytes: 64M = 67,108,864; 1G = 1,073,741,824 (M and G binary: 2^20, 2^30)`."""
    shown = list(sizes)
    if len(shown) > _SIZES_IN_BYTES:
        shown = [min(shown), max(shown)]
    joiner = " to " if len(shown) < len(sizes) else "; "
    decimal = any(format_size(s).endswith("B") for s in sizes)
    return (
        "sizes in bytes: "
        + joiner.join(f"{format_size(s)} = {s:,}" for s in shown)
        + " (K, M, G, T are binary: 1G = 2^30 bytes"
        + ("; KB, MB, GB, TB decimal: 1GB = 10^9 bytes)" if decimal else ")")
    )


def _what(spec: ExperimentSpec) -> str:
    """A ping run has no strategies: say which experiment it is instead."""
    if spec.experiment == "ping":
        return "experiment ping"
    return f"strategies {','.join(spec.strategies)}"


def plan_text(
    plan: Plan,
    ledger: Ledger,
    estimate: Estimate,
    cluster_name: str | None,
    place: str | None = None,
    designs: str | None = None,
) -> str:
    """The plan on screen; `designs` says where its designs came from (design_source)."""
    spec, backend = plan.spec, plan.spec.backend
    lines = [
        f"kary plan: {_count(len(ledger.to_run), 'cell')} to run, "
        f"{len(ledger.done)} already done (skipped)"
        + (
            f", {len(ledger.failed)} failed before (skipped; --rerun-failed runs them)"
            if ledger.failed
            else ""
        ),
        f"backend {backend}"
        + (f" on {cluster_name}" if cluster_name else "")
        + f" · sizes {_sizes(plan.sizes)} · "
        + (
            "experiment ping"
            if spec.experiment == "ping"
            else f"strategies {','.join(spec.strategies)}"
        )
        + f" · iterations {spec.iters} · order {spec.order}"
        + (f" (seed {spec.seed})" if spec.order == "random" else ""),
    ]
    lines.append(sizes_in_bytes(plan.sizes))
    if designs:
        lines.append(designs)
    if estimate.cells:
        width = max(len(c.cell.id) for c in estimate.cells[:_SHOWN_CELLS])
        lines.append(f"  {'cell':<{width}}  {'nodes':>5}  {'topology':<10} {'predicted':>12}")
        for cell_time in estimate.cells[:_SHOWN_CELLS]:
            cell = cell_time.cell
            lines.append(
                f"  {cell.id:<{width}}  {cell.nodes:>5}  {cell.topo:<10} "
                f"{format_duration(cell_time.seconds):>12}"
            )
        if len(estimate.cells) > _SHOWN_CELLS:
            lines.append(f"  ... and {len(estimate.cells) - _SHOWN_CELLS} more cells")
    parts = ", ".join(
        f"{name} {format_duration(value)}" for name, value in estimate.parts.items() if value > 0
    )
    lines.append(
        f"time: {format_duration(estimate.seconds)}{_time_range(estimate)}"
        f" ({parts or 'nothing to run'})"
    )
    lines.append(f"time model: {estimate.model.source}")
    lines += [f"  and: {source}" for source in estimate.sources[1:]]
    if estimate.cells:
        lines += _trust_lines(estimate)
    if estimate.instance_type is None:
        lines.append(_unpriced_cost_line(backend, place))
    else:
        bill = estimate.bill
        spot = " spot" if bill is not None and bill.spot else ""
        disks = " + disks" if estimate.disk_detail else ""
        # The sum names only what it adds up: an item the catalog cannot price is said
        # beside it, never counted in (its own line below says why).
        extra_lines = bill.extras if bill else ()
        extras = "".join(
            f" + {line.name}" for line in extra_lines if line.usd_per_hour_each is not None
        )
        unpriced = ", ".join(line.name for line in extra_lines if line.usd_per_hour_each is None)
        lines.append(
            f"cost: {estimate.nodes_billed} nodes ({estimate.instance_type}{spot} workers)"
            f" + control plane{disks}{extras}"
            f" = ${estimate.hourly_usd:.2f}/h (prices as of {estimate.price_as_of}"
            + (f"; not priced: {unpriced}" if unpriced else "")
            + ")"
            f" -> ${estimate.cost_usd:.2f}"
            f" (${estimate.cost_usd_low:.2f} - ${estimate.cost_usd_high:.2f})"
        )
        capacity = capacity_line(estimate)
        if capacity:
            lines.append(capacity)
        lines += bill_lines(estimate)
    return "\n".join(lines) + "\n"


def _on_demand_hourly(estimate: Estimate) -> float | None:
    """$/h of the same cluster on demand, where the plan's workers run on spot."""
    bill = estimate.bill
    if bill is None or bill.on_demand is None:
        return None
    return estimate.hourly_usd - bill.usd_per_hour + bill.on_demand.usd_per_hour


def capacity_line(estimate: Estimate) -> str | None:
    """Spot and on-demand side by side, where the workers run on spot: each a point
    estimate and an interval (spot's high end at its p90 price)."""
    hourly = _on_demand_hourly(estimate)
    if hourly is None:
        return None
    seconds, low, high = _on_demand_seconds(estimate)
    return (
        f"capacity: spot ${estimate.cost_usd:.2f} (${estimate.cost_usd_low:.2f} - "
        f"${estimate.cost_usd_high:.2f}) at ${estimate.hourly_usd:.2f}/h"
        f" (${estimate.hourly_usd_high:.2f}/h at the high end) · on demand "
        f"${hourly * seconds / 3600:.2f} (${hourly * low / 3600:.2f}"
        f" - ${hourly * high / 3600:.2f}) at ${hourly:.2f}/h"
    )


def _on_demand_seconds(estimate: Estimate) -> tuple[float, float, float]:
    """The plan's seconds (point, low, high) on demand: no spot re-runs."""
    reruns = estimate.spot_reruns
    if reruns is None:
        return estimate.seconds, estimate.seconds_low, estimate.seconds_high
    return (
        estimate.seconds - reruns.seconds,
        estimate.seconds_low - reruns.seconds_low,
        estimate.seconds_high - reruns.seconds_high,
    )


def capacity_json(estimate: Estimate) -> dict[str, Any] | None:
    """`capacity_line` for --json."""
    hourly = _on_demand_hourly(estimate)
    if hourly is None:
        return None
    seconds, low, high = _on_demand_seconds(estimate)
    return {
        "spot": {
            "usd_per_hour": round(estimate.hourly_usd, 4),
            "usd_per_hour_high": round(estimate.hourly_usd_high, 4),
            "cost_usd": round(estimate.cost_usd, 2),
            "cost_usd_low": round(estimate.cost_usd_low, 2),
            "cost_usd_high": round(estimate.cost_usd_high, 2),
        },
        "on_demand": {
            "usd_per_hour": round(hourly, 4),
            "cost_usd": round(hourly * seconds / 3600, 2),
            "cost_usd_low": round(hourly * low / 3600, 2),
            "cost_usd_high": round(hourly * high / 3600, 2),
        },
    }


def bill_lines(estimate: Estimate) -> list[str]:
    """The hourly figure line by line: each node group at its capacity (a spot group with
    its price's source and the same nodes on demand), the control plane with its support
    tier and why, the disks, NAT gateways and public IPv4; then a warning if the prices
    are stale."""
    bill = estimate.bill
    if bill is None:
        return []
    lines = [
        f"  workers: {worker.text()}" + ("" if worker.spot else f", as of {worker.as_of}")
        for worker in bill.workers
    ]
    control = bill.control_plane
    if control is not None:
        as_of = f", as of {control.as_of}" if control.as_of else ""
        lines.append(f"  control plane: {control.text()}{as_of}")
    if bill.disk_detail:
        as_of = f", as of {bill.disk_as_of}" if bill.disk_as_of else ""
        lines.append(f"  disks: {bill.disk_detail} = ${bill.disk_usd_per_hour:.2f}/h{as_of}")
    lines += [f"  {line.name}: {line.text()}" for line in bill.extras]
    if estimate.spot_reruns is not None:
        lines.append(f"  spot re-runs: {estimate.spot_reruns.text(estimate.hourly_usd)}")
    elif bill.spot:
        lines.append(
            "  spot re-runs: not priced: the catalog has no interruption rate for these "
            "spot nodes (unsure what interruptions would cost)"
        )
    if estimate.price_warning:
        lines.append(estimate.price_warning)
    return lines


def bill_json(estimate: Estimate) -> dict[str, Any] | None:
    """`bill_lines` for --json: each hourly line with its numbers, date and source."""
    bill = estimate.bill
    if bill is None:
        return None
    control = bill.control_plane
    extras = {line.item: line.record() for line in bill.extras}
    return {
        "usd_per_hour": round(bill.usd_per_hour, 4),
        "usd_per_hour_high": round(bill.usd_per_hour_high, 4),
        "workers": [w.record() for w in bill.workers],
        "control_plane": None
        if control is None
        else {
            "usd_per_hour": control.usd_per_hour,
            "support": control.support,
            "why": control.why or None,
            "standard_usd_per_hour": control.standard_usd_per_hour,
            "kubernetes_version": control.kubernetes_version,
            "as_of": control.as_of,
            "source": control.source,
        },
        "disks": {
            "usd_per_hour": round(bill.disk_usd_per_hour, 4),
            "detail": bill.disk_detail,
            "as_of": bill.disk_as_of,
            "source": bill.disk_source,
        }
        if bill.disk_detail
        else None,
        "nat_gateway": extras.get("nat_gateway"),
        "public_ipv4": extras.get("public_ipv4"),
        "on_demand_usd_per_hour": round(bill.on_demand.usd_per_hour, 4)
        if bill.on_demand is not None
        else None,
        "priced_on": bill.priced_on.isoformat() if bill.priced_on else None,
        "price_warning": estimate.price_warning,
        "spot_reruns": estimate.spot_reruns.record() if estimate.spot_reruns else None,
    }


def _time_range(estimate: Estimate) -> str:
    """` (low - high)` for the plan's 80% interval; nothing for an empty plan."""
    if not estimate.cells:
        return ""
    return (
        f" ({format_duration(estimate.seconds_low)} - {format_duration(estimate.seconds_high)},"
        f" {estimate.level:.0%} interval)"
    )


def _trust_lines(estimate: Estimate) -> list[str]:
    """Where the plan reaches beyond its history, and what it takes on trust."""
    lines = [f"extrapolated: {text}" for text in estimate.extrapolated]
    shown = [a for a in estimate.assumptions if a.share >= _SHOWN_SHARE]
    for assumption in shown:
        lines.append(f"assumed: {assumption.detail} ({assumption.share:.0%} of the estimate)")
    hidden = len(estimate.assumptions) - len(shown)
    if hidden:
        lines.append(f"assumed: {hidden} more term(s), each under {_SHOWN_SHARE:.0%} (see --json)")
    return lines


def plan_json(
    plan: Plan, ledger: Ledger, estimate: Estimate, cluster_name: str | None
) -> dict[str, Any]:
    return {
        "backend": plan.spec.backend,
        "cluster": cluster_name,
        "cells": [
            {
                "id": c.cell.id,
                "nodes": c.cell.nodes,
                "topo": c.cell.topo,
                "iteration": c.cell.iteration,
                "sizes": list(c.cell.sizes),
                "strategies": list(c.cell.strategies),
                "raw_dir": str(c.cell.raw_dir(plan.spec.data_dir)),
                "predicted_seconds": round(c.seconds, 3),
            }
            for c in estimate.cells
        ],
        "done": [c.id for c in ledger.done],
        "failed_skipped": [c.id for c in ledger.failed],
        "estimated_seconds": round(estimate.seconds, 3),
        "breakdown_seconds": {k: round(v, 3) for k, v in estimate.parts.items()},
        "hourly_usd": round(estimate.hourly_usd, 4),
        "disk_usd_per_hour": round(estimate.disk_usd_per_hour, 4),
        "disks": estimate.disk_detail or None,
        "estimated_cost_usd": round(estimate.cost_usd, 2),
        "estimated_seconds_low": round(estimate.seconds_low, 3),
        "estimated_seconds_high": round(estimate.seconds_high, 3),
        "estimated_cost_usd_low": round(estimate.cost_usd_low, 2),
        "estimated_cost_usd_high": round(estimate.cost_usd_high, 2),
        "interval_level": estimate.level,
        "assumptions": [
            {"term": a.term, "detail": a.detail, "share": round(a.share, 4)}
            for a in estimate.assumptions
        ],
        "extrapolated": list(estimate.extrapolated),
        "instance_type": estimate.instance_type,
        "nodes_billed": estimate.nodes_billed,
        "price_as_of": estimate.price_as_of,
        "bill": bill_json(estimate),
        "capacity": capacity_json(estimate),
        "order": plan.spec.order,
        "seed": plan.spec.seed,
        "time_model": estimate.model.model_dump(),
    }


def _unpriced_cost_line(backend: str, place: str | None = None) -> str:
    if backend == "flux" and place == ALLOCATION:
        return (
            "cost: not billed by kary (runs in your Flux allocation; "
            "your site's accounting applies)"
        )
    if backend in UNBILLED:
        return f"cost: $0.00 (nothing billed: {describe_backend(backend, place)})"
    return "cost: unknown (no --cluster FILE to price; the cluster's own bill applies)"


def _layout_figure(layout: LayoutEstimate) -> str:
    """`2 h 45 min, $12.16` (the time alone where nothing is billed)."""
    cost = f", ${layout.cost_usd:.2f}" if layout.hourly_usd else ""
    return f"{format_duration(layout.seconds)}{cost}"


def _held_to_note(first: LayoutEstimate, runs: LayoutEstimate) -> str:
    """The headline shows the layout the sweep runs; this says so, what the first layout
    (per-cell) would take, and which of the two is dearer by the numbers: --max-cost and
    --max-hours hold the sweep to that one (PlannedSweep.held_to)."""
    dearer = runs if runs.seconds > first.seconds else first
    word = "dearer" if first.hourly_usd else "longer"
    return (
        f"  (the time and cost above are {runs.name}'s, the layout the sweep runs, marked *: "
        f"{_layout_figure(runs)}; {first.name} would take {_layout_figure(first)}; "
        f"{dearer.name} is the {word}, and --max-cost and --max-hours hold the sweep to its "
        f"figure)"
    )


def layout_lines(layouts: list[LayoutEstimate], chosen: str) -> list[str]:
    """The plan's cells in each layout, side by side (and, on a spot cluster, on spot and
    on demand), and what each takes on trust."""
    if not layouts:
        return []
    width = max(len(layout.name) for layout in layouts)
    spot = layouts[0].on_demand_costs() is not None
    header = "layouts (the same cells; --layout chooses; the 80% interval in brackets"
    lines = [
        header
        + ("; spot, its high end at the p90 spot price, and the same on demand):" if spot else "):")
    ]
    for layout in layouts:
        mark = "*" if layout.name == chosen else " "
        cost = (
            f"  {'spot ' if spot else ''}${layout.cost_usd:.2f}"
            f" (${layout.cost_usd_low:.2f} - ${layout.cost_usd_high:.2f})"
            if layout.hourly_usd
            else ""
        )
        on_demand = layout.on_demand_costs()
        if on_demand is not None:
            cost += f"  on demand ${on_demand[0]:.2f} (${on_demand[1]:.2f} - ${on_demand[2]:.2f})"
        lines.append(
            f" {mark}{layout.name:<{width}}  {format_duration(layout.seconds)}"
            f" ({format_duration(layout.seconds_low)} - {format_duration(layout.seconds_high)})"
            + cost
        )
    runs = next((layout for layout in layouts if layout.name == chosen), None)
    if runs is not None and runs is not layouts[0]:
        lines.append(_held_to_note(layouts[0], runs))
    shown: set[str] = set()
    for layout in layouts[1:]:
        notes = [note for note in layout.assumptions if note not in shown]
        lines += [f"  {layout.name}: {note}" for note in notes]
        shown.update(notes)
    return lines
