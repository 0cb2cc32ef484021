"""Where a time model's numbers come from, and how far a plan reaches beyond them.

A model is only as good as the runs behind it.  `Coverage` is what those runs
spanned (node counts, sizes, fan-outs, depths, the environment) and how much
whole sweeps scattered around the model; `Environment` is where a sweep ran.
A plan inside the coverage gets the fit's own spread; each way it reaches
beyond (more nodes, bigger sizes, another fan-out, another environment) widens
its interval by a stated rate and is said in words.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from experiments.formats.cell_layout import format_size

__all__ = [
    "ANOTHER_BACKEND_SPREAD",
    "ANOTHER_ENVIRONMENT_SPREAD",
    "UNKNOWN_MACHINE_SPREAD",
    "Coverage",
    "Environment",
    "Reach",
    "reach",
]

# Log-spread added per doubling beyond what the history spans, on the share of
# a cell that depends on it (stated assumptions: a fitted line is trusted less
# the further it is carried).  Node count moves distribution, verify and
# start-up (per-rank CPU, relays, brokers); a size beyond the history's only
# scales per-GB rates the history measured; another fan-out or depth weighs
# the distribution's terms fitted on other trees.
Z = 1.2816  # the standard normal's 90th percentile: a two-sided 80% interval
NODES_SPREAD_PER_DOUBLING = 0.25
SIZE_SPREAD_PER_DOUBLING = 0.12
SHAPE_SPREAD_PER_DOUBLING = 0.15
# Environments: history that does not say which machines it ran on (flux-distribute's
# CSVs) is taken as the plan's, at this spread; another backend or instance
# type than the history's at this one, another backend (a cloud against a
# 2-core test instance) at the last (on top of the spread between the
# environments the history holds, when it holds several).
UNKNOWN_MACHINE_SPREAD = 0.25
ANOTHER_ENVIRONMENT_SPREAD = 0.6
ANOTHER_BACKEND_SPREAD = 1.0


@dataclass(frozen=True)
class Environment:
    """Where a sweep ran: the backend and the machines (None: not recorded)."""

    backend: str
    machine: str | None = None
    # A history without a machine is its own environment: two seed CSVs may come
    # from different clouds, so they are never pooled.
    sweep: str | None = None

    def __str__(self) -> str:
        if self.machine:
            return f"{self.backend} {self.machine}"
        where = f" ({Path(self.sweep).name})" if self.sweep else ""
        return f"{self.backend}, machines not recorded{where}"

    def match(self, other: Environment) -> str:
        """same; unknown (one side does not say its machines); other (machines); or
        foreign (another backend)."""
        if self.backend != other.backend:
            return "foreign"
        if self.machine is None and other.machine is None and self.sweep != other.sweep:
            # Two histories that record no machines: nothing says they share one.
            return "other" if self.sweep and other.sweep else "unknown"
        if self.machine is None or other.machine is None:
            return "unknown"
        return "same" if self.machine == other.machine else "other"


@dataclass(frozen=True)
class Coverage:
    """What the runs behind a model spanned, and how whole sweeps scattered around it."""

    what: str  # e.g. "history: 5 sweeps, 44 cells" or "defaults: flux-distribute's EKS sweep"
    environment: Environment
    nodes: tuple[int, int]
    sizes: tuple[int, int]  # bytes
    fanouts: tuple[int, int]
    depths: tuple[int, int]
    sweep_spread: float  # log-sd of a sweep's total around the model
    cell_spread: float  # log-sd of one cell around its sweep
    spread_from: str  # "the fit's residuals" or why it is assumed

    def describe_nodes(self) -> str:
        low, high = self.nodes
        return f"{low}" if low == high else f"{low}-{high}"

    def describe_sizes(self) -> str:
        low, high = self.sizes
        return format_size(low) if low == high else f"{format_size(low)}-{format_size(high)}"


@dataclass(frozen=True)
class Reach:
    """How far one cell reaches beyond a coverage: a log-spread, and per dimension
    (nodes, sizes, shape) the doublings beyond and the words for it."""

    spread: float
    dimensions: dict[str, tuple[float, str]]


def _beyond(value: float, span: tuple[float, float]) -> float:
    """Doublings outside [low, high] (0 inside)."""
    low, high = span
    if value > high > 0:
        return math.log2(value / high)
    if 0 < value < low:
        return math.log2(low / value)
    return 0.0


def reach(
    coverage: Coverage,
    nodes: int,
    sizes: tuple[int, ...],
    fanout: int,
    depth: int,
    exposed: Mapping[str, float] | None = None,
) -> Reach:
    """The extra spread and words for a cell of `nodes` brokers, `sizes`, `fanout`, `depth`.

    `exposed` is the share of the cell's time that depends on each dimension
    (nodes, shape; default all of it): a plan with more nodes than its history
    is unsure of its distribution and start-up, not of its archive create."""
    exposed = exposed or {}
    dimensions: dict[str, tuple[float, str]] = {}
    spread2 = 0.0
    node_out = _beyond(nodes, coverage.nodes)
    if node_out:
        share = exposed.get("nodes", 1.0)
        spread = NODES_SPREAD_PER_DOUBLING * node_out * share
        spread2 += spread**2
        dimensions["nodes"] = (
            node_out,
            f"{nodes} nodes, history has {coverage.describe_nodes()}: start-up, distribute "
            f"and verify ({share:.0%} of the cell) {_widened(node_out, spread)}",
        )
    outside = [(_beyond(s, coverage.sizes), s) for s in sizes]
    size_out, size = max(outside, default=(0.0, 0))
    if size_out:
        spread = SIZE_SPREAD_PER_DOUBLING * size_out
        spread2 += spread**2
        dimensions["sizes"] = (
            size_out,
            f"size {format_size(size)}, history has {coverage.describe_sizes()}: every "
            f"per-byte term {_widened(size_out, spread)}",
        )
    shape_out = max(_beyond(fanout, coverage.fanouts), _beyond(max(depth, 1), coverage.depths))
    if shape_out:
        share = exposed.get("shape", 1.0)
        spread = SHAPE_SPREAD_PER_DOUBLING * shape_out * share
        spread2 += spread**2
        (low, high), (dlow, dhigh) = coverage.fanouts, coverage.depths
        dimensions["shape"] = (
            shape_out,
            f"fan-out {fanout} depth {depth}, "
            f"history has fan-out {low}-{high} depth {dlow}-{dhigh}: distribute "
            f"({share:.0%} of the cell) {_widened(shape_out, spread)}",
        )
    return Reach(math.sqrt(spread2), dimensions)


def _widened(doublings: float, spread: float) -> str:
    """`(5.0x beyond it: the 80% interval 1.35x wider each way)`: how far, what it does."""
    return (
        f"({2**doublings:.1f}x beyond it: the 80% interval {math.exp(Z * spread):.2f}x wider "
        "each way)"
    )
