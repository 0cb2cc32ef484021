"""Spot prices in the catalog (clusters/prices.yaml's `spot:` section) and how one is read.

A spot price moves: the catalog keeps, per region and instance type, one entry per
zone (what `kary prices refresh --spot` writes from EC2's price history: a
time-weighted median and 90th percentile over a window) or one for the whole
region (`region:`, a figure that averages its zones, as the Spot Instance Advisor
and Google's Spot VM page give).  Each entry says what its point figure is, over
which window, as of when and from where, and the interruption band where known:

    spot:
      us-east-2:
        c5a.4xlarge:
          us-east-2b: {usd_per_hour: 0.30, p90_usd_per_hour: 0.31, point: median,
                       window: 30 days, as_of: "2026-11-20", source: ..., interruption: 5-10%}
          region: {...}

A plan prices a spot node at the point figure and the high end of its interval at
the p90; an entry without one takes the on-demand price there, which a spot
instance never passes (EC2's default maximum price for a spot request is the
on-demand price; Google's Spot VMs are always discounted from it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.errors import UserError

__all__ = ["REGION_WIDE", "SpotPrice", "check_spot_section", "find_spot_price"]

# The key of an entry that holds for every zone of its region.
REGION_WIDE = "region"
_NEEDED = ("usd_per_hour", "as_of", "source")


@dataclass(frozen=True)
class SpotPrice:
    """One spot price from the catalog: its point figure, its high end, and provenance."""

    instance_type: str
    where: str  # a zone, or "us-east-2 (region-wide)"
    usd_per_hour: float
    p90_usd_per_hour: float | None
    point: str  # what usd_per_hour is: "median", "mean", "list price"
    window: str | None  # "30 days": the span the figures summarise
    as_of: str
    source: str
    interruption: str | None  # the Spot Instance Advisor's band ("5-10%"), where known

    def high(self, on_demand_usd: float) -> float:
        """$/h at the high end of a plan's interval: the p90, else the on-demand price."""
        return self.p90_usd_per_hour if self.p90_usd_per_hour is not None else on_demand_usd

    def text(self, on_demand_usd: float) -> str:
        """`us-east-2b median of 30 days to 2026-11-20; p90 $0.3100/h, interruptions 5-10%`."""
        window = f" of {self.window}" if self.window else ""
        when = f" to {self.as_of}" if self.window else f", as of {self.as_of}"
        spread = (
            f"p90 ${self.p90_usd_per_hour:.4f}/h"
            if self.p90_usd_per_hour is not None
            else f"no p90 in the catalog: the high end takes on-demand ${on_demand_usd:.4f}/h"
        )
        band = f", interruptions {self.interruption}" if self.interruption else ""
        return f"{self.where} {self.point}{window}{when}; {spread}{band}"

    def record(self) -> dict[str, Any]:
        return {
            "where": self.where,
            "usd_per_hour": self.usd_per_hour,
            "p90_usd_per_hour": self.p90_usd_per_hour,
            "point": self.point,
            "window": self.window,
            "as_of": self.as_of,
            "source": self.source,
            "interruption": self.interruption,
        }


def check_spot_section(raw: Any, path: Path) -> dict[str, Any]:
    """The catalog's spot section, checked here so a bad entry is one line, not later."""
    if raw is None:
        return {}
    try:
        for region, types in raw.items():
            for instance_type, entries in types.items():
                for where, entry in entries.items():
                    _check_entry(entry, f"spot.{region}.{instance_type}.{where}")
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        raise UserError(
            f"price catalog {path}: spot needs {{region: {{instance type: {{zone or "
            f"'{REGION_WIDE}': {{usd_per_hour, as_of, source, ...}}}}}}}} ({err})"
        ) from None
    return dict(raw)


def _check_entry(entry: Any, where: str) -> None:
    missing = [key for key in _NEEDED if entry.get(key) in (None, "")]
    if missing:
        raise ValueError(f"{where} lacks {', '.join(missing)}")
    for key in ("usd_per_hour", "p90_usd_per_hour"):
        usd = entry.get(key)
        if usd is not None and (isinstance(usd, bool) or float(usd) <= 0):
            raise ValueError(f"{where}.{key} {usd!r} is not a price")


def find_spot_price(
    section: dict[str, Any],
    region: str,
    zones: Iterable[str | None],
    instance_type: str,
    path: Path,
) -> SpotPrice:
    """The dearest spot price of `instance_type` over `zones` in `region` (a zone's own
    entry, else the region-wide one), or a UserError naming how to add one."""
    entries = (section.get(region) or {}).get(instance_type) or {}
    found = []
    for zone in zones:
        if zone is not None and zone in entries:
            found.append(_spot_price(instance_type, zone, entries[zone]))
        elif REGION_WIDE in entries:
            found.append(
                _spot_price(instance_type, f"{region} (region-wide)", entries[REGION_WIDE])
            )
        else:
            where = zone or region
            raise UserError(
                f"no spot price for {instance_type} in {where} in {path}: run `kary prices "
                f"refresh --spot --region {region} --instance-type {instance_type}` (AWS), "
                f"or add spot.{region}.{instance_type}.{REGION_WIDE} by hand with its source"
            )
    return max(found, key=lambda price: (price.usd_per_hour, price.high(0.0)))


def _spot_price(instance_type: str, where: str, entry: dict[str, Any]) -> SpotPrice:
    p90 = entry.get("p90_usd_per_hour")
    return SpotPrice(
        instance_type=instance_type,
        where=where,
        usd_per_hour=float(entry["usd_per_hour"]),
        p90_usd_per_hour=None if p90 is None else float(p90),
        point=str(entry.get("point") or "median"),
        window=str(entry["window"]) if entry.get("window") else None,
        as_of=str(entry["as_of"]),
        source=" ".join(str(entry["source"]).split()),
        interruption=str(entry["interruption"]) if entry.get("interruption") else None,
    )
