"""Watch a MiniCluster's pods while its Job runs: fail a cell that cannot start, in minutes.

A Job's conditions only say Complete or Failed.  Pods that can never run leave
it neither: a pod Pending for want of a node, an image that will not pull, a
container in a crash loop, or brokers that never join (the operator's workers
loop on `flux start` forever) would each burn the cell's whole timeout, and
the next cell would pay for it again.  `PodWatch.check()`, called between
watch windows of the Job, lists the pods and raises StartFailure with a short
`kind` (the runner stops a sweep after the same kind twice in a row) when:

- a container waits for a reason that does not heal on its own (image pull
  back-off, a bad image name, a container that cannot be created, a crash
  loop): at once;
- a pod is still Pending `pending_s` after the MiniCluster was created, or
  fewer pods than ranks exist by then (a pod is Pending until its images are
  pulled: `kary run` derives the bound from the plan's image pull estimate,
  estimate/defaults.py pending_bound, or takes --pending-timeout);
- two ranks landed on the same node, unless `allow_shared_nodes` (then a cell
  measures the node's memory, not the network between nodes);
- every pod has been Running for `join_s` and rank 0's log still has no
  `KARY {"meta": "cell"}` line: rank 0 starts the entrypoint only once every
  broker has joined (flux-core's broker.quorum is the instance size by default),
  so no such line means some broker never joined.  A nested group's rank 0 runs
  the driver instead, so there any cell frame of the driver's is that proof
  (`began`); a nested cell whose own brokers never join is the driver's look's.

Given the cluster's NodeCatalog, each look also lists the nodes and raises
`Preempted` (preemption.py) when a rank lost its node: before any of the
above, since a preempted rank's replacement pod is Pending, or lands beside
another rank.  `preemption()` is the same look, unhurried, for a cell that
ended without its result.  Then a pod the kubelet evicted (node pressure: its
disk or memory ran low) raises `PodEvicted`: the cell failed, with the
kubelet's reason, not a start failure and not a preemption.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException

from experiments.backends.kubernetes.api import ApiUnavailable, KubeApi
from experiments.backends.kubernetes.minicluster import job_pods
from experiments.backends.kubernetes.nodes import NodeCatalog
from experiments.backends.kubernetes.objects import dig, eviction, log_container, pod_index
from experiments.backends.kubernetes.preemption import NodeLoss, Preempted
from experiments.formats.kary_line import meta_record

__all__ = [
    "PodEvicted",
    "PodWatch",
    "StartFailure",
    "StartLimits",
    "pod_problem",
    "shared_nodes",
    "shared_nodes_problem",
]

Obj = dict[str, Any]

# Waiting reasons the kubelet does not get past without someone changing something.
# ErrImagePull is left out: it is the first failed pull, and a registry hiccup heals;
# the kubelet turns a pull that keeps failing into ImagePullBackOff.
FATAL_WAITING = frozenset(
    {
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
        "CrashLoopBackOff",
    }
)


class StartFailure(Exception):
    """The cell's pods cannot run its benchmark; `kind` is one word to compare cells by."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class StartLimits:
    """How long pods may take to start, and how often to look."""

    pending_s: float = 600.0
    join_s: float = 600.0
    check_every_s: float = 15.0
    allow_shared_nodes: bool = False


def _statuses(pod: Obj) -> list[Obj]:
    status = dig(pod, "status") or {}
    return list(status.get("initContainerStatuses") or []) + list(
        status.get("containerStatuses") or []
    )


def shared_nodes(pods: list[Obj], name: str) -> dict[str, list[int]]:
    """Node -> the ranks on it, for nodes that hold more than one rank."""
    ranks: dict[str, list[int]] = defaultdict(list)
    for pod in pods:
        node = dig(pod, "spec", "nodeName")
        index = pod_index(pod, name)
        if node and index is not None:
            ranks[node].append(index)
    return {node: sorted(r) for node, r in sorted(ranks.items()) if len(r) > 1}


def shared_nodes_problem(shared: dict[str, list[int]], name: str) -> str:
    """Why a cell whose ranks share a node (`shared_nodes`) is not timed."""
    node, ranks = next(iter(shared.items()))
    return (
        f"ranks {', '.join(map(str, ranks))} of MiniCluster {name} landed on one node "
        f"({node}): a cell on shared nodes times memory, not the network between nodes; "
        "give the cluster a node per rank or pass --allow-shared-nodes"
    )


def pod_problem(
    pods: list[Obj], name: str, size: int, age_s: float, limits: StartLimits
) -> StartFailure | None:
    """Why these pods (of a MiniCluster `age_s` old, `size` ranks) cannot run, or None."""
    for pod in pods:
        rank = pod_index(pod, name)
        for status in _statuses(pod):
            waiting = dig(status, "state", "waiting") or {}
            reason = waiting.get("reason")
            if reason in FATAL_WAITING:
                message = str(waiting.get("message") or "").strip().splitlines()
                return StartFailure(
                    reason,
                    f"pod {dig(pod, 'metadata', 'name')} (rank {rank}) cannot start: container "
                    f"{status.get('name')} is {reason}" + (f": {message[0]}" if message else ""),
                )
    if age_s >= limits.pending_s:
        pending = [p for p in pods if dig(p, "status", "phase") == "Pending"]
        if pending:
            pod = pending[0]
            why = next(
                (
                    c.get("message") or c.get("reason")
                    for c in dig(pod, "status", "conditions") or []
                    if c.get("type") == "PodScheduled" and c.get("status") == "False"
                ),
                None,
            )
            return StartFailure(
                "Pending",
                f"{len(pending)} of {size} pods of MiniCluster {name} still Pending "
                f"{limits.pending_s:g} s after it was created"
                + (
                    f" ({dig(pod, 'metadata', 'name')}: {why})"
                    if why
                    # Scheduled: its containers are being made, most likely its image pulled.
                    else "; if its image pull is that slow, --pending-timeout SECONDS waits longer"
                ),
            )
        if len(pods) < size:
            return StartFailure(
                "pods-missing",
                f"only {len(pods)} of {size} pods of MiniCluster {name} exist "
                f"{limits.pending_s:g} s after it was created",
            )
    shared = shared_nodes(pods, name)
    if shared and not limits.allow_shared_nodes:
        return StartFailure("ranks-share-nodes", shared_nodes_problem(shared, name))
    return None


class PodEvicted(Exception):
    """A pod of the cell was evicted by its node's kubelet (objects.eviction): the cell
    failed, and the Job would only replace the pod, without the cell's broker in it."""


class PodWatch:
    """check(): raise StartFailure when the cell's pods cannot run it (see the module doc)."""

    def __init__(
        self,
        api: KubeApi,
        ns: str,
        name: str,
        size: int,
        limits: StartLimits,
        clock: Callable[[], float] = time.monotonic,
        nodes: NodeCatalog | None = None,
        began: Callable[[str], bool] | None = None,
    ) -> None:
        self.api, self.ns, self.name, self.size = api, ns, name, size
        # Whether rank 0's log shows the instance ran its initial program.
        self.began = began or _benchmark_began
        self.limits = limits
        self.clock = clock
        self.nodes = nodes
        self.loss = NodeLoss(name)
        self.created = clock()
        self._next = self.created + limits.check_every_s
        self._all_running_since: float | None = None
        # When every pod first ran (this watch's clock): where a cell's own time starts.
        self.running_since: float | None = None
        self._started = False

    def check(self) -> None:
        now = self.clock()
        if now < self._next:
            return
        self._next = now + self.limits.check_every_s
        try:
            pods = job_pods(self.api, self.ns, self.name)
        except (ApiException, ApiUnavailable):
            return  # the Job watch reports an API that keeps failing; this is a side look
        lost = self._lost(pods)
        if lost is not None:
            raise lost
        evicted = eviction(pods, self.name)
        if evicted is not None:
            raise PodEvicted(evicted)
        problem = pod_problem(pods, self.name, self.size, now - self.created, self.limits)
        if problem is not None:
            raise problem
        self._check_joined(pods, now)

    def overdue(self, limit_s: float) -> bool:
        """Whether the pods have all been running (since they first all ran) over `limit_s`."""
        return self.running_since is not None and self.clock() - self.running_since > limit_s

    def remember(self, pods: list[Obj]) -> None:
        """Note each rank's node from pods listed elsewhere (no API call)."""
        self.loss.remember(pods)

    def preemption(self) -> Preempted | None:
        """Whether the cell lost a node to preemption, looked at now (None when the API
        would not say): for a cell that ended without its result."""
        try:
            pods = job_pods(self.api, self.ns, self.name)
        except (ApiException, ApiUnavailable):
            pods = []
        return self._lost(pods)

    def _lost(self, pods: list[Obj]) -> Preempted | None:
        # The nodes after the pods: a node a listed pod was bound to is in a later
        # listing unless it went.  Without a listing, the pods' conditions still tell.
        nodes = self.nodes if self.nodes is not None else NodeCatalog()
        nodes.refresh(self.api)
        return self.loss.find(pods, nodes)

    def _check_joined(self, pods: list[Obj], now: float) -> None:
        if self._started:
            return
        running = len(pods) >= self.size and all(
            dig(p, "status", "phase") == "Running" for p in pods
        )
        if not running:
            self._all_running_since = None
            return
        if self._all_running_since is None:
            self._all_running_since = now
        if self.running_since is None:
            self.running_since = now
        if now - self._all_running_since < self.limits.join_s:
            return
        zero = next((p for p in pods if pod_index(p, self.name) == 0), None)
        log = self._log(zero) if zero is not None else None
        if log is None:
            return  # cannot tell: let the cell's own deadline decide
        if self.began(log):
            self._started = True
            return
        raise StartFailure(
            "brokers-never-joined",
            f"all {self.size} pods of MiniCluster {self.name} ran for "
            f"{self.limits.join_s:g} s and rank 0 never started the benchmark: "
            "some broker never joined (see the pods' logs)",
        )

    def _log(self, pod: Obj) -> str | None:
        try:
            return self.api.call_text(
                "read the rank-0 log",
                self.api.core.read_namespaced_pod_log,
                dig(pod, "metadata", "name"),
                self.ns,
                container=log_container(pod, self.name),
                limit_bytes=1 << 20,
            )
        except (ApiException, ApiUnavailable):
            return None


def _benchmark_began(log: str) -> bool:
    """A cell's entrypoint printed its first KARY line on rank 0."""
    return meta_record(log, "cell") is not None
