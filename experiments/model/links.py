"""A sweep's links: what each node's link carries, as the flags give them, checked once.

Every node has one link to its switch, shaped in both directions as a NIC and
its switch port are: `bandwidth` (bytes/s) and a one-way `latency` (seconds),
so a byte from rank A to rank B crosses A's link and then B's (2 x latency
between two nodes), and a flat tree's rank 0 pushes every copy through its
own one link.  `root_bandwidth` gives rank 0 a link of its own.

A two-level network (`group_size`, `group_bandwidth`): ranks 0..g-1 are one
group, g..2g-1 the next, and so on; each group's nodes hang off a switch of
their own, whose uplink to the core switch carries everything between that
group and the others, as a rack's uplink does.  A byte between groups crosses
the sender's link, its group's uplink, the receiver's group's uplink and the
receiver's link.

The box builds these with `tc` (experiments/box/shaping.py), the emulator
with its own pacing; the time model reads them too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from experiments.errors import UserError
from experiments.formats.cell_layout import network_dirname
from experiments.model.units import parse_bandwidth, parse_latency

__all__ = [
    "LINK_QUEUES",
    "QUEUE_BEFORE_LINK_QUEUES",
    "LinkSettings",
    "burst_bytes",
    "link_settings",
]

# How a box's shaped link queues what waits (--link-queue, box/shaping.py), the default
# first: one FIFO per peer served in turn, or one drop-tail FIFO for all.
LINK_QUEUES = ("fair", "fifo")
# What every box before --link-queue shaped its rates with: tbf's one FIFO.  A record or
# sample set that names no queue was made under it.
QUEUE_BEFORE_LINK_QUEUES = "fifo"


@dataclass(frozen=True)
class LinkSettings:
    """Per-node link: bytes/s (None: unshaped), one-way seconds; rank 0's own bandwidth."""

    bandwidth: float | None = None
    latency: float | None = None
    root_bandwidth: float | None = None
    group_size: int | None = None
    group_bandwidth: float | None = None
    queue: str = LINK_QUEUES[0]
    # As typed, for run.json and messages.
    text: dict[str, str | None] | None = None

    @property
    def rate_shaped(self) -> bool:
        """Some link has a rate, so its queue (`queue`) shapes what it carries."""
        return bool(self.bandwidth or self.root_bandwidth or self.group_bandwidth)

    @property
    def shaped(self) -> bool:
        return bool(self.bandwidth or self.latency or self.root_bandwidth or self.group_size)

    def typed(self, name: str) -> str | None:
        """A flag's value as typed (`link_bandwidth`, `link_latency`, ...), or None."""
        return (self.text or {}).get(name)

    def group_of(self, rank: int) -> int | None:
        """The rank's group in a two-level network; None in a one-switch box."""
        return rank // self.group_size if self.group_size else None

    def dirname(self) -> str | None:
        """The cells' network directory in the raw tree (cell_layout.network_dirname)."""
        return network_dirname(
            self.bandwidth, self.latency, self.root_bandwidth, self.group_size, self.group_bandwidth
        )

    def bandwidth_of(self, rank: int) -> float | None:
        if rank == 0 and self.root_bandwidth:
            return self.root_bandwidth
        return self.bandwidth

    def record(self) -> dict[str, Any]:
        """For run.json: as typed and in bytes/s and seconds."""
        return {
            **(self.text or {}),
            "bandwidth_bytes_per_s": self.bandwidth,
            "root_bandwidth_bytes_per_s": self.root_bandwidth,
            "latency_seconds": self.latency,
            **(
                {
                    "group_size": self.group_size,
                    "group_bandwidth_bytes_per_s": self.group_bandwidth,
                }
                if self.group_size
                else {}
            ),
            "queue": self.queue if self.rate_shaped else None,
            "shaping": _SHAPING[self.queue],
        }


_SHAPING = {
    "fair": "tc htb (rate; a class and a FIFO per peer, served in turn) and netem (delay), "
    "both directions of every node's link",
    "fifo": "tc tbf (rate; one drop-tail FIFO) and netem (delay), both directions of every "
    "node's link",
}


def link_settings(
    bandwidth: str | None,
    latency: str | None,
    root_bandwidth: str | None = None,
    group_size: int | None = None,
    group_bandwidth: str | None = None,
    queue: str | None = None,
) -> LinkSettings:
    """LinkSettings from flags as typed; UserError (the accepted forms) on a bad one."""
    queue = queue or LINK_QUEUES[0]
    if queue not in LINK_QUEUES:
        raise UserError(f"--link-queue takes {' or '.join(LINK_QUEUES)}, not {queue!r}")
    if group_size is not None and group_size < 1:
        raise UserError(f"--group-size must be at least 1, got {group_size}")
    if bool(group_size) != bool(group_bandwidth):
        raise UserError("a two-level network needs both --group-size and --group-link-bandwidth")
    text = {
        "link_bandwidth": bandwidth,
        "link_latency": latency,
        "root_link_bandwidth": root_bandwidth,
    }
    if group_size:
        text |= {"group_size": str(group_size), "group_link_bandwidth": group_bandwidth}
    return LinkSettings(
        bandwidth=parse_bandwidth(bandwidth) if bandwidth else None,
        latency=parse_latency(latency) if latency else None,
        root_bandwidth=parse_bandwidth(root_bandwidth) if root_bandwidth else None,
        group_size=group_size,
        group_bandwidth=parse_bandwidth(group_bandwidth) if group_bandwidth else None,
        queue=queue,
        text=text,
    )


# A shaped link's token bucket (tbf, as the box's `tc` builds it, box/shaping.py):
# it must hold at least one segment veth hands it (GSO: up to 64 KiB) and a few ms
# of the rate, or the rate is not reached.  Here, beside the links, because the link
# floor (estimate/link_floor.py) counts what passes at once too.
_MIN_BURST_BYTES = 64 * 1024
_BURST_SECONDS = 0.004


def burst_bytes(bandwidth: float) -> int:
    """tbf's bucket at `bandwidth` bytes/s: what may pass at once, unpaced."""
    return max(_MIN_BURST_BYTES, round(bandwidth * _BURST_SECONDS))
