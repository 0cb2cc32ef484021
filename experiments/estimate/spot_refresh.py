"""Refresh the catalog's spot prices from EC2's spot price history (`kary prices refresh --spot`).

EC2's DescribeSpotPriceHistory lists, per zone, each time the spot price of an
instance type changed (up to 90 days back; the first record may predate the window:
it is the price in effect when the window opens).  Each price holds until the next
change, so the summary is time-weighted: the median and 90th percentile of the
price over the window, weighted by how long each price held.  The call is
paginated (boto3's paginator follows NextToken), asked for Linux/UNIX only.
GCP publishes no such history without credentials kary does not handle: its spot
prices are entered by hand (clusters/prices.yaml says from where).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from experiments.errors import UserError
from experiments.estimate.price_refresh import aws_call_error, read_catalog, write_catalog
from experiments.estimate.spot_prices import REGION_WIDE

__all__ = [
    "PRODUCT",
    "SpotSummary",
    "fetch_spot_history",
    "refresh_spot_prices",
    "time_weighted_quantile",
]

PRODUCT = "Linux/UNIX"
MAX_DAYS = 90  # how far back EC2 keeps spot price history
SOURCE = (
    "EC2 DescribeSpotPriceHistory (Linux/UNIX), time-weighted median and p90 over the "
    "window (kary prices refresh --spot)"
)

# A zone's price changes in the window: (when it took effect, USD per hour).
History = list[tuple[datetime, float]]
SpotSummary = dict[str, float]


def fetch_spot_history(
    client: Any,
    instance_type: str,
    start: datetime,
    end: datetime,
    zone: str | None = None,
) -> dict[str, History]:
    """Every Linux/UNIX spot price change of `instance_type` from `start` to `end`, per
    zone (only `zone` where given), in time order."""
    args: dict[str, Any] = {
        "InstanceTypes": [instance_type],
        "ProductDescriptions": [PRODUCT],
        "StartTime": start,
        "EndTime": end,
    }
    if zone is not None:
        args["AvailabilityZone"] = zone
    history: dict[str, History] = defaultdict(list)
    with aws_call_error("EC2 DescribeSpotPriceHistory"):
        for page in client.get_paginator("describe_spot_price_history").paginate(**args):
            for record in page.get("SpotPriceHistory", []):
                when = record["Timestamp"]
                when = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
                history[record["AvailabilityZone"]].append((when, float(record["SpotPrice"])))
    return {z: sorted(changes) for z, changes in history.items()}


def time_weighted_quantile(
    changes: Sequence[tuple[datetime, float]], start: datetime, end: datetime, q: float
) -> float:
    """The `q` quantile of the price from `start` to `end`, each price weighted by how long
    it held (from its change to the next, clipped to the window)."""
    spans: list[tuple[float, float]] = []
    for index, (when, price) in enumerate(changes):
        until = changes[index + 1][0] if index + 1 < len(changes) else end
        seconds = (min(until, end) - max(when, start)).total_seconds()
        if seconds > 0:
            spans.append((price, seconds))
    if not spans:
        raise ValueError("no price held inside the window")
    spans.sort()
    total = sum(seconds for _, seconds in spans)
    held = 0.0
    for price, seconds in spans:
        held += seconds
        if held >= q * total:
            return price
    return spans[-1][0]


def refresh_spot_prices(
    catalog_path: Path,
    region: str,
    instance_types: Iterable[str],
    zones: Sequence[str] = (),
    days: int = 30,
    client: Any = None,
    now: datetime | None = None,
) -> dict[tuple[str, str], SpotSummary]:
    """Write each zone's median and p90 (of `zones`, else every zone EC2 lists) for each
    of `instance_types` into the catalog's spot section; returns what was written."""
    if not 1 <= days <= MAX_DAYS:
        raise UserError(f"invalid --days {days}: EC2 keeps 1 to {MAX_DAYS} days of spot prices")
    text, catalog = read_catalog(catalog_path)
    provider = (catalog.get("regions", {}).get(region) or {}).get("provider")
    if provider not in (None, "aws"):
        raise UserError(
            f"{region} is a {provider} region: kary refreshes AWS spot prices only (from EC2's "
            f"price history); enter {provider}'s by hand under spot.{region} with their source"
        )
    types = list(instance_types)
    if not types:
        types = sorted((catalog.get("spot") or {}).get(region) or {})
        if not types:
            raise UserError(f"no spot prices known for {region}: pass --instance-type")
    if client is None:
        import boto3

        client = boto3.client("ec2", region_name=region)
    end = (now or datetime.now(timezone.utc)).replace(microsecond=0)
    start = end - timedelta(days=days)
    written: dict[tuple[str, str], SpotSummary] = {}
    section = catalog.setdefault("spot", {}).setdefault(region, {})
    for instance_type in types:
        history: dict[str, History] = {}
        asked: list[str | None] = list(zones) or [None]
        for zone in asked:
            history.update(fetch_spot_history(client, instance_type, start, end, zone))
        if not history:
            where = ", ".join(zones) if zones else region
            raise UserError(
                f"EC2 has no {PRODUCT} spot price for {instance_type} in {where} over the last "
                f"{days} days"
            )
        entries = section.setdefault(instance_type, {})
        band = (entries.get(REGION_WIDE) or {}).get("interruption")
        for zone, changes in sorted(history.items()):
            summary = {
                "usd_per_hour": time_weighted_quantile(changes, start, end, 0.5),
                "p90_usd_per_hour": time_weighted_quantile(changes, start, end, 0.9),
            }
            entries[zone] = {
                **summary,
                "point": "median",
                "window": f"{days} days",
                "as_of": end.date().isoformat(),
                # EC2's history has no interruption rate: the region's band, where the
                # catalog holds one (the Spot Instance Advisor's), is kept beside it.
                "interruption": band,
                "source": SOURCE
                + ("; interruption band from the region-wide entry" if band else ""),
            }
            written[(zone, instance_type)] = summary
    write_catalog(catalog_path, text, catalog)
    return written
