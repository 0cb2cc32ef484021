"""The lines of an hourly bill: the control plane at its support tier, the workers at
their capacity, and the sum with its other lines (disks, NAT gateways, public IPv4).

prices.py makes them from the catalog; plan_view.py and `kary cluster` show them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from experiments.estimate.network_prices import BillLine
from experiments.estimate.spot_prices import SpotPrice
from experiments.model.cluster_spec import ON_DEMAND, SPOT

__all__ = [
    "EXTENDED",
    "STANDARD",
    "ControlPlanePrice",
    "HourlyPrice",
    "PricedInterval",
    "WorkerPrice",
]

STANDARD = "standard"
EXTENDED = "extended"


@dataclass(frozen=True)
class ControlPlanePrice:
    """A managed control plane's rate: standard support, or extended past its end."""

    provider: str
    kubernetes_version: str | None
    usd_per_hour: float
    standard_usd_per_hour: float
    support: str  # STANDARD or EXTENDED
    why: str  # "" in standard support; else "Kubernetes 1.33 in extended support since ..."
    as_of: str | None = None  # the catalog's date and source for these rates
    source: str | None = None

    def text(self) -> str:
        """`$0.60/h, EKS extended support (Kubernetes 1.33 in extended support since
        2026-07-29; standard support is $0.10/h)`."""
        tier = f"{self.provider.upper()} {self.support} support"
        if self.support == STANDARD:
            version = (
                f" for Kubernetes {self.kubernetes_version}" if self.kubernetes_version else ""
            )
            return f"${self.usd_per_hour:.2f}/h, {tier}{version}"
        return (
            f"${self.usd_per_hour:.2f}/h, {tier} ({self.why}; standard support is "
            f"${self.standard_usd_per_hour:.2f}/h)"
        )


@dataclass(frozen=True)
class WorkerPrice:
    """Nodes of one instance type: how many, at what rate, priced as of when.

    A spot group carries its spot price and the on-demand rate of the same nodes; a
    group of several types is priced at the dearest (`instance_type` names it)."""

    instance_type: str
    count: int
    usd_per_hour_each: float
    as_of: str
    capacity: str = ON_DEMAND
    spot: SpotPrice | None = None
    on_demand_usd_per_hour_each: float | None = None  # a spot group's on-demand rate
    types: tuple[str, ...] = ()  # every type the group may launch, where it has several

    @property
    def usd_per_hour(self) -> float:
        return self.count * self.usd_per_hour_each

    @property
    def usd_per_hour_high(self) -> float:
        """$/h at the high end of a plan's interval: a spot group at its p90."""
        if self.spot is None:
            return self.usd_per_hour
        return self.count * self.spot.high(self.on_demand_usd_per_hour_each or 0.0)

    def text(self) -> str:
        """`30 x c5a.4xlarge at $0.6160/h = $18.48/h`; a spot group says where its price
        came from and what the same nodes cost on demand."""
        spot = " spot" if self.capacity == SPOT else ""
        several = f" (the dearest of {', '.join(self.types)})" if len(self.types) > 1 else ""
        line = (
            f"{self.count} x {self.instance_type}{spot}{several} at "
            f"${self.usd_per_hour_each:.4f}/h = ${self.usd_per_hour:.2f}/h"
        )
        if self.spot is None:
            return line
        on_demand = self.on_demand_usd_per_hour_each or 0.0
        return (
            f"{line} ({self.spot.text(on_demand)}); on demand ${on_demand:.4f}/h = "
            f"${self.count * on_demand:.2f}/h"
        )

    def record(self) -> dict[str, Any]:
        return {
            "instance_type": self.instance_type,
            "count": self.count,
            "capacity": self.capacity,
            "usd_per_hour_each": self.usd_per_hour_each,
            "usd_per_hour": round(self.usd_per_hour, 4),
            "usd_per_hour_high": round(self.usd_per_hour_high, 4),
            "prices_as_of": self.as_of,
            "instance_types": list(self.types) or [self.instance_type],
            "spot": None if self.spot is None else self.spot.record(),
            "on_demand_usd_per_hour_each": self.on_demand_usd_per_hour_each,
        }


@dataclass(frozen=True)
class HourlyPrice:
    """What some nodes bill per hour, how many they are, and how the sum was made."""

    usd_per_hour: float
    nodes_billed: int
    as_of: str | None  # the catalog's date for the (last) instance type priced
    detail: str  # "6 x c5a.4xlarge at $0.6160/h + control plane $0.10/h"
    # The nodes' boot disks, included in usd_per_hour (cluster_hourly_price).
    disk_usd_per_hour: float = 0.0
    disk_detail: str = ""  # "30 x 200 GB pd-balanced at $0.0274/h"
    # The sum's lines: each instance type, and the control plane where one is billed.
    workers: tuple[WorkerPrice, ...] = ()
    control_plane: ControlPlanePrice | None = None
    priced_on: date | None = None  # the day priced (the control plane's tier follows it)
    # The disk prices' catalog date and source.
    disk_as_of: str | None = None
    disk_source: str | None = None
    # NAT gateways and public IPv4 addresses (cluster_hourly_price), in usd_per_hour.
    extras: tuple[BillLine, ...] = ()
    # The same cluster with every group on demand, where some group runs on spot.
    on_demand: HourlyPrice | None = None

    @property
    def usd_per_hour_high(self) -> float:
        """$/h at the high end of a plan's interval: spot groups at their p90."""
        return self.usd_per_hour + sum(w.usd_per_hour_high - w.usd_per_hour for w in self.workers)

    @property
    def spot(self) -> bool:
        return any(w.capacity == SPOT for w in self.workers)


class PricedInterval:
    """Dollars for a span priced by the hour: the low and high ends of its interval.

    Mixed into dataclasses that have `hourly_usd`, `seconds_low` and `seconds_high`, and
    may have a `bill` (HourlyPrice): its spot groups price the high end at their p90, so
    the interval holds the time's spread and the spot price's together (the low end
    keeps the point price: a spot price below it is not counted on)."""

    hourly_usd: float
    seconds_low: float
    seconds_high: float

    @property
    def hourly_usd_high(self) -> float:
        bill: HourlyPrice | None = getattr(self, "bill", None)
        if bill is None:
            return self.hourly_usd
        return self.hourly_usd + bill.usd_per_hour_high - bill.usd_per_hour

    @property
    def cost_usd_low(self) -> float:
        return self.hourly_usd * self.seconds_low / 3600.0

    @property
    def cost_usd_high(self) -> float:
        return self.hourly_usd_high * self.seconds_high / 3600.0
