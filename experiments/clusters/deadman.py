"""The EKS dead-man switch: the workers go away at expiry even if kary is gone.

A scheduled action on each node group's Auto Scaling group sets min, max and
desired to 0 at the lease's expiry.  It lives in AWS, so it fires with no
laptop, no kary process and no network from here.  The control plane
($0.10/h) stays until `kary cluster reap` or `down`; the nodes are the bill.
(GKE's equivalent is a Cloud Scheduler job, see gke.py.)
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from experiments.clusters.aws_api import AwsApi
from experiments.clusters.base import DEAD_MAN_NAME, DeadManStatus
from experiments.errors import UserError

__all__ = [
    "DeadManError",
    "arm_eks_switch",
    "eks_node_groups",
    "eks_switch_status",
]

# What kary reads of each answer (experiments.tool_output shapes).
_NODEGROUP = {"nodegroup": {"resources?": {"autoScalingGroups?": [{"name": str}]}}}
_ASG_PAGE = {"AutoScalingGroups": [{"AutoScalingGroupName": str}]}
_ACTIONS = {"ScheduledUpdateGroupActions": [{"StartTime": datetime}]}


class DeadManError(Exception):
    """The switch could not be armed or read; the message is one line."""


def eks_node_groups(raw: dict[str, Any]) -> list[tuple[str, bool]]:
    """(name, managed) for every node group of an eksctl ClusterConfig."""
    managed = [(g["name"], True) for g in raw.get("managedNodeGroups") or [] if g.get("name")]
    unmanaged = [(g["name"], False) for g in raw.get("nodeGroups") or [] if g.get("name")]
    return managed + unmanaged


def _groups_of(api: AwsApi, cluster: str, group: str, managed: bool) -> list[str]:
    if managed:
        found = api.call(
            "eks",
            "describe_nodegroup",
            _NODEGROUP,
            missing=("ResourceNotFoundException",),  # no node group, no Auto Scaling group
            clusterName=cluster,
            nodegroupName=group,
        )
        if found is None:
            return []
        resources = found["nodegroup"].get("resources") or {}
        return [g["name"] for g in resources.get("autoScalingGroups") or []]
    # eksctl's self-managed groups carry these tags on their Auto Scaling group.
    pages = api.pages(
        "autoscaling",
        "describe_auto_scaling_groups",
        _ASG_PAGE,
        Filters=[
            {"Name": "tag:alpha.eksctl.io/cluster-name", "Values": [cluster]},
            {"Name": "tag:alpha.eksctl.io/nodegroup-name", "Values": [group]},
        ],
    )
    return [g["AutoScalingGroupName"] for page in pages for g in page["AutoScalingGroups"]]


def arm_eks_switch(
    api: AwsApi, cluster: str, groups: list[tuple[str, bool]], expires: datetime
) -> list[str]:
    """Schedule scale-to-zero at `expires` on every node group's ASG; the ASG names."""
    armed: list[str] = []
    try:
        for group, managed in groups:
            names = _groups_of(api, cluster, group, managed)
            if not names:
                raise DeadManError(
                    f"could not arm the dead-man switch: node group {group} of {cluster} "
                    "has no Auto Scaling group"
                )
            for name in names:
                api.call(
                    "autoscaling",
                    "put_scheduled_update_group_action",
                    dict,
                    AutoScalingGroupName=name,
                    ScheduledActionName=DEAD_MAN_NAME,
                    StartTime=expires,
                    MinSize=0,
                    MaxSize=0,
                    DesiredCapacity=0,
                )
                armed.append(name)
    except UserError as err:  # an AWS failure or an odd answer, already one line
        raise DeadManError(f"could not arm the dead-man switch: {err}") from None
    return armed


def eks_switch_status(
    api: AwsApi, cluster: str, groups: list[tuple[str, bool]]
) -> DeadManStatus | None:
    """The earliest scale-to-zero kary scheduled on the cluster's groups, or None."""
    found: list[tuple[datetime, str]] = []
    try:
        for group, managed in groups:
            for name in _groups_of(api, cluster, group, managed):
                actions = api.call(
                    "autoscaling",
                    "describe_scheduled_actions",
                    _ACTIONS,
                    AutoScalingGroupName=name,
                    ScheduledActionNames=[DEAD_MAN_NAME],
                )["ScheduledUpdateGroupActions"]
                found += [(a["StartTime"], f"{group} ({name})") for a in actions]
    except UserError as err:
        raise DeadManError(f"could not read the dead-man switch: {err}") from None
    if not found:
        return None
    fires_at = min(when for when, _ in found)
    where = ", ".join(sorted({what for _, what in found}))
    return DeadManStatus(fires_at, f"scales node group {where} to 0")
