"""What the cells' wall time cost, each node at the capacity it ran on.

A cell's nodes are on demand or spot (runs.csv's `rank_nodes`: each rank's node
with its capacity; else the cell's `capacity` when it is one kind).  An on-demand
node is priced at the catalog's list price for the instance type, a spot node at
the catalog's dated spot price for it (clusters/prices.yaml's `spot:` section,
PriceCatalog.spot_price): in the region of the zones the cell recorded (runs.csv's
`zones`), else in the one region whose spot section lists the type.  Where that is
ambiguous, or the catalog has no spot price there, the spot price is unknown.

Nothing is guessed silently: a node of unknown capacity, or a spot node of unknown
spot price, is priced on demand (a spot instance never bills more: EC2's default
maximum price is the on-demand price, and Google's Spot VMs are discounted from it),
and the cost then says it is an upper bound and why.  Provisioning, idle nodes and
the control plane are not counted: only the nodes of each cell, for its wall time.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from experiments.errors import UserError
from experiments.estimate.prices import PriceCatalog
from experiments.estimate.spot_prices import SpotPrice
from experiments.formats.node_text import nodes_of_text, zones_of_text
from experiments.model.cluster_spec import ON_DEMAND, SPOT

__all__ = ["Cell", "NodeSplit", "cost_text", "node_split", "spot_region"]

NOT_INCLUDED = "provisioning and control plane not included"


@dataclass(frozen=True)
class Cell:
    """One cell as the cost reads it from runs.csv."""

    wall_seconds: float
    nodes: int
    instance_type: str
    capacity: str = ""  # on-demand, spot, mixed; "" when not recorded
    rank_nodes: str = ""  # runs.csv's `rank_nodes` (experiments.formats.node_text)
    zones: str = ""  # runs.csv's `zones`: `us-east-2a, us-east-2b`

    @classmethod
    def of(cls, wall_seconds: float, row: Any) -> Cell:
        """A cell from a runs.csv row (a pandas Series, or any mapping with .get)."""

        def text(name: str) -> str:
            value = row.get(name)
            return value if isinstance(value, str) else ""

        return cls(
            wall_seconds,
            int(row["nodes"]),
            text("instance_type"),
            text("capacity"),
            text("rank_nodes"),
            text("zones"),
        )


@dataclass(frozen=True)
class NodeSplit:
    """A cell's nodes by capacity."""

    on_demand: int
    spot: int
    unknown: int


def node_split(cell: Cell) -> NodeSplit:
    """How many of `cell`'s nodes ran on demand, on spot, and on capacity not recorded.

    Each rank's node where runs.csv lists them (a rank it does not list, as one
    whose pod never ran, is of unknown capacity); else the cell's capacity when it is
    one kind; else every node unknown."""
    ranks = nodes_of_text(cell.rank_nodes)
    if ranks:
        kinds = Counter(rank.capacity for rank in ranks)
        known = kinds[ON_DEMAND] + kinds[SPOT]
        return NodeSplit(kinds[ON_DEMAND], kinds[SPOT], max(cell.nodes, len(ranks)) - known)
    if cell.capacity == ON_DEMAND:
        return NodeSplit(cell.nodes, 0, 0)
    if cell.capacity == SPOT:
        return NodeSplit(0, cell.nodes, 0)
    return NodeSplit(0, 0, cell.nodes)


def _region_of_zone(zone: str, regions: Sequence[str]) -> str | None:
    """The catalog region `zone` is in: `us-east-2b` in us-east-2, `us-central1-a` in
    us-central1 (the longest region name the zone extends); None when in none."""
    inside = [
        r
        for r in regions
        if zone.startswith(r) and re.fullmatch(r"-?[a-z][a-z0-9-]*", zone[len(r) :])
    ]
    return max(inside, key=len) if inside else None


def spot_region(
    catalog: PriceCatalog, zones: Sequence[str], instance_type: str
) -> tuple[str | None, str]:
    """(the region a cell's spot nodes are priced in, or None; why, when None).

    The region of the cell's zones when they name one the catalog knows; with no zone
    recorded, the one region whose spot section lists `instance_type`, if only one does.
    """
    if zones:
        regions = sorted({*catalog.regions, *catalog.spot})
        found = [_region_of_zone(zone, regions) for zone in zones]
        named = sorted({region for region in found if region is not None})
        lost = [zone for zone, region in zip(zones, found, strict=True) if region is None]
        if lost:
            return None, f"zone {', '.join(lost)} is in no region of the catalog"
        if len(named) > 1:
            return None, f"zones {', '.join(zones)} are in several regions"
        return named[0], ""
    listed = sorted(r for r, types in catalog.spot.items() if instance_type in (types or {}))
    if len(listed) == 1:
        return listed[0], ""
    if not listed:
        return None, f"the catalog has no spot price for {instance_type}"
    return None, (
        f"no zone recorded, and the catalog has {instance_type} spot prices in "
        f"{' and '.join(listed)}"
    )


@dataclass
class _Part:
    """Node-hours at one rate: what they were, the rate and what it is."""

    what: str  # `on demand`, `spot`, `of unrecorded capacity`
    usd_per_hour: float
    note: str  # what the rate is: its kind, date and source
    node_hours: float = 0.0

    def text(self) -> str:
        return (
            f"{_hours(self.node_hours)} node-h {self.what} at ${self.usd_per_hour:g}/h "
            f"({self.note})"
        )


def _hours(hours: float) -> str:
    return f"{hours:,.2f}" if hours >= 0.01 else f"{hours:.2g}"


def _spot_note(spot: SpotPrice) -> str:
    """`30-day median as of 2026-11-20, us-east-2b, source: ...`."""
    days = re.fullmatch(r"(\d+) days?", spot.window or "")
    if days:
        figure = f"{days.group(1)}-day {spot.point}"
    elif spot.window:
        figure = f"{spot.point} over {spot.window}"
    else:
        figure = spot.point
    when = ", undated," if spot.as_of == "undated" else f" as of {spot.as_of},"
    return f"{figure}{when} {spot.where}, source: {spot.source}"


def cost_text(cells: Sequence[Cell], catalog: PriceCatalog) -> str | None:
    """The report's cost line of `cells`, each node priced at the capacity it ran on;
    None when a cell names no instance type, cells name several, or the catalog has
    no list price for it (nothing to price, or no sure way to)."""
    if not cells:
        return None
    types = {cell.instance_type for cell in cells}
    if len(types) != 1 or "" in types:
        return None
    (instance,) = types
    parts: dict[tuple[Any, ...], _Part] = {}
    unknown_cells, spot_unknown_cells = 0, 0
    try:
        for cell in cells:
            split = node_split(cell)
            hours = cell.wall_seconds / 3600
            zones = zones_of_text(cell.zones)
            # On demand: the list price in the zones' region, else every region's.
            region = spot_region(catalog, zones, instance)[0] if zones else None
            on_demand = _list_price(catalog, region, instance)
            if split.on_demand:
                part = parts.setdefault(
                    ("on demand", *on_demand),
                    _Part("on demand", on_demand[0], f"list price as of {on_demand[1]}"),
                )
                part.node_hours += hours * split.on_demand
            if split.spot:
                spot, why = _spot_price(catalog, zones, instance)
                if spot is not None:
                    part = parts.setdefault(
                        ("spot", spot), _Part("spot", spot.usd_per_hour, _spot_note(spot))
                    )
                else:
                    spot_unknown_cells += 1
                    part = parts.setdefault(
                        ("spot unknown", why, *on_demand),
                        _Part(
                            "spot",
                            on_demand[0],
                            f"the on-demand list price as of {on_demand[1]}: spot price "
                            f"unknown, {why}",
                        ),
                    )
                part.node_hours += hours * split.spot
            if split.unknown:
                unknown_cells += 1
                part = parts.setdefault(
                    ("unknown", *on_demand),
                    _Part(
                        "of unrecorded capacity",
                        on_demand[0],
                        f"the on-demand list price as of {on_demand[1]}",
                    ),
                )
                part.node_hours += hours * split.unknown
    except UserError:
        return None
    usd = sum(part.node_hours * part.usd_per_hour for part in parts.values())
    if not math.isfinite(usd):
        return None
    texts = [part.text() for part in parts.values()]
    priced = texts[0] if len(texts) == 1 else f"{', '.join(texts[:-1])} and {texts[-1]}"
    bounds = []
    if unknown_cells:
        bounds.append(f"nodes of unrecorded capacity ({_of(unknown_cells, len(cells))})")
    if spot_unknown_cells:
        bounds.append(f"spot nodes of unknown spot price ({_of(spot_unknown_cells, len(cells))})")
    bound = (
        f"; an upper bound, as {' and '.join(bounds)} are priced on demand, which spot never passes"
        if bounds
        else ""
    )
    sign = "≤" if bounds else "≈"
    return f"{sign} ${usd:,.2f}: cells' wall time × {instance}: {priced}{bound}; {NOT_INCLUDED}"


def _of(count: int, total: int) -> str:
    if count == total:
        return "the one cell" if total == 1 else f"all {total} cells"
    return f"{count} of {total} cells"


def _list_price(catalog: PriceCatalog, region: str | None, instance: str) -> tuple[float, str]:
    """($/h, as of) on demand: in `region`, else the price every region agrees on."""
    if region is not None:
        return catalog.instance_price(region, instance)
    return catalog.price_anywhere(instance)


def _spot_price(
    catalog: PriceCatalog, zones: Sequence[str], instance: str
) -> tuple[SpotPrice | None, str]:
    """The spot price of a cell's spot nodes (the dearest over its zones), or (None, why)."""
    region, why = spot_region(catalog, zones, instance)
    if region is None:
        return None, why
    try:
        return catalog.spot_price(region, zones or [None], instance), ""
    except UserError:
        return None, f"the catalog has no spot price for {instance} in {', '.join(zones) or region}"
