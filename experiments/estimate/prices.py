"""The price catalog (clusters/prices.yaml) and what nodes bill per hour.

`hourly_price` is the one sum of instance prices x counts (+ the provider's
control plane, at the extended-support rate once the cluster's Kubernetes
version is past its end of standard support in the catalog's calendar): the
plan's estimate, `kary cluster` (up's confirmation, status,
the cost lines of a plan) and the report's cost of a finished sweep all use it,
so they cannot disagree about what the same nodes cost.  `cluster_hourly_price`
adds each node's boot disk, billed per GB-month while the node exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from experiments.errors import UserError
from experiments.files import read_document
from experiments.model.cluster_spec import ClusterSpec

__all__ = [
    "DEFAULT_CONTROL_PLANE_USD_PER_HOUR",
    "EXTENDED",
    "HOURS_PER_MONTH",
    "STALE_AFTER_DAYS",
    "STANDARD",
    "ControlPlanePrice",
    "HourlyPrice",
    "PriceCatalog",
    "PricedInterval",
    "WorkerPrice",
    "cluster_hourly_price",
    "hourly_price",
    "load_price_catalog",
    "price_age_days",
    "stale_prices_line",
]

# A provider the catalog does not list is charged what EKS and GKE charge.
DEFAULT_CONTROL_PLANE_USD_PER_HOUR = 0.10
# A month of a disk's GB-month price: both AWS's and Google's calculators count 730 h.
HOURS_PER_MONTH = 730.0
# Instance prices older than this are warned of: list prices change a few times a
# year (AWS's and Google's price cuts, new generations), and a catalog entered by
# hand is easy to forget.
STALE_AFTER_DAYS = 90


class PriceCatalog(BaseModel):
    path: Path
    control_plane_usd_per_hour: dict[str, float]
    network_gbps: dict[str, float]
    regions: dict[str, dict[str, Any]]
    # provider -> {as_of, source, extended_usd_per_hour, standard_support_ends: {ver: date}}
    kubernetes_support: dict[str, dict[str, Any]] = {}
    # region -> {disk type: USD per GB-month}, with the section's as_of and source
    disk_usd_per_gb_month: dict[str, Any] = {}

    def disk_price(self, region: str, disk_type: str) -> float:
        """USD per GB-month of a `disk_type` boot disk in `region`, or a UserError."""
        prices = (self.disk_usd_per_gb_month.get("regions") or {}).get(region) or {}
        if disk_type not in prices:
            raise UserError(
                f"no price for {disk_type} disks in {region} in {self.path}: add it under "
                f"disk_usd_per_gb_month.regions.{region} (USD per GB-month)"
            )
        return float(prices[disk_type])

    def control_plane_price(
        self, provider: str, version: str | None, on: date
    ) -> tuple[float, str]:
        """($/h, why) for `provider`'s control plane running Kubernetes `version` on day `on`."""
        price = self.control_plane(provider, version, on)
        return price.usd_per_hour, price.why

    def control_plane(self, provider: str, version: str | None, on: date) -> ControlPlanePrice:
        """`provider`'s control plane running Kubernetes `version` on day `on`: its rate,
        its support tier and why, and the standard rate beside it."""
        standard = float(
            self.control_plane_usd_per_hour.get(provider, DEFAULT_CONTROL_PLANE_USD_PER_HOUR)
        )
        in_standard = ControlPlanePrice(provider, version, standard, standard, STANDARD, "")
        calendar = self.kubernetes_support.get(provider)
        if version is None or not calendar:
            return in_standard
        extended = float(calendar["extended_usd_per_hour"])
        ends = {str(v): _day(d) for v, d in (calendar.get("standard_support_ends") or {}).items()}
        if version in ends:
            if on <= ends[version]:
                return in_standard
            why = f"Kubernetes {version} in extended support since {ends[version]}"
            return ControlPlanePrice(provider, version, extended, standard, EXTENDED, why)
        # Not in the calendar: newer than every listed version is still in standard support.
        newest = max((_version_key(v) for v in ends), default=None)
        if newest is None or _version_key(version) > newest:
            return in_standard
        why = (
            f"Kubernetes {version} is older than {self.path}'s support calendar "
            f"({calendar.get('as_of', 'undated')}): extended support assumed"
        )
        return ControlPlanePrice(provider, version, extended, standard, EXTENDED, why)

    def refresh_hint(self, region: str | None, instance_type: str) -> str:
        """How to bring `instance_type`'s price in `region` up to date."""
        entry = self.regions.get(region or "") or {}
        if region is not None and entry.get("provider") == "aws":
            return f"`kary prices refresh --region {region} --instance-type {instance_type}`"
        return f"update {self.path} by hand (kary refreshes AWS prices only)"

    def instance_price(self, region: str, instance_type: str) -> tuple[float, str]:
        """($/h, as-of date) or a UserError naming how to add the price."""
        entry = self.regions.get(region)
        if entry is None or instance_type not in entry.get("usd_per_hour", {}):
            raise UserError(
                f"no price for {instance_type} in {region} in {self.path}; run "
                f"`kary prices refresh --region {region} --instance-type {instance_type}`"
            )
        return float(entry["usd_per_hour"][instance_type]), str(entry.get("as_of", "unknown"))

    def price_anywhere(self, instance_type: str) -> tuple[float, str]:
        """($/h, as-of date) where the region is unknown: the price every region that
        lists the type agrees on, or a UserError when none lists it or they differ."""
        found = {
            (float(entry["usd_per_hour"][instance_type]), str(entry.get("as_of", "unknown")))
            for entry in self.regions.values()
            if isinstance(entry, dict) and instance_type in entry.get("usd_per_hour", {})
        }
        prices = {usd for usd, _ in found}
        if len(prices) != 1:
            why = "no region lists it" if not prices else "its regions' prices differ"
            raise UserError(f"no single price for {instance_type} in {self.path}: {why}")
        return max(found, key=lambda price: price[1])


def load_price_catalog(path: Path | None = None) -> PriceCatalog:
    if path is None:
        from experiments.resources import resource_path

        path = resource_path("clusters", "prices.yaml")
    raw = read_document(Path(path), "price catalog", "yaml")
    if not isinstance(raw, dict) or not isinstance(raw.get("regions"), dict):
        raise UserError(f"price catalog {path}: expected a mapping with 'regions'")
    return PriceCatalog(
        path=Path(path),
        control_plane_usd_per_hour=raw.get("control_plane_usd_per_hour", {}),
        network_gbps=raw.get("network_gbps", {}),
        regions=raw["regions"],
        kubernetes_support=_support_calendar(raw.get("kubernetes_support"), Path(path)),
        disk_usd_per_gb_month=_disk_prices(raw.get("disk_usd_per_gb_month"), Path(path)),
    )


def _disk_prices(raw: Any, path: Path) -> dict[str, Any]:
    """The catalog's disk prices, checked here so a bad one is one line, not later."""
    if raw is None:
        return {}
    try:
        for prices in raw["regions"].values():
            for usd in prices.values():
                if isinstance(usd, bool) or float(usd) < 0:
                    raise ValueError(usd)
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        raise UserError(
            f"price catalog {path}: disk_usd_per_gb_month needs regions: {{region: "
            f"{{disk type: USD per GB-month}}}} ({err!r})"
        ) from None
    return dict(raw)


def _day(value: Any) -> date:
    return value if isinstance(value, date) else date.fromisoformat(str(value))


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def _support_calendar(raw: Any, path: Path) -> dict[str, dict[str, Any]]:
    """The catalog's kubernetes_support, checked here so a bad date is one line, not later."""
    if raw is None:
        return {}
    try:
        for entry in raw.values():
            float(entry["extended_usd_per_hour"])
            for version, day in (entry.get("standard_support_ends") or {}).items():
                _day(day)
                _version_key(str(version))
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        raise UserError(
            f"price catalog {path}: kubernetes_support needs, per provider, "
            f"extended_usd_per_hour and standard_support_ends {{version: YYYY-MM-DD}} ({err})"
        ) from None
    return dict(raw)


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
    """Nodes of one instance type: how many, at what rate, priced as of when."""

    instance_type: str
    count: int
    usd_per_hour_each: float
    as_of: str

    @property
    def usd_per_hour(self) -> float:
        return self.count * self.usd_per_hour_each

    def text(self) -> str:
        return (
            f"{self.count} x {self.instance_type} at ${self.usd_per_hour_each:.4f}/h"
            f" = ${self.usd_per_hour:.2f}/h"
        )


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


def hourly_price(
    catalog: PriceCatalog,
    nodes: Sequence[tuple[str, int]],
    region: str | None,
    provider: str | None = None,
    kubernetes_version: str | None = None,
    on: date | None = None,
) -> HourlyPrice:
    """$/h of `nodes`, (instance type, count) pairs, in `region`, plus the
    `provider`'s control plane when one is named: for Kubernetes
    `kubernetes_version` on day `on` (default today, UTC).

    region None prices each type where the region is unknown (see
    PriceCatalog.price_anywhere).  An unknown price is a UserError.
    """
    total, billed, as_of, parts, workers = 0.0, 0, None, [], []
    for instance_type, count in nodes:
        if region is None:
            price, as_of = catalog.price_anywhere(instance_type)
        else:
            price, as_of = catalog.instance_price(region, instance_type)
        total += price * count
        billed += count
        parts.append(f"{count} x {instance_type} at ${price:.4f}/h")
        workers.append(WorkerPrice(instance_type, count, price, as_of))
    day = on or datetime.now(timezone.utc).date()
    control = None
    if provider is not None:
        control = catalog.control_plane(provider, kubernetes_version, day)
        total += control.usd_per_hour
        parts.append(
            f"control plane ${control.usd_per_hour:.2f}/h"
            + (f" ({control.why})" if control.why else "")
        )
    return HourlyPrice(
        total,
        billed,
        as_of,
        " + ".join(parts),
        workers=tuple(workers),
        control_plane=control,
        priced_on=day,
    )


def cluster_hourly_price(
    cluster: ClusterSpec, catalog: PriceCatalog, on: date | None = None
) -> HourlyPrice:
    """What the cluster bills per hour on day `on` (default today): node groups, control
    plane, and each node's boot disk (the cluster file's, else the provider's default)."""
    groups = [(group.instance_type, group.count) for group in cluster.node_groups]
    price = hourly_price(
        catalog, groups, cluster.region, cluster.provider, cluster.kubernetes_version, on
    )
    disk_usd, parts = 0.0, []
    for group in cluster.node_groups:
        disk = cluster.disk_of(group.disk)
        per_node = disk.gb * catalog.disk_price(cluster.region, disk.type) / HOURS_PER_MONTH
        disk_usd += per_node * group.count
        parts.append(f"{group.count} x {disk.gb} GB {disk.type} at ${per_node:.4f}/h")
    detail = " + ".join(parts)
    return replace(
        price,
        usd_per_hour=price.usd_per_hour + disk_usd,
        detail=f"{price.detail} + disks {detail}",
        disk_usd_per_hour=disk_usd,
        disk_detail=detail,
    )


class PricedInterval:
    """Dollars for a span priced by the hour: the low and high ends of its interval.

    Mixed into dataclasses that have `hourly_usd`, `seconds_low` and `seconds_high`."""

    hourly_usd: float
    seconds_low: float
    seconds_high: float

    @property
    def cost_usd_low(self) -> float:
        return self.hourly_usd * self.seconds_low / 3600.0

    @property
    def cost_usd_high(self) -> float:
        return self.hourly_usd * self.seconds_high / 3600.0


def price_age_days(as_of: str | None, on: date) -> int | None:
    """Days from the catalog's `as_of` date to `on`; None when it has no date."""
    try:
        return (on - date.fromisoformat(str(as_of))).days
    except ValueError:
        return None


def stale_prices_line(price: HourlyPrice, catalog: PriceCatalog, region: str | None) -> str | None:
    """A warning when `price`'s instance prices are older than STALE_AFTER_DAYS on the day
    priced (or undated), saying how to refresh them; None when they are recent."""
    if not price.workers or price.priced_on is None:
        return None
    oldest = min(price.workers, key=lambda w: w.as_of)
    age = price_age_days(oldest.as_of, price.priced_on)
    if age is not None and age <= STALE_AFTER_DAYS:
        return None
    when = f"from {oldest.as_of}, {age} days old" if age is not None else "undated"
    return (
        f"warning: the {oldest.instance_type} price is {when} "
        f"(more than {STALE_AFTER_DAYS}): the bill may be off; "
        f"{catalog.refresh_hint(region, oldest.instance_type)} updates it"
    )
