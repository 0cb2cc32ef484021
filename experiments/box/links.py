"""A box's links: what each node's link carries, and the `tc` commands that shape it.

Every node has one link to the box's switch (a veth pair: `eth0` in the
node's namespace, `h<rank>` on the bridge).  A link is shaped in both
directions, as a NIC and its switch port are: the node's side limits what the
node sends, the switch's side what it receives.  A byte from rank A to rank B
crosses A's link and then B's, so a one-way `latency` per link is 2 x latency
between two nodes, and a flat tree's rank 0 pushes every copy through its own
one link.

A two-level network (`group_size`, `group_bandwidth`): ranks 0..g-1 are one
group, g..2g-1 the next, and so on; each group's nodes hang off a switch of
their own, whose uplink to the core switch (a veth pair, shaped the same way
in both directions) carries everything between that group and the others, as
a rack's uplink does.  A byte between groups crosses the sender's link, its
group's uplink, the receiver's group's uplink and the receiver's link.

Bandwidth uses tbf (token bucket), latency netem.  Some kernels build neither
(`privileges` probes for what a cell asks, before anything starts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from experiments.model.units import parse_bandwidth, parse_latency

__all__ = ["LinkSettings", "link_settings", "qdisc_commands"]

# tbf's queue: how long a packet may wait for tokens before it is dropped.  TCP
# needs room for a window at the link's rate; 50 ms is far above the box's RTT.
_QUEUE_SECONDS = 0.05
# tbf's bucket must hold at least one segment veth hands it (GSO: up to 64 KiB)
# and a few ms of the rate, or the rate is not reached.
_MIN_BURST_BYTES = 64 * 1024
_BURST_SECONDS = 0.004


@dataclass(frozen=True)
class LinkSettings:
    """Per-node link: bytes/s (None: unshaped), one-way seconds; rank 0's own bandwidth."""

    bandwidth: float | None = None
    latency: float | None = None
    root_bandwidth: float | None = None
    group_size: int | None = None
    group_bandwidth: float | None = None
    # As typed, for run.json and messages.
    text: dict[str, str | None] | None = None

    @property
    def shaped(self) -> bool:
        return bool(self.bandwidth or self.latency or self.root_bandwidth or self.group_size)

    def group_of(self, rank: int) -> int | None:
        """The rank's group in a two-level network; None in a one-switch box."""
        return rank // self.group_size if self.group_size else None

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
            "shaping": "tc tbf (rate) and netem (delay), both directions of every node's link",
        }


def link_settings(
    bandwidth: str | None,
    latency: str | None,
    root_bandwidth: str | None = None,
    group_size: int | None = None,
    group_bandwidth: str | None = None,
) -> LinkSettings:
    """LinkSettings from flags as typed; ValueError (the accepted forms) on a bad one."""
    if group_size is not None and group_size < 1:
        raise ValueError(f"--group-size must be at least 1, got {group_size}")
    if bool(group_size) != bool(group_bandwidth):
        raise ValueError("a two-level network needs both --group-size and --group-link-bandwidth")
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
        text=text,
    )


def qdisc_commands(device: str, bandwidth: float | None, latency: float | None) -> list[str]:
    """`tc -batch` lines that shape `device`'s egress; [] when nothing is shaped."""
    rate = (
        f"tbf rate {round(bandwidth * 8)}bit burst {_burst(bandwidth)} "
        f"latency {round(_QUEUE_SECONDS * 1000)}ms"
        if bandwidth
        else None
    )
    if latency:
        lines = [f"qdisc add dev {device} root handle 1: netem delay {round(latency * 1e6)}us"]
        if rate:
            lines.append(f"qdisc add dev {device} parent 1:1 handle 10: {rate}")
        return lines
    return [f"qdisc add dev {device} root {rate}"] if rate else []


def _burst(bandwidth: float) -> int:
    return max(_MIN_BURST_BYTES, round(bandwidth * _BURST_SECONDS))
