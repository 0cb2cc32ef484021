"""How the box shapes its links: the `tc` commands for one device.

The links themselves (what each node's link and a group's uplink carry) are
model/links.py's LinkSettings.  In the box every node's link is a veth pair
(`eth0` in the node's namespace, `h<rank>` on the bridge) and a group's uplink
another; each is shaped in both directions, as a NIC and its switch port are:
the node's side limits what the node sends, the switch's side what it
receives.  Bandwidth uses tbf (token bucket), latency netem.  Some kernels
build neither (`privileges` probes for what a cell asks, before anything
starts).
"""

from __future__ import annotations

from experiments.model.links import burst_bytes

__all__ = ["burst_bytes", "qdisc_commands"]

# tbf's queue: how long a packet may wait for tokens before it is dropped.  TCP
# needs room for a window at the link's rate; 50 ms is far above the box's RTT.
_QUEUE_SECONDS = 0.05


def qdisc_commands(device: str, bandwidth: float | None, latency: float | None) -> list[str]:
    """`tc -batch` lines that shape `device`'s egress; [] when nothing is shaped."""
    rate = (
        f"tbf rate {round(bandwidth * 8)}bit burst {burst_bytes(bandwidth)} "
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
