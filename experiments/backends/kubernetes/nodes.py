"""The cluster's nodes as run.json records them: capacity type, instance, zone, and which
are there now.

A node's capacity type comes from the label its provider puts on it:

- EKS managed node groups label every node `eks.amazonaws.com/capacityType`
  `ON_DEMAND` or `SPOT` (Amazon EKS User Guide, "Managed node groups",
  Capacity types: https://docs.aws.amazon.com/eks/latest/userguide/managed-node-groups.html),
  as `eksctl` makes them with `spot: true` (eksctl User Guide, "Spot instances");
  Karpenter's nodes say `karpenter.sh/capacity-type: spot | on-demand`;
- GKE labels Spot VM nodes `cloud.google.com/gke-spot: "true"` and preemptible ones
  `cloud.google.com/gke-preemptible: "true"`; preemptible VMs "share the same
  pricing model as Spot VMs" (GKE docs, "Use preemptible VMs"), so both are
  `spot` here; a GKE node with neither (it has `cloud.google.com/gke-nodepool`)
  is a standard, on-demand VM.

The instance id is the last part of the node's `spec.providerID`
(`aws:///us-east-2b/i-0abc...`, `gce://project/zone/name`).  `NodeCatalog`
keeps what it has seen of every node, also of nodes that have since gone (a
preempted cell's run.json still names the node it lost), and which nodes the
last listing held.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from experiments.backends.kubernetes.api import KubeApi
from experiments.backends.kubernetes.objects import NODE_LIST, dig, pod_index

__all__ = [
    "MIXED",
    "ON_DEMAND",
    "SPOT",
    "NodeCatalog",
    "NodeFacts",
    "capacity_of",
    "cell_capacity",
    "instance_id_of",
    "node_facts",
]

Obj = dict[str, Any]

ON_DEMAND, SPOT, MIXED = "on-demand", "spot", "mixed"
_EKS_CAPACITY = "eks.amazonaws.com/capacityType"
_KARPENTER_CAPACITY = "karpenter.sh/capacity-type"
_GKE_SPOT = "cloud.google.com/gke-spot"
_GKE_PREEMPTIBLE = "cloud.google.com/gke-preemptible"
_GKE_POOL = "cloud.google.com/gke-nodepool"
_UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


def capacity_of(labels: dict[str, Any]) -> str | None:
    """`on-demand`, `spot` (or another type the provider names, lower-case) from a
    node's labels; None when nothing says (a cluster that is neither EKS nor GKE)."""
    eks = labels.get(_EKS_CAPACITY) or labels.get(_KARPENTER_CAPACITY)
    if isinstance(eks, str) and eks:
        return eks.lower().replace("_", "-")
    if "true" in (str(labels.get(_GKE_SPOT)).lower(), str(labels.get(_GKE_PREEMPTIBLE)).lower()):
        return SPOT
    if labels.get(_GKE_POOL):
        return ON_DEMAND
    return None


def instance_id_of(provider_id: Any) -> str | None:
    """The instance behind a node from its providerID: `aws:///us-east-2b/i-0abc` ->
    `i-0abc`, `gce://project/us-central1-a/gke-pool-x` -> `gke-pool-x`."""
    if not isinstance(provider_id, str) or "://" not in provider_id:
        return None
    last = provider_id.rstrip("/").rsplit("/", 1)[-1]
    return last or None


@dataclass(frozen=True)
class NodeFacts:
    """One node as kary records it (run.json `rank_nodes`) and watches it (preemption)."""

    name: str
    capacity: str | None = None
    instance_type: str | None = None
    instance_id: str | None = None
    zone: str | None = None
    ready: bool = True
    # Cordoned (spec.unschedulable or its taint): EKS cordons a Spot node before it
    # drains it for a rebalance recommendation or an interruption notice.
    cordoned: bool = False
    labels: tuple[tuple[str, str], ...] = ()

    def record(self) -> dict[str, Any]:
        """The node's part of run.json's `rank_nodes` entry."""
        return {
            "node": self.name,
            "capacity": self.capacity,
            "instance_type": self.instance_type,
            "instance_id": self.instance_id,
            "zone": self.zone,
        }

    def matches(self, selector: dict[str, str]) -> bool:
        labels = dict(self.labels)
        return all(labels.get(key) == value for key, value in selector.items())


def node_facts(node: Obj) -> NodeFacts:
    """A Node object (plain JSON) read into NodeFacts."""
    labels = dig(node, "metadata", "labels") or {}
    taints = dig(node, "spec", "taints") or []
    ready = next(
        (
            str(c.get("status")) == "True"
            for c in dig(node, "status", "conditions") or []
            if c.get("type") == "Ready"
        ),
        True,  # a node that says nothing of readiness (a fake, or an old API) is taken as up
    )
    return NodeFacts(
        name=str(dig(node, "metadata", "name")),
        capacity=capacity_of(labels),
        instance_type=labels.get("node.kubernetes.io/instance-type")
        or labels.get("beta.kubernetes.io/instance-type"),
        instance_id=instance_id_of(dig(node, "spec", "providerID")),
        zone=labels.get("topology.kubernetes.io/zone")
        or labels.get("failure-domain.beta.kubernetes.io/zone"),
        ready=ready,
        cordoned=bool(dig(node, "spec", "unschedulable"))
        or any(isinstance(t, dict) and t.get("key") == _UNSCHEDULABLE_TAINT for t in taints),
        labels=tuple(sorted((str(k), str(v)) for k, v in labels.items())),
    )


def cell_capacity(capacities: list[str | None]) -> str | None:
    """A cell's capacity from its nodes': theirs when they agree, `mixed` when they do
    not, None when no node said."""
    known = {c for c in capacities if c}
    if not known:
        return None
    return known.pop() if len(known) == 1 else MIXED


class NodeCatalog:
    """Every node seen (its facts), and the names the last listing held (`present`).

    `workers`: the labels of the nodes the benchmark's pods may use (the cluster
    file's node selector; empty: every node), whose set and count kary records
    and, after a preemption, waits for.
    """

    def __init__(self, workers: dict[str, str] | None = None) -> None:
        self.workers = dict(workers or {})
        self._nodes: dict[str, NodeFacts] = {}
        # None until a listing answered: nothing can be said gone before that.
        self.present: set[str] | None = None

    def refresh(self, api: KubeApi) -> bool:
        """List the nodes again; False when the API would not say (no RBAC, say): then
        no node is known to be there or gone until a listing answers."""
        nodes = api.call_or_none("list nodes", api.core.list_node, expect=NODE_LIST)
        if nodes is None:
            self.present = None
            return False
        present = set()
        for node in dig(nodes, "items") or []:
            facts = node_facts(node)
            self._nodes[facts.name] = facts
            present.add(facts.name)
        self.present = present
        return True

    def get(self, name: str) -> NodeFacts | None:
        return self._nodes.get(name)

    def gone(self, name: str) -> bool:
        """Whether the last listing lacked a node (known gone only after one answered)."""
        return self.present is not None and name not in self.present

    def workers_now(self) -> list[NodeFacts]:
        """The worker nodes the last listing held."""
        nodes = [self._nodes[n] for n in sorted(self.present or ())]
        return [n for n in nodes if n.matches(self.workers)]

    def ready_workers(self) -> int:
        """How many worker nodes the last listing held Ready and not cordoned."""
        return sum(1 for n in self.workers_now() if n.ready and not n.cordoned)

    def node_set(self) -> dict[str, Any] | None:
        """How many worker nodes the last listing held, and a digest of their names: two
        cells with another digest saw another set of nodes (one was replaced)."""
        if self.present is None:
            return None
        names = sorted(n.name for n in self.workers_now())
        digest = hashlib.sha256("\n".join(names).encode()).hexdigest()[:12]
        return {"nodes": len(names), "digest": digest}

    def describe(self, api: KubeApi, pods: list[Obj]) -> dict[str, Any]:
        """instance_type, zones and nodes_used of the nodes the pods ran on."""
        facts: dict[str, Any] = {}
        names = {n for p in pods if (n := dig(p, "spec", "nodeName"))}
        if names - set(self._nodes):
            self.refresh(api)
        known = [f for n in sorted(names) if (f := self._nodes.get(n))]
        types = sorted({f.instance_type for f in known if f.instance_type})
        zones = sorted({f.zone for f in known if f.zone})
        if types:
            facts["instance_type"] = ",".join(types)
        if zones:
            facts["zones"] = zones
        facts["nodes_used"] = len(names)
        return facts

    def rank_nodes(self, pods: list[Obj], name: str, seen: dict[int, str]) -> list[dict[str, Any]]:
        """Each rank's node for run.json, by rank: the one it was first seen on (`seen`:
        a preempted rank's pod may be gone, or replaced on another node), else the node
        its pod is on; `gone: true` on a node the last listing lacked."""
        where: dict[int, str] = {}
        for pod in pods:
            rank, node = pod_index(pod, name), dig(pod, "spec", "nodeName")
            if rank is not None and node:
                where.setdefault(rank, str(node))
        where.update(seen)
        ranks = []
        for rank in sorted(where):
            node = where[rank]
            facts = self._nodes.get(node) or NodeFacts(node)
            entry = {"rank": rank, **facts.record()}
            if self.gone(node):
                entry["gone"] = True
            ranks.append(entry)
        return ranks
