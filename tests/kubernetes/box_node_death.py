"""A node that dies, for the pods in a box (box_pods.py): it sends nothing, and the API
is slow to say so.

`lose_pod` is a SIGKILL: every process of the pod ends at once, its peers see
their TCP connections reset, and a replacement exists seconds later.  A node
that loses power or its link does none of that.  `kill_node` plays it:

- the pod's link goes down (`ip link set eth0 down` inside the pod's network
  namespace; its veth peer on the box's bridge loses carrier), its processes
  left running: nothing reaches them and nothing of theirs gets out.  Flux
  finds out only from its own clocks (flux-core 0.88,
  src/modules/overlay/ovconf.c): `tbon.tcp_user_timeout`, 20 s by default, set
  as ZMQ_TCP_MAXRT on both ends of every TBON connection (children.c, parent.c):
  data unacknowledged that long closes the connection and the peer is `lost`;
  `tbon.torpid_max`, 30 s, only marks a silent child torpid, it disconnects
  nothing (doc/man5/flux-config-tbon.rst).  `PodSettings.tcp_user_timeout_s`
  stands for the 20 s;
- the API shows the pod Running, its container ready, while the cluster does
  not know: the node goes NotReady (Ready `Unknown`, the kubelet stopped
  posting status) only after the node controller's grace period
  (kube-controller-manager `--node-monitor-grace-period`, tens of seconds),
  and it then taints the node `node.kubernetes.io/unreachable:NoExecute`,
  which every pod tolerates for 300 s (the DefaultTolerationSeconds admission
  plugin; https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/#taint-based-evictions).
  `grace_s` and `toleration_s` stand for those;
- when the toleration ends the pod is evicted; the Job makes a replacement
  pod, Pending until a node takes it (`replace_s`), on a new node: an
  on-demand node group replaces the dead instance.  Here the old pod's
  processes end then (nothing could see them since the link went down) and
  the replacement starts in the same namespace with its link back up.

The node the pod was on stays in the node list, NotReady and on demand: kary's
preemption rules (experiments/backends/kubernetes/preemption.py) do not apply.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from box_pods import BoxPods


@dataclass(frozen=True)
class NodeDeath:
    """How long the cluster takes to notice a dead node, on a test's clock."""

    grace_s: float = 1.0  # the node controller's grace period (tens of seconds)
    toleration_s: float = 8.0  # the unreachable toleration (300 s)
    replace_s: float = 2.0  # a new node joins and takes the replacement pod


@dataclass
class DeadNode:
    """The thread that plays what follows a node's death, and the time (time.monotonic)
    before which the replacement pod is Pending, once it exists."""

    thread: threading.Thread
    replaced_at: float | None = None


def kill_node(cluster: Any, box: BoxPods, index: int, death: NodeDeath) -> DeadNode:
    """Pod `index`'s node dies now (module doc).

    `cluster` is the fake API server's FakeCluster: its node list and the
    MiniCluster's node names (fake_apiserver.py) are what the API shows."""
    box.exec(index, ["ip", "link", "set", "eth0", "down"])
    run = cluster.runs[box.name]
    node_name = run["node_names"][index]

    def later() -> None:
        time.sleep(death.grace_s)
        with cluster.lock:
            node = next(n for n in cluster.nodes if n["metadata"]["name"] == node_name)
            node["status"]["conditions"] = [
                {
                    "type": "Ready",
                    "status": "Unknown",
                    "reason": "NodeStatusUnknown",
                    "message": "Kubelet stopped posting node status.",
                }
            ]
            node["spec"]["taints"] = [
                {"key": "node.kubernetes.io/unreachable", "effect": effect}
                for effect in ("NoSchedule", "NoExecute")
            ]
        time.sleep(max(0.0, death.toleration_s - death.grace_s))
        if not box.watcher.is_alive():
            return  # the MiniCluster was deleted meanwhile: no pod left to evict
        # Evicted: the old pod's processes end, a new pod is Pending for replace_s.
        box.lose_pod(index)
        with box.lock:
            box.pods[index].pending_until = dead.replaced_at = time.monotonic() + death.replace_s
        box.exec(index, ["ip", "link", "set", "eth0", "up"])
        new = dict(node, metadata={**node["metadata"], "name": f"{node_name}-new"})
        new["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
        new["spec"] = {k: v for k, v in node["spec"].items() if k != "taints"}
        with cluster.lock:
            cluster.nodes.append(new)
        names = list(run["node_names"])
        names[index] = new["metadata"]["name"]
        run["node_names"] = names

    dead = DeadNode(threading.Thread(target=later, daemon=True))
    dead.thread.start()
    return dead
