"""The price catalog (clusters/prices.yaml) and what nodes bill per hour.

`hourly_price` is the one sum of instance prices x counts (+ the provider's
control plane, at the extended-support rate once the cluster's Kubernetes
version is past its end of standard support in the catalog's calendar): the
report's cost of a finished sweep uses it.  `cluster_hourly_price` is a cluster
file's whole bill, line by line, for the plan's estimate and `kary cluster` (up's
confirmation, status): each group at the capacity it runs on (a spot group at the
catalog's dated spot price, spot_prices.py, with the same cluster on demand
beside it), the control plane, each node's boot disk (billed per GB-month while
the node exists), and the NAT gateways and public IPv4 addresses its VPC bills
(network_prices.py).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from experiments.errors import UserError
from experiments.estimate.bill import (
    EXTENDED,
    STANDARD,
    ControlPlanePrice,
    HourlyPrice,
    PricedInterval,
    WorkerPrice,
)
from experiments.estimate.network_prices import check_network_section, network_lines
from experiments.estimate.spot_prices import SpotPrice, check_spot_section, find_spot_price
from experiments.files import read_document
from experiments.model.cluster_spec import ON_DEMAND, SPOT, ClusterSpec, NodeGroup

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
    "pricing_day",
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
    # provider -> {as_of, source} of its standard control plane rate
    control_plane_source: dict[str, dict[str, Any]] = {}
    # region -> {disk type: USD per GB-month}, with the section's as_of and source
    disk_usd_per_gb_month: dict[str, Any] = {}
    # region -> instance type -> zone or "region" -> a dated spot price (spot_prices.py)
    spot: dict[str, Any] = {}
    # nat_gateway / public_ipv4 -> {as_of, source, regions: {region: USD per hour}}
    network_usd_per_hour: dict[str, Any] = {}

    def spot_price(self, region: str, zones: Sequence[str | None], instance_type: str) -> SpotPrice:
        """The dearest dated spot price of `instance_type` over `zones`, or a UserError."""
        return find_spot_price(self.spot, region, zones, instance_type, self.path)

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
        its support tier and why, and the standard rate beside it, with their sources."""
        standard = float(
            self.control_plane_usd_per_hour.get(provider, DEFAULT_CONTROL_PLANE_USD_PER_HOUR)
        )
        dated = self.control_plane_source.get(provider) or {}
        in_standard = ControlPlanePrice(
            provider,
            version,
            standard,
            standard,
            STANDARD,
            "",
            _text(dated.get("as_of")),
            _text(dated.get("source")),
        )
        calendar = self.kubernetes_support.get(provider)
        if version is None or not calendar:
            return in_standard
        extended = float(calendar["extended_usd_per_hour"])
        ends = {str(v): _day(d) for v, d in (calendar.get("standard_support_ends") or {}).items()}
        if version in ends and on <= ends[version]:
            return in_standard
        newest = max((_version_key(v) for v in ends), default=None)
        if version in ends:
            why = f"Kubernetes {version} in extended support since {ends[version]}"
        elif newest is None or _version_key(version) > newest:
            # Not in the calendar: newer than every listed version is still in standard support.
            return in_standard
        else:
            why = (
                f"Kubernetes {version} is older than {self.path}'s support calendar "
                f"({calendar.get('as_of', 'undated')}): extended support assumed"
            )
        return replace(
            in_standard,
            usd_per_hour=extended,
            support=EXTENDED,
            why=why,
            as_of=_text(calendar.get("as_of")),
            source=_text(calendar.get("source")),
        )

    def refresh_hint(self, region: str | None, instance_type: str, spot: bool = False) -> str:
        """How to bring `instance_type`'s (spot) price in `region` up to date."""
        entry = self.regions.get(region or "") or {}
        if region is not None and entry.get("provider") == "aws":
            flag = " --spot" if spot else ""
            return f"`kary prices refresh{flag} --region {region} --instance-type {instance_type}`"
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
        control_plane_source=raw.get("control_plane_source") or {},
        disk_usd_per_gb_month=_disk_prices(raw.get("disk_usd_per_gb_month"), Path(path)),
        spot=check_spot_section(raw.get("spot"), Path(path)),
        network_usd_per_hour=check_network_section(raw.get("network_usd_per_hour"), Path(path)),
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


def _text(value: Any) -> str | None:
    """A catalog's folded text on one line; None for none."""
    return " ".join(str(value).split()) if value else None


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


def pricing_day() -> date:
    """The day a plan is priced on: today (UTC), or SOURCE_DATE_EPOCH's day when set.

    SOURCE_DATE_EPOCH is the reproducible-builds convention for "now" in an output
    that must come out the same tomorrow: a committed figure of a plan sets it, so
    the catalog's age and the control plane's support tier are those of its day.
    """
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch is None or epoch == "":
        return datetime.now(timezone.utc).date()
    try:
        return datetime.fromtimestamp(int(epoch), timezone.utc).date()
    except (ValueError, OverflowError, OSError):
        raise UserError(
            f"SOURCE_DATE_EPOCH={epoch!r} is not a Unix time in seconds (e.g. 1795651200)"
        ) from None


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
    day = on or pricing_day()
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
    cluster: ClusterSpec,
    catalog: PriceCatalog,
    on: date | None = None,
    capacity: str | None = None,
) -> HourlyPrice:
    """What the cluster bills per hour on day `on` (default today): each node group at
    its capacity (or every one at `capacity`), the control plane, each node's boot disk
    (the cluster file's, else the provider's default), NAT gateways and public IPv4.
    Where a group runs on spot, `on_demand` is the same cluster on demand."""
    day = on or pricing_day()
    workers = tuple(
        _group_price(catalog, cluster, group, capacity or group.capacity)
        for group in cluster.node_groups
    )
    control = catalog.control_plane(cluster.provider, cluster.kubernetes_version, day)
    disk_usd, disks = 0.0, []
    for group in cluster.node_groups:
        disk = cluster.disk_of(group.disk)
        per_node = disk.gb * catalog.disk_price(cluster.region, disk.type) / HOURS_PER_MONTH
        disk_usd += per_node * group.count
        disks.append(f"{group.count} x {disk.gb} GiB {disk.type} at ${per_node:.4f}/h")
    extras = tuple(network_lines(cluster, catalog.network_usd_per_hour, capacity))
    parts = [
        f"{w.count} x {w.instance_type}{' spot' if w.capacity == SPOT else ''}"
        f" at ${w.usd_per_hour_each:.4f}/h"
        for w in workers
    ]
    parts.append(
        f"control plane ${control.usd_per_hour:.2f}/h"
        + (f" ({control.why})" if control.why else "")
    )
    parts.append(f"disks {' + '.join(disks)}")
    parts += [
        f"{line.name} {line.count} x ${line.usd_per_hour_each:.4f}/h"
        for line in extras
        if line.usd_per_hour_each is not None
    ]
    total = (
        sum(w.usd_per_hour for w in workers)
        + control.usd_per_hour
        + disk_usd
        + sum(line.usd_per_hour for line in extras)
    )
    price = HourlyPrice(
        total,
        sum(w.count for w in workers),
        workers[-1].as_of if workers else None,
        " + ".join(parts),
        disk_usd_per_hour=disk_usd,
        disk_detail=" + ".join(disks),
        workers=workers,
        control_plane=control,
        priced_on=day,
        disk_as_of=_text(catalog.disk_usd_per_gb_month.get("as_of")),
        disk_source=_text(catalog.disk_usd_per_gb_month.get("source")),
        extras=extras,
    )
    if capacity is None and price.spot:
        return replace(price, on_demand=cluster_hourly_price(cluster, catalog, day, ON_DEMAND))
    return price


def _group_price(
    catalog: PriceCatalog, cluster: ClusterSpec, group: NodeGroup, capacity: str
) -> WorkerPrice:
    """One node group's rate: the dearest of its types, on demand or at its spot price."""
    on_demand = max(
        ((catalog.instance_price(cluster.region, t), t) for t in group.types),
        key=lambda found: found[0][0],
    )
    (usd, as_of), dearest = on_demand
    types = group.types if len(group.types) > 1 else ()
    if capacity != SPOT:
        return WorkerPrice(dearest, group.count, usd, as_of, types=types)
    zones = group.zones or (cluster.zone,)
    spot = max(
        (catalog.spot_price(cluster.region, zones, t) for t in group.types),
        key=lambda price: price.usd_per_hour,
    )
    return WorkerPrice(
        spot.instance_type,
        group.count,
        spot.usd_per_hour,
        spot.as_of,
        capacity=SPOT,
        spot=spot,
        on_demand_usd_per_hour_each=catalog.instance_price(cluster.region, spot.instance_type)[0],
        types=types,
    )


def price_age_days(as_of: str | None, on: date) -> int | None:
    """Days from the catalog's `as_of` date to `on`; None when it has no date."""
    try:
        return (on - date.fromisoformat(str(as_of))).days
    except ValueError:
        return None


def stale_prices_line(price: HourlyPrice, catalog: PriceCatalog, region: str | None) -> str | None:
    """A warning when `price`'s instance prices (on demand, and spot where a group runs on
    it, with the on-demand rate shown beside) are older than STALE_AFTER_DAYS on the day
    priced (or undated), saying how to refresh them; None when they are recent."""
    if not price.workers or price.priced_on is None:
        return None
    dated = [(w.instance_type, w.as_of, w.spot is not None) for w in price.workers]
    if price.on_demand is not None:
        dated += [(w.instance_type, w.as_of, False) for w in price.on_demand.workers]
    stale = []
    for instance_type, as_of, spot in dict.fromkeys(dated):
        age = price_age_days(as_of, price.priced_on)
        if age is None or age > STALE_AFTER_DAYS:
            stale.append((instance_type, as_of, spot, age))
    if not stale:
        return None
    what = ", ".join(
        f"the {instance_type}{' spot' if spot else ''} price is "
        + (f"from {as_of}, {age} days old" if age is not None else "undated")
        for instance_type, as_of, spot, age in stale
    )
    hints = list(dict.fromkeys(catalog.refresh_hint(region, t, spot) for t, _, spot, _ in stale))
    # A command updates the price; a catalog kary cannot refresh is updated by hand,
    # which its hint already says.
    commands = [hint for hint in hints if hint.startswith("`")]
    by_hand = [hint for hint in hints if not hint.startswith("`")]
    said = []
    if commands:
        one = len(commands) == 1
        said.append(f"{' and '.join(commands)} {'updates it' if one else 'update them'}")
    does = "; ".join(said + by_hand)
    return f"warning: {what} (more than {STALE_AFTER_DAYS}): the bill may be off; {does}"
