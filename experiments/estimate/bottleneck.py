"""Does a box cell measure its links or this machine's cores?

In a box every broker still shares this machine's cores.  Per GB and per
receiving rank, flux-core spends `shared_cpu_s_per_gb` of CPU that no other
rank can overlap (the test-instance default: 5 s/GB per rank, fitted on a
2-core machine; see defaults._flux_time_model).  The links set a floor of
their own: the busiest shaped link, in either direction, at its rate
(link_floor.py: each rank's copies out and in, rank 0's own rate, a group's
uplink).
Where the CPU's share comes near the links' floor, a distribution's time says
as much about the cores as about the network, and topologies that differ only
in their links cannot be told apart.  Then kary says so, before the run and in
each cell's run.json.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from experiments.estimate.defaults import default_time_model
from experiments.estimate.link_floor import LinkFloor, distribution_floors
from experiments.estimate.parameters import GIB, TimeModel
from experiments.formats.blobs import DEFAULT_BLOB
from experiments.formats.events import strategy_events
from experiments.formats.run_record import BOX
from experiments.model.links import LinkSettings
from experiments.model.plan import Cell

__all__ = ["CPU_BOUND_SHARE", "Bottleneck", "bottleneck", "box_bottlenecks"]

# CPU at half the links' floor or more: the cores shape the result.
CPU_BOUND_SHARE = 0.5
# The distribution whose floor says whether a cell is CPU-bound: every rank but 0.
_EVERY_RANK = "all"


@dataclass(frozen=True)
class Bottleneck:
    """One distribution of `size_bytes`: the links' floor and the cores' share, in seconds."""

    size_bytes: int
    link_s: float
    cpu_s: float
    floor: LinkFloor | None = None

    @property
    def cpu_bound(self) -> bool:
        return self.link_s == 0 or self.cpu_s >= CPU_BOUND_SHARE * self.link_s

    def record(self, basis: str) -> dict[str, object]:
        """For run.json."""
        return {
            "size_bytes": self.size_bytes,
            "link_floor_seconds": round(self.link_s, 3),
            "busiest_link": self.floor.busiest.text()
            if self.floor and self.floor.busiest
            else None,
            "cpu_seconds": round(self.cpu_s, 3),
            "cpu_bound": self.cpu_bound,
            "rule": f"cpu_bound when cpu >= {CPU_BOUND_SHARE:g} x link floor",
            "basis": basis,
        }


def bottleneck(
    nodes: int,
    topo: str,
    size_bytes: int,
    model: TimeModel,
    links: LinkSettings,
    blob: str = DEFAULT_BLOB,
) -> Bottleneck:
    """The links' floor of a distribution to every rank against the cores' share."""
    event = strategy_events(_EVERY_RANK).distribute_event()
    floor = distribution_floors(nodes, topo, _EVERY_RANK, size_bytes, links, blob)[event]
    cpu_s = (nodes - 1) * model.shared_cpu_s_per_gb * size_bytes / GIB
    return Bottleneck(size_bytes, floor.seconds, cpu_s, floor)


def box_bottlenecks(cell: Cell, links: LinkSettings) -> list[dict[str, Any]]:
    """Per size of a box cell: its links' floor against the CPU every rank shares, for
    run.json and the plan's warning."""
    model = default_time_model("flux", place=BOX)
    return [
        bottleneck(cell.nodes, cell.topo, size, model, links, cell.blob).record(model.source)
        for size in cell.sizes
    ]
