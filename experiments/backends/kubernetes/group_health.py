"""One look at a nested layout's MiniCluster, and whether it is still the one its cells
started in.

A nested group runs for hours, and its pods are not forever: a node can go and
its pod be replaced, and a container can restart (the operator's Jobs restart
`OnFailure`, controllers/flux/job.go).  A replaced broker has left the
MiniCluster's instance, and a restarted rank 0 runs the driver again from its
first cell, so the log would frame cells that ran twice.  `check_identity`
remembers each rank's pod uid and restart count when first seen and raises
`GroupBroken` on any change; the layout then fails the cell and starts a new
group for the cells still to run.  `look_at` is one look: the pods, rank 0's
pod, rank 0's log as followed so far (log_follow), and why the group broke.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException

from experiments.backends.kubernetes.api import ApiUnavailable, api_message
from experiments.backends.kubernetes.context import ClusterContext
from experiments.backends.kubernetes.log_follow import LogFollower, LogLost
from experiments.backends.kubernetes.minicluster import job_pods
from experiments.backends.kubernetes.objects import (
    dig,
    eviction,
    log_container,
    pod_index,
    rank_zero,
)

__all__ = ["GroupBroken", "Look", "check_identity", "look_at"]

Obj = dict[str, Any]


class GroupBroken(Exception):
    """The group's pods or rank 0's log changed under kary: its frames cannot be trusted."""


def check_identity(name: str, identity: dict[int, tuple[str, int]], pods: list[Obj]) -> None:
    """GroupBroken when a rank's pod is not the one first seen, or its containers
    restarted: a replaced broker left the instance, and a restarted rank 0 reruns the
    driver from its first cell (the operator's Jobs restart `OnFailure`); an evicted pod
    first, by name, before its replacement is seen as one."""
    evicted = eviction(pods, name)
    if evicted is not None:
        raise GroupBroken(evicted)
    for pod in pods:
        rank = pod_index(pod, name)
        if rank is None or dig(pod, "metadata", "deletionTimestamp"):
            continue
        uid = str(dig(pod, "metadata", "uid") or dig(pod, "metadata", "name"))
        restarts = sum(
            int(status.get("restartCount") or 0)
            for status in dig(pod, "status", "containerStatuses") or []
        )
        first = identity.setdefault(rank, (uid, restarts))
        pod_name = dig(pod, "metadata", "name")
        if first[0] != uid:
            raise GroupBroken(f"rank {rank}'s pod was replaced (now {pod_name})")
        if restarts > first[1]:
            what = "its driver started over" if rank == 0 else "its broker left the instance"
            raise GroupBroken(
                f"rank {rank}'s container in pod {pod_name} restarted ({restarts} restarts): {what}"
            )


@dataclass(frozen=True)
class Look:
    """One look at a MiniCluster: its pods, rank 0's pod, and rank 0's log (or why not)."""

    pods: list[Obj]
    pod0: Obj | None
    log: str
    log_error: str | None
    # Why the group can no longer be trusted (a pod replaced or restarted, lines of the
    # log lost), else None.  A cell whose end frame kary has is still delivered.
    broken: str | None = None


def look_at(
    cluster: ClusterContext,
    name: str,
    identity: dict[int, tuple[str, int]],
    follower: LogFollower | None,
) -> tuple[Look, LogFollower | None]:
    """One look at MiniCluster `name`, and the follower of its rank 0's log (made at the
    first look that finds rank 0's pod).  API errors listing the pods propagate."""
    pods = job_pods(cluster.api, cluster.namespace, name)
    broken = None
    try:
        check_identity(name, identity, pods)
    except GroupBroken as why:
        broken = str(why)
    pod0 = rank_zero(pods, name)
    if follower is None:
        if pod0 is None:
            return Look(pods, None, "", f"no rank-0 pod of MiniCluster {name}", broken), None
        pod_name = str(dig(pod0, "metadata", "name"))
        follower = LogFollower(cluster.api, cluster.namespace, pod_name, log_container(pod0, name))
    try:
        log, error = follower.read(), None
    except LogLost as lost:
        log, error, broken = follower.text, None, broken or str(lost)
    except (ApiException, ApiUnavailable) as err:
        reason = api_message(err) if isinstance(err, ApiException) else str(err)
        log, error = follower.text, f"could not read the log of {follower.pod}: {reason}"
    return Look(pods, pod0, log, error, broken), follower
