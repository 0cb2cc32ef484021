"""The EKS dead-man switch: the workers go away at expiry even if kary is gone.

A scheduled action on each node group's Auto Scaling group sets min, max and
desired to 0 at the lease's expiry.  It lives in AWS, so it fires with no
laptop, no kary process and no network from here.  The control plane
($0.10/h) stays until `kary cluster reap` or `down`; the nodes are the bill.
(GKE's equivalent is a Cloud Scheduler job, see gke.py.)
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from experiments.clusters.base import DEAD_MAN_NAME, DeadManStatus

__all__ = [
    "DeadManError",
    "SessionFactory",
    "arm_eks_switch",
    "default_session",
    "eks_node_groups",
    "eks_switch_status",
]

SessionFactory = Callable[[str], Any]


class DeadManError(Exception):
    """The switch could not be armed or read; the message is one line."""


def default_session(region: str) -> Any:
    return boto3.session.Session(region_name=region)


def eks_node_groups(raw: dict[str, Any]) -> list[tuple[str, bool]]:
    """(name, managed) for every node group of an eksctl ClusterConfig."""
    managed = [(g["name"], True) for g in raw.get("managedNodeGroups") or [] if g.get("name")]
    unmanaged = [(g["name"], False) for g in raw.get("nodeGroups") or [] if g.get("name")]
    return managed + unmanaged


def _one_line(err: Exception) -> str:
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def _groups_of(session: Any, cluster: str, group: str, managed: bool) -> list[str]:
    if managed:
        try:
            found = session.client("eks").describe_nodegroup(
                clusterName=cluster, nodegroupName=group
            )
        except ClientError as err:
            if err.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                return []  # no node group, no Auto Scaling group
            raise
        return [
            g["name"] for g in found["nodegroup"].get("resources", {}).get("autoScalingGroups", [])
        ]
    # eksctl's self-managed groups carry these tags on their Auto Scaling group.
    pages = (
        session.client("autoscaling")
        .get_paginator("describe_auto_scaling_groups")
        .paginate(
            Filters=[
                {"Name": "tag:alpha.eksctl.io/cluster-name", "Values": [cluster]},
                {"Name": "tag:alpha.eksctl.io/nodegroup-name", "Values": [group]},
            ]
        )
    )
    return [g["AutoScalingGroupName"] for page in pages for g in page["AutoScalingGroups"]]


def arm_eks_switch(
    session: Any, cluster: str, groups: list[tuple[str, bool]], expires: datetime
) -> list[str]:
    """Schedule scale-to-zero at `expires` on every node group's ASG; the ASG names."""
    armed: list[str] = []
    try:
        autoscaling = session.client("autoscaling")
        for group, managed in groups:
            names = _groups_of(session, cluster, group, managed)
            if not names:
                raise DeadManError(
                    f"could not arm the dead-man switch: node group {group} of {cluster} "
                    "has no Auto Scaling group"
                )
            for name in names:
                autoscaling.put_scheduled_update_group_action(
                    AutoScalingGroupName=name,
                    ScheduledActionName=DEAD_MAN_NAME,
                    StartTime=expires,
                    MinSize=0,
                    MaxSize=0,
                    DesiredCapacity=0,
                )
                armed.append(name)
    except (BotoCoreError, ClientError) as err:
        raise DeadManError(f"could not arm the dead-man switch: {_one_line(err)}") from None
    return armed


def eks_switch_status(
    session: Any, cluster: str, groups: list[tuple[str, bool]]
) -> DeadManStatus | None:
    """The earliest scale-to-zero kary scheduled on the cluster's groups, or None."""
    found: list[tuple[datetime, str]] = []
    try:
        autoscaling = session.client("autoscaling")
        for group, managed in groups:
            for name in _groups_of(session, cluster, group, managed):
                actions = autoscaling.describe_scheduled_actions(
                    AutoScalingGroupName=name, ScheduledActionNames=[DEAD_MAN_NAME]
                )["ScheduledUpdateGroupActions"]
                found += [(a["StartTime"], f"{group} ({name})") for a in actions]
    except (BotoCoreError, ClientError) as err:
        raise DeadManError(f"could not read the dead-man switch: {_one_line(err)}") from None
    if not found:
        return None
    fires_at = min(when for when, _ in found)
    where = ", ".join(sorted({what for _, what in found}))
    return DeadManStatus(fires_at, f"scales node group {where} to 0")
