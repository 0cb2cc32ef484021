"""What a cluster's network bills by the hour beside its nodes: NAT gateways and public IPv4.

eksctl makes its own VPC for a cluster file that names none, with one NAT gateway
and its Elastic IP by default (`vpc.nat.gateway: Single`), and puts a node group
in the public subnets (each node with a public IPv4 address) unless the group says
`privateNetworking: true`.  AWS bills every public IPv4 address by the hour since
2024-02-01, in use or not, and a NAT gateway by the hour plus per GB it carries.
A GKE node has an external IP unless its cluster is private.  Prices come from the
catalog's `network_usd_per_hour` section, each item with its date and source; an
item the catalog does not price is a line that says so, never a silent zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.errors import UserError
from experiments.model.cluster_spec import SPOT, ClusterSpec

__all__ = ["NAT_GATEWAY", "PUBLIC_IPV4", "BillLine", "check_network_section", "network_lines"]

NAT_GATEWAY = "nat_gateway"
PUBLIC_IPV4 = "public_ipv4"
_NAMES = {NAT_GATEWAY: "NAT gateway", PUBLIC_IPV4: "public IPv4"}


@dataclass(frozen=True)
class BillLine:
    """An hourly item of the bill beside the nodes: how many, at what rate, and why."""

    item: str  # NAT_GATEWAY or PUBLIC_IPV4
    count: int
    usd_per_hour_each: float | None  # None: the catalog has no price for it here
    why: str  # "eksctl's default vpc.nat.gateway Single"
    as_of: str | None = None
    source: str | None = None
    note: str = ""  # what it bills beside the hour ("plus $0.045 per GB it carries")

    @property
    def name(self) -> str:
        return _NAMES[self.item]

    @property
    def usd_per_hour(self) -> float:
        return self.count * (self.usd_per_hour_each or 0.0)

    def text(self) -> str:
        """`1 x $0.0450/h (eksctl's default ...) = $0.045/h, as of 2026-09-20; plus ...`."""
        if self.usd_per_hour_each is None:
            return f"{self.count} ({self.why}): not priced: {self.note}"
        note = f"; {self.note}" if self.note else ""
        return (
            f"{self.count} x ${self.usd_per_hour_each:.4f}/h ({self.why}) = "
            f"${self.usd_per_hour:.3f}/h, as of {self.as_of}{note}"
        )

    def record(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "usd_per_hour_each": self.usd_per_hour_each,
            "usd_per_hour": round(self.usd_per_hour, 4),
            "why": self.why,
            "as_of": self.as_of,
            "source": self.source,
            "note": self.note or None,
        }


def check_network_section(raw: Any, path: Path) -> dict[str, Any]:
    """The catalog's network_usd_per_hour, checked here so a bad one is one line, not later."""
    if raw is None:
        return {}
    try:
        for item, entry in raw.items():
            if item not in _NAMES:
                raise ValueError(f"unknown item {item!r}, not one of {', '.join(_NAMES)}")
            if not entry.get("as_of") or not entry.get("source"):
                raise ValueError(f"{item} needs as_of and source")
            for key in ("regions", "per_gb", "spot_regions"):
                for usd in (entry.get(key) or {}).values():
                    if isinstance(usd, bool) or float(usd) < 0:
                        raise ValueError(usd)
    except (AttributeError, TypeError, ValueError) as err:
        raise UserError(
            f"price catalog {path}: network_usd_per_hour needs, per item ({', '.join(_NAMES)}), "
            f"as_of, source and regions: {{region: USD per hour}} ({err})"
        ) from None
    return dict(raw)


def network_lines(
    cluster: ClusterSpec, section: dict[str, Any], capacity: str | None = None
) -> list[BillLine]:
    """The NAT gateway and public IPv4 lines of `cluster` (with its groups on `capacity`
    where given, else each on its own); items it has none of get no line."""
    lines = []
    nats = cluster.nat_gateways
    public = [g for g in cluster.node_groups if g.public_ip]
    if nats:
        why = "eksctl's default vpc.nat.gateway Single" if nats == 1 else "one per zone"
        carries = (
            "nodes in public subnets send nothing through it"
            if len(public) == len(cluster.node_groups)
            else "the private nodes' traffic out, image pulls among it, goes through it"
        )
        lines.append(_line(section, NAT_GATEWAY, cluster.region, nats, why, False, carries))
    nodes = sum(g.count for g in public)
    if nodes or nats:
        spot = bool(public) and all((capacity or g.capacity) == SPOT for g in public)
        node = "node" if nodes == 1 else "nodes"
        where = "in public subnets" if cluster.provider == "eks" else "with external IPs"
        why = f"{nodes} {node} {where}"
        if nats:
            why += (
                " + the NAT gateway's Elastic IP"
                if nats == 1
                else (f" + the {nats} NAT gateways' Elastic IPs")
            )
        lines.append(_line(section, PUBLIC_IPV4, cluster.region, nodes + nats, why, spot, ""))
    return lines


def _line(
    section: dict[str, Any],
    item: str,
    region: str,
    count: int,
    why: str,
    spot: bool,
    carries: str,
) -> BillLine:
    entry = section.get(item) or {}
    prices = (entry.get("spot_regions") or {}) if spot else {}
    usd = prices.get(region, (entry.get("regions") or {}).get(region))
    if usd is None:
        hint = (
            f"the price catalog has no dated figure for {_NAMES[item]} in {region} "
            f"(add network_usd_per_hour.{item}.regions.{region} with its source)"
        )
        return BillLine(item, count, None, why, note=hint)
    note = ""
    per_gb = (entry.get("per_gb") or {}).get(region)
    if per_gb is not None:
        note = f"plus ${float(per_gb):.3f} per GB it carries ({carries})"
    return BillLine(
        item,
        count,
        float(usd),
        why,
        str(entry["as_of"]),
        " ".join(str(entry["source"]).split()),
        note,
    )
