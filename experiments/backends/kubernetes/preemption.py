"""A cell that lost a node to preemption: how kary tells, from the API's objects.

A cell is `preempted` (never timed; the next `kary run` runs it again) when,
while it ran or as it ended without its result, any of these held:

- a node one of its ranks ran on is gone from the node list: deleted, as a
  reclaimed Spot VM or a node removed after going NotReady is;
- one of its pods has the condition `DisruptionTarget: True` ("Pod disruption
  conditions", https://kubernetes.io/docs/concepts/workloads/pods/disruptions/#pod-disruption-conditions):
  `PreemptionByScheduler` (a pod of higher priority took its place),
  `DeletionByTaintManager` (a NoExecute taint it does not tolerate: an
  unreachable or NotReady node), `EvictionByEvictionAPI` (a drain: EKS drains a
  Spot node on a rebalance recommendation or its interruption notice),
  `DeletionByPodGC` (bound to a node that no longer exists), or
  `TerminationByKubelet` for a graceful node shutdown (how GKE's Spot and
  preemptible VMs end, 30 s after the notice: GKE docs, "Spot VMs").  The
  kubelet's other `TerminationByKubelet`, a node-pressure eviction (the pod's
  reason `Evicted`), is the cell's own doing (a disk its blobs filled), not a
  preemption: that cell fails as before;
- a Spot node a rank runs on is cordoned or NotReady: EKS cordons a Spot node
  before it drains it ("Managed node groups", Spot capacity), and a reclaimed
  one goes NotReady before it is removed.

`NodeLoss` remembers each rank's node when first seen, since a preempted pod
may be deleted and its replacement Pending on no node by the time kary looks.

After a preempted cell, before the next, `await_workers` waits a bounded time
for the node group to be back at its count: a managed node group (EKS) or a
node pool (GKE) replaces a reclaimed node on its own, and a cell started
before then would find its pods Pending, or on fewer nodes than it needs.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from experiments.backends.base import RunResult
from experiments.backends.kubernetes.api import KubeApi
from experiments.backends.kubernetes.nodes import SPOT, NodeCatalog
from experiments.backends.kubernetes.objects import dig, pod_index

__all__ = [
    "DISRUPTION_REASONS",
    "NodeLoss",
    "Preempted",
    "await_workers",
    "disruption_of",
    "preempted_result",
]

Obj = dict[str, Any]

# The DisruptionTarget reasons that mean the pod was taken from the cell (module doc).
DISRUPTION_REASONS = frozenset(
    {
        "PreemptionByScheduler",
        "DeletionByTaintManager",
        "EvictionByEvictionAPI",
        "DeletionByPodGC",
        "TerminationByKubelet",
    }
)


class Preempted(Exception):
    """A rank of the cell lost its node (or its pod) to preemption; one line."""

    def __init__(self, rank: int | None, node: str | None, how: str, capacity: str | None) -> None:
        where = f"rank {rank}'s node {node}" if rank is not None else f"node {node}"
        article = "an" if capacity and capacity[0] in "aeiou" else "a"
        kind = f"{article} {capacity} node" if capacity else "capacity not labelled"
        super().__init__(f"{where} ({kind}) {how}: the cell lost a node to preemption")
        self.rank, self.node, self.how, self.capacity = rank, node, how, capacity

    def record(self) -> dict[str, Any]:
        """run.json's `preemption`."""
        return {"rank": self.rank, "node": self.node, "how": self.how, "capacity": self.capacity}


def disruption_of(pod: Obj) -> str | None:
    """`REASON: message` of the pod's DisruptionTarget condition when it says the pod was
    taken from the cell (module doc), else None."""
    for condition in dig(pod, "status", "conditions") or []:
        if condition.get("type") != "DisruptionTarget" or condition.get("status") != "True":
            continue
        reason = str(condition.get("reason") or "")
        if reason not in DISRUPTION_REASONS:
            continue
        if reason == "TerminationByKubelet" and dig(pod, "status", "reason") == "Evicted":
            continue  # node pressure: the cell's own disk or memory, not a preemption
        message = str(condition.get("message") or "").strip()
        return f"{reason}: {message}" if message else reason
    return None


@dataclass
class NodeLoss:
    """Each rank's node as first seen (`seen`), and `find`: the preemption, if any."""

    name: str
    seen: dict[int, str] = field(default_factory=dict)

    def remember(self, pods: list[Obj]) -> None:
        for pod in pods:
            rank, node = pod_index(pod, self.name), dig(pod, "spec", "nodeName")
            if rank is not None and node:
                self.seen.setdefault(rank, str(node))

    def find(self, pods: list[Obj], nodes: NodeCatalog) -> Preempted | None:
        """The first sign of a preemption among the pods and the nodes as last listed."""
        self.remember(pods)
        for pod in pods:
            why = disruption_of(pod)
            if why is not None:
                node = dig(pod, "spec", "nodeName")
                facts = nodes.get(str(node)) if node else None
                rank = pod_index(pod, self.name)
                capacity = facts.capacity if facts else None
                return Preempted(rank, node, f"lost its pod ({why})", capacity)
        for rank, node in sorted(self.seen.items()):
            facts = nodes.get(node)
            capacity = facts.capacity if facts else None
            if nodes.gone(node):
                return Preempted(rank, node, "was deleted", capacity)
            if facts is not None and capacity == SPOT and (facts.cordoned or not facts.ready):
                how = "was cordoned to be drained" if facts.cordoned else "went NotReady"
                return Preempted(rank, node, how, capacity)
        return None


def preempted_result(result: RunResult, lost: Preempted) -> RunResult:
    """The cell's result as preempted: no exit status, no timing, the reason and where."""
    provenance = {**result.provenance, "preemption": lost.record()}
    provenance.pop("start_failure", None)
    return dataclasses.replace(
        result,
        rc=None,
        timed_out=False,
        error=str(lost),
        provenance=provenance,
        start_failure=None,
        preempted=str(lost),
    )


def await_workers(
    api: KubeApi,
    nodes: NodeCatalog,
    want: int,
    limit_s: float,
    poll_s: float = 10.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> str | None:
    """Wait at most `limit_s` for `want` worker nodes (nodes.workers) Ready and not
    cordoned; None once they are, else why not, in one line."""
    deadline = clock() + limit_s
    while True:
        listed = nodes.refresh(api)
        ready = nodes.ready_workers() if listed else 0
        if listed and ready >= want:
            return None
        left = deadline - clock()
        if left <= 0:
            seen = f"{ready} of {want}" if listed else "the node list did not answer; none"
            return (
                f"the node group was not back at {want} Ready nodes {limit_s:g} s after the "
                f"preemption ({seen} Ready): its replacements did not come in time"
            )
        sleep(min(poll_s, left))
