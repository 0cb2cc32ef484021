"""The links' floor: the least time a distribution wave can take on shaped links.

Every node's link is shaped in both directions (model/links.py): what a node
sends passes one token bucket at the link's rate, what it receives another.  A
wave moves one copy of the blob along each tree edge between its targets and
the ranks that already hold it: rank 0, and in a later wave of the same
distribution every rank an earlier wave reached (a wave to the leaves reaches
the relays above them, and they keep what passed through them).  So

- each reached rank's link carries out one copy per reached child, and in one
  copy (every rank but 0, which holds the blob);
- rank 0's link runs at `--root-link-bandwidth` where one is given;
- in a two-level network each group's uplink carries out one copy per edge
  from a rank of the group to a rank outside it, and in one per edge the other
  way, at `--group-link-bandwidth`;
- `direct` has no tree: rank 0 sends each target its own copy.

The floor is the busiest (link, direction) at its rate: copies x the bytes
that move / rate.  No protocol beats it.  Only distinct bytes move: a
deduplicated blob (zeros, formats/blobs.py) is one chunk, so its floor is taken
as none.  Latency is not counted (a lower bound needs no more).

A measured time is faster than its floor (`LinkFloor.beaten_by`) only beyond
what the measurement allows: tbf's bucket lets up to `burst_bytes` pass at
once (64 KiB or 4 ms of the rate, model/links.py), the step's clock reads to the
microsecond but starts its command within `CLOCK_SLACK_S`, and the rate tc
keeps may round by `RATE_SLACK_SHARE`.  Below floor x (1 - RATE_SLACK_SHARE)
- burst / rate - CLOCK_SLACK_S, a time is one the links cannot have carried.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from experiments.formats.blobs import DEDUPLICATED, DEFAULT_BLOB
from experiments.formats.events import STRATEGIES, strategy_events, strategy_of
from experiments.formats.kary_line import step_timings
from experiments.model.links import LinkSettings, burst_bytes
from experiments.model.plan import Cell
from experiments.model.render import strategy_waves
from experiments.model.topology import Tree, build_tree

__all__ = [
    "CLOCK_SLACK_S",
    "RATE_SLACK_SHARE",
    "LinkFloor",
    "LinkLoad",
    "distribution_floors",
    "faster_warning",
    "floor_checks",
    "link_floor",
    "wave_copies",
]

RATE_SLACK_SHARE = 0.02
CLOCK_SLACK_S = 0.01
OUT, IN = "out", "in"


@dataclass(frozen=True)
class LinkLoad:
    """Copies one shaped link carries in one direction during a wave, and its rate (bytes/s)."""

    link: str  # "rank 3" or "group 1 uplink"
    direction: str  # OUT of the node (or group), or IN
    copies: int
    rate: float

    def seconds(self, moved_bytes: int) -> float:
        return self.copies * moved_bytes / self.rate

    def text(self) -> str:
        return (
            f"{self.link} {self.direction}: {self.copies} x blob at {self.rate * 8 / 1e6:g} Mbit/s"
        )


@dataclass(frozen=True)
class LinkFloor:
    """A wave's floor in seconds and the link that sets it (None: no shaped link carries it)."""

    seconds: float
    busiest: LinkLoad | None = None

    @property
    def slack_s(self) -> float:
        """How far below the floor a measured time may fall before it is beaten (module doc)."""
        if self.busiest is None:
            return 0.0
        bucket = burst_bytes(self.busiest.rate) / self.busiest.rate
        return RATE_SLACK_SHARE * self.seconds + bucket + CLOCK_SLACK_S

    def beaten_by(self, seconds: float) -> bool:
        """True when `seconds` is faster than the links can carry, beyond the slack."""
        return self.busiest is not None and seconds < self.seconds - self.slack_s

    def record(self) -> dict[str, Any]:
        return {
            "floor_seconds": round(self.seconds, 3),
            "busiest_link": self.busiest.text() if self.busiest else None,
            "slack_seconds": round(self.slack_s, 3),
        }


def wave_copies(
    tree: Tree, targets: Iterable[int], held: Iterable[int] = (0,)
) -> list[tuple[int, int]]:
    """(sender, receiver) of each copy a wave moves: every edge from a target up to the
    nearest rank that holds the blob already."""
    holding = set(held) | {0}
    edges: set[tuple[int, int]] = set()
    for rank in targets:
        while rank not in holding:
            parent = tree.parents[rank]
            edges.add((parent, rank))
            holding.add(rank)
            rank = parent
    return sorted(edges)


def _loads(copies: Iterable[tuple[int, int]], links: LinkSettings) -> Iterator[LinkLoad]:
    out: dict[int, int] = {}
    into: dict[int, int] = {}
    group_out: dict[int, int] = {}
    group_in: dict[int, int] = {}
    for sender, receiver in copies:
        out[sender] = out.get(sender, 0) + 1
        into[receiver] = into.get(receiver, 0) + 1
        a, b = links.group_of(sender), links.group_of(receiver)
        if a is not None and b is not None and a != b:
            group_out[a] = group_out.get(a, 0) + 1
            group_in[b] = group_in.get(b, 0) + 1
    for direction, counts in ((OUT, out), (IN, into)):
        for rank, n in counts.items():
            rate = links.bandwidth_of(rank)
            if rate:
                yield LinkLoad(f"rank {rank}", direction, n, rate)
    if links.group_bandwidth:
        for direction, counts in ((OUT, group_out), (IN, group_in)):
            for group, n in counts.items():
                yield LinkLoad(f"group {group} uplink", direction, n, links.group_bandwidth)


def link_floor(
    copies: Iterable[tuple[int, int]], links: LinkSettings, moved_bytes: int
) -> LinkFloor:
    """The busiest shaped (link, direction) carrying `copies` of `moved_bytes`."""
    if moved_bytes <= 0:
        return LinkFloor(0.0)
    busiest = max(_loads(copies, links), key=lambda load: load.seconds(moved_bytes), default=None)
    return LinkFloor(busiest.seconds(moved_bytes), busiest) if busiest else LinkFloor(0.0)


def _ranks(targets: str, nodes: int) -> list[int]:
    """A wave's targets: `all` (less rank 0, as the template's -x 0) or an idset."""
    if targets == "all":
        return list(range(1, nodes))
    ranks: list[int] = []
    for part in targets.split(","):
        low, _, high = part.partition("-")
        ranks.extend(range(int(low), int(high or low) + 1))
    return ranks


def distribution_floors(
    nodes: int,
    topo: str,
    strategy: str,
    size_bytes: int,
    links: LinkSettings,
    blob: str = DEFAULT_BLOB,
) -> dict[str, LinkFloor]:
    """Each distribution wave's floor, by its event (`distribute-all-nodes`, ...)."""
    tree = build_tree(topo, nodes)
    moved = 0 if blob in DEDUPLICATED else size_bytes
    floors: dict[str, LinkFloor] = {}
    held: set[int] = {0}
    for event, targets in strategy_waves(tree, strategy):
        ranks = _ranks(targets, nodes)
        if strategy == "direct":
            copies = [(0, rank) for rank in ranks]
        else:
            copies = wave_copies(tree, ranks, held)
            held |= {rank for edge in copies for rank in edge}
        floors[event] = link_floor(copies, links, moved)
    return floors


def floor_checks(cell: Cell, links: LinkSettings, log: str) -> list[dict[str, Any]]:
    """Each timed distribution of a cell's log against its floor (void and failed steps
    are no timing and are left out), for run.json; `faster_than_floor` flags a time the
    links cannot have carried."""
    floors: dict[tuple[str, int], dict[str, LinkFloor]] = {}
    checks = []
    for step, why in step_timings(log):
        event, size = str(step.get("event")), step.get("size_bytes")
        strategy = strategy_of(event)
        if why is not None or strategy not in STRATEGIES or not isinstance(size, int):
            continue
        if strategy_events(strategy).distribute_wave(event) is None:
            continue
        if (strategy, size) not in floors:
            floors[(strategy, size)] = distribution_floors(
                cell.nodes, cell.topo, strategy, size, links, cell.blob
            )
        floor = floors[(strategy, size)].get(event)
        if floor is None:
            continue
        seconds = float(step["seconds"])
        checks.append(
            {
                "event": event,
                "size": step.get("size"),
                "seconds": round(seconds, 3),
                **floor.record(),
                "faster_than_floor": floor.beaten_by(seconds),
            }
        )
    return checks


def faster_warning(cell_id: str, checks: list[dict[str, Any]]) -> str | None:
    """One warning line for the distributions `floor_checks` flags; None when none is."""
    faster = [c for c in checks if c["faster_than_floor"]]
    if not faster:
        return None
    first, more = faster[0], len(faster) - 1
    return (
        f"kary: warning: {cell_id}: {first['event']} {first['size']} took {first['seconds']:g} s, "
        f"faster than its links' floor of {first['floor_seconds']:g} s ({first['busiest_link']})"
        + (f"; and {more} more distribution(s)" if more else "")
        + ": the links did not carry what was timed (run.json box.faster_than_floor)"
    )
