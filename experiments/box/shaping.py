"""How the box shapes its links: the `tc` commands for one device.

The links themselves (what each node's link and a group's uplink carry) are
model/links.py's LinkSettings.  In the box every node's link is a veth pair
(`eth0` in the node's namespace, `h<rank>` on the bridge) and a group's uplink
another; each is shaped in both directions, as a NIC and its switch port are:
the node's side limits what the node sends, the switch's side what it
receives.  Latency is netem's; bandwidth is shaped one of two ways, the link's
queue (`--link-queue`):

- `fair` (the default): a node's side, its host's queue, is htb with one
  class per peer under a parent class at the link's rate.  Each peer's class is
  guaranteed its share and may borrow the whole link, and htb serves the
  backlogged classes in turn (deficit round robin, `quantum` bytes a turn), each
  from a short byte FIFO of its own.  A real host serves flows in turn too: the
  default qdisc of EKS's AL2023 and GKE's COS is fq_codel, and a cloud NIC
  queues per flow, so no TCP connection starves behind the others' backlog, and
  a relay's ACKs to its parent do not wait behind its data to its children.
  This kernel has neither fq_codel, fq nor sfq; htb, bfifo and u32 are what it
  has (privileges.py probes for them).  Classes are kept apart by destination
  address; peers whose address's low 6 bits agree share a class: exact per peer
  up to 64 nodes, at most 64 classes a link beyond.  The switch's side of a link
  and a group's uplink are switch ports, which queue in one FIFO per port, as a
  switch's port buffer does: tbf, as under `fifo`.  (Per-source classes there,
  tried first, dropped a 1 Gbit/s rank 0's bursts into 50 Mbit/s ports until it
  sent 43% more bytes than its three copies.)
- `fifo`: tbf, one drop-tail FIFO per link, as kary's box had before.  At wide
  fan-outs rank 0's own FIFO drops most of what it sends, and a connection
  starved past flux-core's 20 s TCP user timeout loses a rank; kept to compare
  with and to re-make samples taken under it.
"""

from __future__ import annotations

from collections.abc import Sequence

from experiments.model.links import LINK_QUEUES, burst_bytes

__all__ = ["LINK_QUEUES", "burst_bytes", "qdisc_commands", "queue_limit_bytes"]

# tbf's queue: how long a packet may wait for tokens before it is dropped.  TCP
# needs room for a window at the link's rate; 50 ms is far above the box's RTT.
_QUEUE_SECONDS = 0.05
# A fair link's per-peer FIFO: fq_codel's target delay (5 ms) at the link's rate, and at
# least two of the 64 KiB segments veth hands it (GSO).  fq_codel drops a flow's
# packets once they wait past 5 ms; a byte FIFO holding 50 ms per peer (tbf's whole
# queue, tried first) let each of a binomial tree's four flows from rank 0 queue 200 ms
# at its quarter of the link, and distribute-all-nodes took 45.6 s where the one FIFO
# took 25.3 s (one cell each, 16 nodes, 100 Mbit/s, 64M; 23.5 s with a 140,000-byte FIFO).
_FLOW_QUEUE_SECONDS = 0.005
_MIN_QUEUE_BYTES = 2 * 66_000  # two quanta (below)
# Classes of a fair link: peers whose address's low 6 bits agree share one.
_FAIR_BUCKETS = 64
# What a backlogged class sends in its turn: one GSO segment and its headers.
_QUANTUM_BYTES = 66_000
# The IPv4 header offset of the destination address, where u32 matches.
_DESTINATION = 16
# htb handle under netem (1:) or at the root; its parent class, its default leaf.
_HTB = "10"


def queue_limit_bytes(bandwidth: float) -> int:
    """A fair link's per-peer FIFO, in bytes."""
    return max(_MIN_QUEUE_BYTES, round(bandwidth * _FLOW_QUEUE_SECONDS))


def qdisc_commands(
    device: str,
    bandwidth: float | None,
    latency: float | None,
    queue: str = "fair",
    peers: Sequence[str] = (),
) -> list[str]:
    """`tc -batch` lines that shape `device`'s egress; [] when nothing is shaped.

    `peers` are the IPv4 addresses a fair link keeps apart, by destination."""
    lines: list[str] = []
    parent = "root"
    if latency:
        lines.append(f"qdisc add dev {device} root handle 1: netem delay {round(latency * 1e6)}us")
        parent = "parent 1:1"
    if not bandwidth:
        return lines
    if queue == "fifo":
        tbf = (
            f"tbf rate {round(bandwidth * 8)}bit burst {burst_bytes(bandwidth)} "
            f"latency {round(_QUEUE_SECONDS * 1000)}ms"
        )
        handle = " handle 10:" if latency else ""
        return [*lines, f"qdisc add dev {device} {parent}{handle} {tbf}"]
    if queue != "fair":
        raise ValueError(f"unknown link queue {queue!r}")
    return [*lines, *_fair(device, bandwidth, parent, peers)]


def _fair(device: str, bandwidth: float, parent: str, peers: Sequence[str]) -> list[str]:
    buckets = sorted({int(address.rsplit(".", 1)[1]) % _FAIR_BUCKETS for address in peers})
    rate = round(bandwidth * 8)
    burst = burst_bytes(bandwidth)
    # Each leaf is guaranteed an equal share and may borrow up to the whole link.
    share = max(8, rate // (len(buckets) + 1))
    leaf = (
        f"htb rate {share}bit ceil {rate}bit burst {burst} cburst {burst} quantum {_QUANTUM_BYTES}"
    )
    fifo = f"bfifo limit {queue_limit_bytes(bandwidth)}"
    lines = [
        # Leaf 2 takes what no filter matches (ARP and the like).
        f"qdisc add dev {device} {parent} handle {_HTB}: htb default 2",
        f"class add dev {device} parent {_HTB}: classid {_HTB}:1 htb rate {rate}bit "
        f"ceil {rate}bit burst {burst} cburst {burst}",
        f"class add dev {device} parent {_HTB}:1 classid {_HTB}:2 {leaf}",
        f"qdisc add dev {device} parent {_HTB}:2 {fifo}",
    ]
    for bucket in buckets:
        classid = f"{_HTB}:{0x10 + bucket:x}"
        lines += [
            f"class add dev {device} parent {_HTB}:1 classid {classid} {leaf}",
            f"qdisc add dev {device} parent {classid} {fifo}",
            f"filter add dev {device} parent {_HTB}: protocol ip prio 1 u32 "
            f"match u32 {bucket:#010x} {_FAIR_BUCKETS - 1:#010x} at {_DESTINATION} "
            f"flowid {classid}",
        ]
    return lines
