"""Time model + prices -> what a plan will cost in seconds and dollars, with an interval.

estimate = hourly(nodes x (instance price + boot disk) + control plane) x
           (provision + image pull + sum over cells of predicted run time + teardown)

The pieces: parameters.py (what the model's numbers are), structure.py (a
cell's steps and how each is priced), defaults.py (stated defaults per
backend), history.py and fit.py (numbers fitted from parsed history), and
interval.py (the 80% interval, assumptions and extrapolation).  This module
puts them together for a plan; plan_estimate.py chooses the models.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from experiments.estimate.coverage import Environment
from experiments.estimate.defaults import (
    PULL_BYTES_PER_S,
    UNKNOWN_IMAGE_BYTES,
    ImagePull,
    default_time_model,
    image_pull,
)
from experiments.estimate.interval import (
    FIXED_PART_SPREAD,
    LEVEL,
    Assumption,
    Candidate,
    Z,
    interval,
    plan_steps,
)
from experiments.estimate.parameters import TimeModel
from experiments.estimate.prices import (
    HourlyPrice,
    PriceCatalog,
    PricedInterval,
    cluster_hourly_price,
    load_price_catalog,
    stale_prices_line,
)
from experiments.estimate.spot_reruns import RERUNS_PART, SpotReruns, spot_reruns
from experiments.estimate.structure import CellTime, predict_cell
from experiments.model.cluster_spec import ClusterSpec
from experiments.model.plan import Cell

__all__ = [
    "PULL_BYTES_PER_S",
    "UNKNOWN_IMAGE_BYTES",
    "Assumption",
    "CellTime",
    "Estimate",
    "ImagePull",
    "TimeModel",
    "default_time_model",
    "estimate_plan",
    "image_pull",
    "predict_cell",
]

# Parts of a plan outside its cells, and what each is a default of.
_FIXED_PARTS = {
    "image pull": "the image's size at flux-distribute's pull rate",
    "provision": "the provider's typical create time",
    "teardown": "the provider's typical delete time",
}


@dataclass(frozen=True)
class Estimate(PricedInterval):
    cells: list[CellTime]
    seconds: float
    parts: dict[str, float]
    hourly_usd: float
    cost_usd: float
    instance_type: str | None
    nodes_billed: int
    price_as_of: str | None
    model: TimeModel
    # The 80% interval, what it takes on trust (with each term's share of the
    # estimate) and where the plan reaches beyond the numbers behind it.
    seconds_low: float = 0.0
    seconds_high: float = 0.0
    assumptions: list[Assumption] = field(default_factory=list)
    extrapolated: list[str] = field(default_factory=list)
    level: float = LEVEL
    sources: list[str] = field(default_factory=list)  # every model the cells are predicted with
    # The nodes' boot disks, a part of hourly_usd: $/h and "30 x 200 GB pd-balanced at ...".
    disk_usd_per_hour: float = 0.0
    disk_detail: str = ""
    # hourly_usd line by line (workers, control plane, disks); None off a cluster file.
    bill: HourlyPrice | None = None
    # A warning when the catalog's instance prices are stale (prices.stale_prices_line).
    price_warning: str | None = None
    # Spot workers: the cells an interruption would run again (in `seconds`, its parts
    # and the interval); None on demand, or where the catalog has no interruption band.
    spot_reruns: SpotReruns | None = None


def estimate_plan(
    to_run: Sequence[Cell],
    model: TimeModel,
    verify: bool,
    candidates: Sequence[Candidate],
    plan_env: Environment,
    cluster: ClusterSpec | None = None,
    catalog: PriceCatalog | None = None,
    provision: bool = False,
    teardown: bool = False,
) -> Estimate:
    """Seconds and dollars for the cells still to run (done cells cost nothing).

    `model` is the plan's own (image pull, provisioning); `candidates` are the
    models its cells are predicted with (interval.choose_candidates).
    """
    spread = interval(plan_steps(to_run, verify), candidates, plan_env)
    parts: dict[str, float] = {}
    for cell_time in spread.cells:
        for key, value in cell_time.parts.items():
            parts[key] = parts.get(key, 0.0) + value
    fixed: dict[str, float] = {}
    if spread.cells:
        fixed["image pull"] = model.image_pull_s
    if provision:
        fixed["provision"] = model.provision_s
    if teardown:
        fixed["teardown"] = model.teardown_s
    parts.update(fixed)
    seconds = sum(parts.values())
    fixed_s = sum(fixed.values())
    low = spread.low + fixed_s * math.exp(-Z * FIXED_PART_SPREAD)
    high = spread.high + fixed_s * math.exp(Z * FIXED_PART_SPREAD)
    assumptions = list(spread.assumptions)
    for name, value in fixed.items():
        if value > 0:
            detail = f"{name} {value:.0f} s: {_FIXED_PARTS[name]}"
            assumptions.append(Assumption(name, detail, value / seconds))
    hourly, as_of, billed, disk_usd, disk_detail = 0.0, None, 0, 0.0, ""
    price, stale, reruns = None, None, None
    if cluster is not None:
        catalog = catalog or load_price_catalog()
        price = cluster_hourly_price(cluster, catalog)
        hourly, as_of, billed = price.usd_per_hour, price.as_of, price.nodes_billed
        disk_usd, disk_detail = price.disk_usd_per_hour, price.disk_detail
        stale = stale_prices_line(price, catalog, cluster.region)
        bands = [w.spot.interruption for w in price.workers if w.spot is not None]
        reruns = spot_reruns(spread.cells, next((b for b in bands if b), None))
        if reruns is not None and reruns.seconds > 0:
            parts[RERUNS_PART] = reruns.seconds
            seconds += reruns.seconds
            low += reruns.seconds_low
            high += reruns.seconds_high
    return Estimate(
        cells=spread.cells,
        seconds=seconds,
        parts=parts,
        hourly_usd=hourly,
        cost_usd=hourly * seconds / 3600.0,
        instance_type=cluster.instance_type if cluster else None,
        nodes_billed=billed,
        price_as_of=as_of,
        model=spread.model.model_copy(
            update={
                "image_pull_s": model.image_pull_s,
                "provision_s": model.provision_s,
                "teardown_s": model.teardown_s,
            }
        ),
        seconds_low=low,
        seconds_high=high,
        assumptions=assumptions,
        extrapolated=spread.extrapolated,
        sources=spread.sources,
        disk_usd_per_hour=disk_usd,
        disk_detail=disk_detail,
        bill=price,
        price_warning=stale,
        spot_reruns=reruns,
    )
