"""A plan's cost in each layout, side by side: per-cell, nested, nested with --mmap.

The per-cell estimate (time_model.estimate_plan) prices a MiniCluster per cell.
The nested layout runs the same cells, measured the same way, as nested Flux
instances inside one MiniCluster per node count, so three parts change:

- **overhead**: the MiniCluster's start (`run_overhead_s` + `broker_start_s` per
  broker) is paid once per node count; each cell pays a nested instance's
  start-up instead, measured on real Flux (benchmarks/levers.py) and fitted as
  `a + b x nodes`;
- **generate**: each size's blob is generated once per node count (the first
  cell keeps it on the lead pod; the template's KARY_BLOB_CACHE);
- **create** (with `--mmap`): `flux archive create --mmap` maps the blob instead
  of copying it into the content store: create and the distribution after it
  are scaled by the ratios measured with and without it, interleaved.

Everything else (distribute, verify, delete, clean, the cold-cache drops) is
the per-cell model's own prediction, with its own interval.  The lever inputs
are measured on one machine (benchmarks/results/levers-flux-0.88-2cores.json,
copied beside this module): every broker there shares 2 cores, which a
cluster's nodes do not, so each layout says so among its assumptions.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from experiments.estimate.bill import HourlyPrice, PricedInterval
from experiments.estimate.parameters import GIB
from experiments.estimate.spot_reruns import RERUNS_PART
from experiments.estimate.time_model import Estimate
from experiments.formats.run_record import NESTED, PER_CELL
from experiments.model.log_budget import cell_log_bytes, group_budget, split_by_budget

__all__ = ["LEVERS_FILE", "LayoutEstimate", "Levers", "layout_estimates", "load_levers"]

LEVERS_FILE = Path(__file__).with_name("levers-flux-0.88-2cores.json")
NESTED_MMAP = f"{NESTED} + --mmap"


@dataclass(frozen=True)
class Ratio:
    """A measured ratio (with / without): the median over sizes and its range."""

    median: float
    low: float
    high: float
    n: int


@dataclass(frozen=True)
class Levers:
    """The measured inputs of the nested layout (see the module doc)."""

    start_a: float  # nested instance start-up: a + b x nodes seconds
    start_b: float
    start_nodes: tuple[int, ...]  # the node counts measured
    start_n: int  # runs per node count
    start_spread: float  # the largest |residual| / fitted, over node counts
    create_mmap: Ratio
    distribute_mmap: Ratio
    generate_s_per_gb: float
    source: str

    def nested_start_s(self, nodes: int) -> float:
        return self.start_a + self.start_b * nodes


def _ratios(results: dict[str, Any], with_key: str, without_key: str) -> Ratio:
    """with / without per size, from the medians of each; the range over every pairing."""
    medians, lows, highs = [], [], []
    for size, without in results[without_key].items():
        with_ = results[with_key][size]
        medians.append(with_["median"] / without["median"])
        lows.append(with_["min"] / without["max"])
        highs.append(with_["max"] / without["min"])
    return Ratio(statistics.median(medians), min(lows), max(highs), len(medians))


def derive_levers(results: dict[str, Any], source: str) -> Levers:
    """The layout model's inputs from a benchmarks/levers.py result."""
    starts = results["nested_start_s"]
    nodes = sorted(int(n) for n in starts)
    medians = [starts[str(n)]["median"] for n in nodes]
    fit = statistics.linear_regression(nodes, medians)
    fitted = [fit.intercept + fit.slope * n for n in nodes]
    spread = max(abs(m - f) / f for m, f in zip(medians, fitted, strict=True))
    per_gb = [
        g["median"] / (int(size) / GIB) for size, g in results["generate_s"].items() if int(size)
    ]
    return Levers(
        start_a=fit.intercept,
        start_b=fit.slope,
        start_nodes=tuple(nodes),
        start_n=min(starts[str(n)]["n"] for n in nodes),
        start_spread=spread,
        create_mmap=_ratios(results, "create_mmap_s", "create_s"),
        distribute_mmap=_ratios(results, "dist_mmap_s", "dist_s"),
        generate_s_per_gb=statistics.median(per_gb),
        source=source,
    )


@cache
def load_levers(path: Path = LEVERS_FILE) -> Levers:
    results = json.loads(path.read_text())
    source = (
        f"benchmarks/levers.py on flux-core, {results['cores']} cores, every broker on one "
        f"machine (cores {results['busy_share']:.0%} busy)"
    )
    return derive_levers(results, source)


@dataclass(frozen=True)
class LayoutEstimate(PricedInterval):
    """One layout's time and dollars for the plan's cells, with an 80% interval."""

    name: str
    seconds: float
    seconds_low: float
    seconds_high: float
    hourly_usd: float
    parts: dict[str, float]
    assumptions: list[str] = field(default_factory=list)
    # The plan's hourly bill: a spot plan's high end is at its p90, and it prices the same
    # layout on demand beside it.
    bill: HourlyPrice | None = None

    @property
    def cost_usd(self) -> float:
        return self.hourly_usd * self.seconds / 3600.0

    @property
    def on_demand_hourly_usd(self) -> float | None:
        """$/h of the same cluster on demand, where the plan's workers run on spot."""
        if self.bill is None or self.bill.on_demand is None:
            return None
        return self.hourly_usd - self.bill.usd_per_hour + self.bill.on_demand.usd_per_hour

    def on_demand_costs(self) -> tuple[float, float, float] | None:
        """($, low, high) of this layout on demand, where the plan runs on spot."""
        hourly = self.on_demand_hourly_usd
        if hourly is None:
            return None
        # On demand, nothing is reclaimed: no cell runs again (spot_reruns.py).
        reruns = self.parts.get(RERUNS_PART, 0.0)
        return (
            hourly * (self.seconds - reruns) / 3600.0,
            hourly * (self.seconds_low - reruns) / 3600.0,
            hourly * (self.seconds_high - reruns) / 3600.0,
        )

    def record(self) -> dict[str, Any]:
        record = {
            "layout": self.name,
            "seconds": round(self.seconds, 1),
            "seconds_low": round(self.seconds_low, 1),
            "seconds_high": round(self.seconds_high, 1),
            "cost_usd": round(self.cost_usd, 2),
            "cost_usd_low": round(self.cost_usd_low, 2),
            "cost_usd_high": round(self.cost_usd_high, 2),
            "breakdown_seconds": {k: round(v, 1) for k, v in self.parts.items()},
            "assumptions": list(self.assumptions),
        }
        on_demand = self.on_demand_costs()
        if on_demand is not None:
            cost, low, high = (round(c, 2) for c in on_demand)
            record["capacity"] = "spot"
            record["on_demand"] = {"cost_usd": cost, "cost_usd_low": low, "cost_usd_high": high}
        return record


def layout_estimates(estimate: Estimate, levers: Levers | None = None) -> list[LayoutEstimate]:
    """The plan in each layout: per-cell (the estimate as it is), nested, nested + --mmap.

    Parts the layout leaves alone keep the per-cell interval's relative width;
    the parts it changes are priced from the measured levers, widened by the
    range those were measured with.  Empty for a plan with nothing to run.
    """
    if not estimate.cells:
        return []
    levers = levers or load_levers()
    model = estimate.model
    low_share = estimate.seconds_low / estimate.seconds
    high_share = estimate.seconds_high / estimate.seconds
    per_cell = LayoutEstimate(
        PER_CELL,
        estimate.seconds,
        estimate.seconds_low,
        estimate.seconds_high,
        estimate.hourly_usd,
        dict(estimate.parts),
        ["a MiniCluster per cell: the per-cell estimate above"],
        estimate.bill,
    )
    groups: dict[int, set[int]] = defaultdict(set)
    cells_per_nodes: dict[int, int] = defaultdict(int)
    log_bytes: dict[int, list[int]] = defaultdict(list)
    for cell_time in estimate.cells:
        cell = cell_time.cell
        groups[cell.nodes].update(cell.sizes)
        cells_per_nodes[cell.nodes] += 1
        log_bytes[cell.nodes].append(
            cell_log_bytes(cell.experiment, cell.nodes, len(cell.sizes), len(cell.strategies))
        )
    # A node count's cells split where their log would pass the group's rotation budget
    # (backends/kubernetes/nested_group.within_log_budget): a MiniCluster each.
    miniclusters = {n: len(split_by_budget(b, group_budget())) for n, b in log_bytes.items()}
    cluster_starts = sum(
        (model.run_overhead_s + model.broker_start_s * n) * miniclusters[n] for n in groups
    )
    nested_starts = sum(levers.nested_start_s(n) * k for n, k in cells_per_nodes.items())
    # What the per-cell overhead spends on MiniCluster starts, all of which nesting replaces.
    per_cell_starts = sum(
        (model.run_overhead_s + model.broker_start_s * n) * k for n, k in cells_per_nodes.items()
    )
    generate_once = sum(
        model.generate_s_per_gb * size / GIB * miniclusters[n]
        for n, sizes in groups.items()
        for size in sizes
    )
    layouts = [per_cell]
    for name, mmap in ((NESTED, False), (NESTED_MMAP, True)):
        parts = dict(estimate.parts)
        parts["overhead"] = parts.get("overhead", 0.0) - per_cell_starts + cluster_starts
        parts["overhead"] += nested_starts
        parts["generate"] = generate_once if parts.get("generate") else 0.0
        create_ratio = levers.create_mmap if mmap else None
        dist_ratio = levers.distribute_mmap if mmap else None
        if create_ratio and dist_ratio:
            parts["create"] = parts.get("create", 0.0) * create_ratio.median
            parts["distribute"] = parts.get("distribute", 0.0) * dist_ratio.median
        seconds = sum(parts.values())
        kept = seconds - nested_starts - parts.get("create", 0.0) - parts.get("distribute", 0.0)
        low = kept * low_share + nested_starts * (1 - levers.start_spread)
        high = kept * high_share + nested_starts * (1 + levers.start_spread)
        for part, ratio in (("create", create_ratio), ("distribute", dist_ratio)):
            value = parts.get(part, 0.0)
            if ratio is None:
                low, high = low + value * low_share, high + value * high_share
            else:
                low += value * low_share * ratio.low / ratio.median
                high += value * high_share * ratio.high / ratio.median
        notes = _assumptions(levers, groups, cells_per_nodes, mmap)
        split = {n: k for n, k in miniclusters.items() if k > 1}
        if split:
            notes.append(
                "split so a group's log stays under half the kubelet's log rotation size: "
                + ", ".join(f"{k} MiniClusters at {n} nodes" for n, k in sorted(split.items()))
            )
        notes.append(
            f"generation at the per-cell model's {model.generate_s_per_gb:.2f} s/GB "
            f"(measured here: {levers.generate_s_per_gb:.2f} s/GB)"
        )
        layouts.append(
            LayoutEstimate(
                name, seconds, low, high, estimate.hourly_usd, parts, notes, estimate.bill
            )
        )
    return layouts


def _assumptions(
    levers: Levers, groups: dict[int, set[int]], cells: dict[int, int], mmap: bool
) -> list[str]:
    counts = ", ".join(f"{k} cells at {n} nodes" for n, k in sorted(cells.items()))
    measured = ",".join(map(str, levers.start_nodes))
    notes = [
        f"one MiniCluster per node count ({len(groups)}: {counts}), started as the per-cell "
        "model starts one",
        f"nested start-up {levers.start_a:.2f} s + {levers.start_b:.3f} s x nodes, fitted on "
        f"{measured} nodes (n={levers.start_n} each, within {levers.start_spread:.0%}); "
        f"{levers.source}",
        "each size's blob generated once per node count, on the lead pod",
    ]
    beyond = [n for n in groups if n > max(levers.start_nodes)]
    if beyond:
        notes.append(
            f"extrapolated: nested start-up at {','.join(map(str, sorted(beyond)))} nodes, "
            f"measured up to {max(levers.start_nodes)}"
        )
    if mmap:
        c, d = levers.create_mmap, levers.distribute_mmap
        notes.append(
            f"--mmap: create x{c.median:.2f} ({c.low:.2f}-{c.high:.2f}), distribute "
            f"x{d.median:.2f} ({d.low:.2f}-{d.high:.2f}), measured over {c.n} sizes here"
        )
    return notes
