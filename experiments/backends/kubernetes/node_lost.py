"""A nested cell that lost a rank's node: fail it, then wait for the replacement.

A node that dies (power, kernel, its link) sends nothing.  Flux finds out by
its own clock: flux-core 0.88 closes a TBON connection whose data goes
unacknowledged for `tbon.tcp_user_timeout`, 20 s by default
(src/modules/overlay/ovconf.c, applied as ZMQ_TCP_MAXRT in children.c and
parent.c), and marks the peer `lost`; job-exec then ends the cell's job with
a `node failure` exception (src/modules/job-exec/bulkexec.c).  The driver
frames the cell's end with the ranks `flux overlay status` shows lost
(templates/nested_driver.sh.j2, `lost_ranks`).

The cluster is much slower: the pod shows Running until the node controller's
grace period has passed and then the `node.kubernetes.io/unreachable`
toleration, 300 s by default
(https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/#taint-based-evictions);
only then is it evicted and a replacement made, which waits for a node.
Meanwhile the instance is short of a rank, so every later cell in it fails
to start: run there, a sweep burns its next cells and stops (two start
failures alike) before the replacement exists.

So the cell fails (never a timing) with the reason, and before the next
cell kary waits, at most `limit_s`, for each lost rank to have a new pod,
Running with its containers ready.  The old pod does not go away meanwhile:
Kubernetes removes no pod from an unreachable node until its Node object is
deleted, so it stays Terminating, while the Job controller makes the
replacement at once (an Indexed Job's default `podReplacementPolicy` is
TerminatingOrFailed: https://kubernetes.io/docs/concepts/workloads/controllers/job/#pod-replacement-policy;
https://kubernetes.io/docs/tasks/run-application/force-delete-stateful-set-pod/#delete-pods
on pods of an unreachable node), so one index can list two pods, in either
order: a rank is back when any of its pods is the replacement; the wait is recorded in run.json
(`node_lost`).  Then the group is deleted and the next cell starts a new one.
If the replacement does not come in time the run stops (the same command
resumes).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException

from experiments.backends.base import RunResult
from experiments.backends.kubernetes.api import ApiUnavailable
from experiments.backends.kubernetes.context import ClusterContext
from experiments.backends.kubernetes.minicluster import job_pods
from experiments.backends.kubernetes.objects import dig, pod_index

__all__ = ["NODE_LOST_WAIT_S", "Replacement", "await_replacement", "lost_ranks", "node_lost"]

Obj = dict[str, Any]

# The 300 s toleration before the pod is even evicted, then a new node's boot and
# join and the image pull (a replacement node takes a few minutes: replacements.py).
NODE_LOST_WAIT_S = 900.0


def lost_ranks(end: dict[str, Any]) -> list[int]:
    """The ranks a cell's end frame says the instance lost (empty: none)."""
    ranks = end.get("lost_ranks")
    if not isinstance(ranks, list):
        return []
    return sorted({r for r in ranks if isinstance(r, int) and not isinstance(r, bool)})


@dataclass(frozen=True)
class Replacement:
    """How the wait for the lost ranks' replacement pods went (run.json `node_lost`)."""

    ranks: list[int]
    limit_s: float
    waited_s: float
    back: bool

    def record(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _replaced(pod: Obj, first_uid: str | None) -> bool:
    """A new pod for its rank (not the one the cell ran in), Running, containers ready."""
    uid = dig(pod, "metadata", "uid") or dig(pod, "metadata", "name")
    statuses = dig(pod, "status", "containerStatuses") or []
    return (
        uid != first_uid
        and not dig(pod, "metadata", "deletionTimestamp")
        and dig(pod, "status", "phase") == "Running"
        and bool(statuses)
        and all(s.get("ready") for s in statuses)
    )


def await_replacement(
    cluster: ClusterContext,
    name: str,
    identity: dict[int, tuple[str, int]],
    ranks: list[int],
    limit_s: float,
    clock: Callable[[], float] = time.monotonic,
) -> Replacement:
    """Wait at most `limit_s` for every rank in `ranks` of MiniCluster `name` to have
    a replacement pod (see `_replaced`); `identity`: each rank's first pod uid."""
    started = clock()
    poll_s = max(0.05, min(cluster.limits.check_every_s, limit_s / 20))
    while True:
        try:
            pods = job_pods(cluster.api, cluster.namespace, name)
        except (ApiException, ApiUnavailable):
            pods = []  # an API that keeps failing: the bound still ends the wait
        back = all(
            any(
                pod_index(p, name) == r and _replaced(p, identity.get(r, (None, 0))[0])
                for p in pods
            )
            for r in ranks
        )
        waited = clock() - started
        if back or waited >= limit_s:
            return Replacement(ranks, limit_s, round(waited, 1), back)
        cluster.sleep(min(poll_s, limit_s - waited))


def node_lost(result: RunResult, name: str, cell_id: str, waited: Replacement) -> RunResult:
    """The cell's result as failed for a lost node: the reason first, no start failure
    (the next cell runs in a new group), and the wait; `stop` if it was in vain."""
    ranks = ", ".join(map(str, waited.ranks))
    why = (
        f"rank {ranks} of MiniCluster {name} stopped answering during cell {cell_id} "
        "(node lost: Flux lost the rank, while its pod may show Running until the "
        "cluster evicts it)"
    )
    provenance = {**result.provenance, "node_lost": waited.record()}
    provenance.pop("start_failure", None)
    stop = None
    if not waited.back:
        stop = (
            f"rank {ranks}'s replacement pod of MiniCluster {name} was not Ready "
            f"{waited.limit_s:g} s after cell {cell_id} lost its node: the same command "
            "resumes the run"
        )
    return dataclasses.replace(
        result,
        error="; ".join(e for e in (why, result.error) if e),
        provenance=provenance,
        start_failure=None,
        stop=stop,
    )
