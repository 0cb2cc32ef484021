"""Real clusters: EKS (eksctl) and GKE (gcloud), with a lease and a dead-man switch.

`provider_for(spec)` gives the cloud's Provider; the lifecycle functions add
the guards (see lifecycle.py).  Every CLI call (eksctl, gcloud, kubectl) goes
through `Shell`, which puts a timeout on it and redacts its output; every AWS
API call goes through boto3 in `aws_api.AwsApi`.  What kary reads of either is
checked by experiments.tool_output, so odd output is one line, not a traceback.
"""

from __future__ import annotations

from experiments.clusters.base import ClusterState, DeadManStatus, Provider, Step
from experiments.clusters.lease import DEFAULT_MAX_HOURS, Lease, current_owner
from experiments.clusters.lifecycle import (
    ReapReport,
    cluster_down,
    cluster_status,
    cluster_up,
    cost_lines,
    delete_cluster,
    down_plan,
    hourly_cost,
    provider_for,
    reap_clusters,
    terminate_as_interrupt,
    up_plan,
)
from experiments.clusters.shell import Command, CommandFailed, CommandTimedOut, Shell

__all__ = [
    "DEFAULT_MAX_HOURS",
    "ClusterState",
    "Command",
    "CommandFailed",
    "CommandTimedOut",
    "DeadManStatus",
    "Lease",
    "Provider",
    "ReapReport",
    "Shell",
    "Step",
    "cluster_down",
    "cluster_status",
    "cluster_up",
    "cost_lines",
    "current_owner",
    "delete_cluster",
    "down_plan",
    "hourly_cost",
    "provider_for",
    "reap_clusters",
    "terminate_as_interrupt",
    "up_plan",
]
