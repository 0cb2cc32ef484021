"""What spot interruptions cost a plan: the cells they would make kary run again.

EC2 reclaims spot instances; a pod on a reclaimed node takes its cell down, and the
cell runs again (docs/running.md, preempted cells).  The catalog's interruption band
is the AWS Spot Instance Advisor's "frequency of interruption" (clusters/prices.yaml):
the rate at which Spot reclaimed capacity over its trailing month, read here as the
share of instances reclaimed in that month, evenly over its hours (an assumption: the
Advisor gives a band, not a rate per hour).  A cell of n nodes running t hours is then
interrupted with probability 1 - exp(-rate x n x t / MONTH_HOURS), and an interrupted
cell costs its whole time again (at most: it may fall at any point of the cell).  The
point takes the band's middle, the interval its ends.  Google publishes no such rate:
a plan on such a group says the re-runs are not priced.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from experiments.estimate.structure import CellTime

__all__ = ["MONTH_HOURS", "RERUNS_PART", "SpotReruns", "parse_band", "spot_reruns"]

# Its name among a plan's parts: on demand, nothing is reclaimed and it drops out.
RERUNS_PART = "spot re-runs"
MONTH_HOURS = 720.0  # the Advisor's "trailing month", 30 days
_NUMBER = r"\d+(?:\.\d+)?"
_BAND = re.compile(rf"^\s*(?:(?P<low>{_NUMBER})\s*-\s*)?(?P<lt><)?\s*(?P<high>{_NUMBER})\s*%\s*$")


def parse_band(band: str) -> tuple[float, float] | None:
    """`5-10%` -> (0.05, 0.10); `<5%` -> (0, 0.05); None when it is not a band."""
    match = _BAND.match(band)
    if match is None:
        return None
    high = float(match["high"]) / 100
    low = 0.0 if match["lt"] else float(match["low"] or match["high"]) / 100
    return (low, high) if low <= high else None


@dataclass(frozen=True)
class SpotReruns:
    """Seconds of cells run again after interruptions: point, low and high."""

    band: str
    seconds: float
    seconds_low: float
    seconds_high: float

    def text(self, hourly_usd: float) -> str:
        """The bill's line: what it assumes and what it adds."""
        cost = hourly_usd * self.seconds / 3600
        low, high = (hourly_usd * s / 3600 for s in (self.seconds_low, self.seconds_high))
        return (
            f"{self.band} of instances reclaimed a month (the Spot Instance Advisor's band, "
            "taken evenly over its 720 hours); a cell breaks if any of its nodes goes and "
            f"runs again: {self.seconds:.0f} s ({self.seconds_low:.0f}-{self.seconds_high:.0f} s)"
            f" of cells re-run = ${cost:.2f} (${low:.2f} - ${high:.2f}), in the time and cost"
        )

    def record(self) -> dict[str, object]:
        return {
            "interruption": self.band,
            "seconds": round(self.seconds, 1),
            "seconds_low": round(self.seconds_low, 1),
            "seconds_high": round(self.seconds_high, 1),
        }


def _rerun_seconds(cells: Sequence[CellTime], rate: float) -> float:
    total = 0.0
    for cell in cells:
        hours = cell.seconds / 3600
        interrupted = 1 - math.exp(-rate * cell.cell.nodes * hours / MONTH_HOURS)
        total += interrupted * cell.seconds
    return total


def spot_reruns(cells: Sequence[CellTime], band: str | None) -> SpotReruns | None:
    """The re-runs an interruption band costs `cells`; None without a band to read."""
    rates = parse_band(band) if band else None
    if band is None or rates is None:
        return None
    low, high = rates
    return SpotReruns(
        band=band.strip(),
        seconds=_rerun_seconds(cells, (low + high) / 2),
        seconds_low=_rerun_seconds(cells, low),
        seconds_high=_rerun_seconds(cells, high),
    )
