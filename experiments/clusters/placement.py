"""EC2 placement groups that an eksctl ClusterConfig names: eksctl uses them, it does not make them.

eksctl copies a node group's `placement.groupName` into its launch template
(`LaunchTemplateData.Placement.GroupName`; eksctl's own test data,
pkg/cfn/builder/testdata/launch_template/placement.json) and creates no
AWS::EC2::PlacementGroup, so a group that does not exist makes every instance
of the node group fail to launch, after the control plane is already billing.
kary makes each missing group (strategy `cluster`, the one that packs nodes
close for bandwidth) before `eksctl create cluster`, tags it with the cluster
it was made for, and after that cluster is deleted deletes the groups so
tagged.  A group that already exists (someone's, or one that eks-6 and eks-30
share) is used as it is and never deleted by kary.
"""

from __future__ import annotations

from typing import Any

from experiments.clusters.aws_api import AwsApi
from experiments.errors import UserError

__all__ = ["MADE_FOR_TAG", "PlacementGroups", "placement_group_names"]

# The tag that says which cluster kary made a group for: only those are kary's to delete.
MADE_FOR_TAG = "kary/placement-for"
STRATEGY = "cluster"
# What kary reads of DescribePlacementGroups (experiments.tool_output shape).
_GROUPS = {"PlacementGroups": [{"GroupName": str, "State?": str, "Strategy?": str}]}
_DUPLICATE = ("InvalidPlacementGroup.Duplicate",)
_GONE = ("InvalidPlacementGroup.Unknown",)
_USABLE = ("available", "pending")


def placement_group_names(raw: dict[str, Any]) -> list[str]:
    """Every `placement.groupName` of the ClusterConfig's node groups, once each, in order."""
    names: list[str] = []
    for key in ("managedNodeGroups", "nodeGroups"):
        for group in raw.get(key) or []:
            placement = group.get("placement") if isinstance(group, dict) else None
            name = placement.get("groupName") if isinstance(placement, dict) else None
            if isinstance(name, str) and name and name not in names:
                names.append(name)
    return names


class PlacementGroups:
    """The placement groups of one cluster, through boto3 (AwsApi) like every other AWS call."""

    def __init__(self, aws: AwsApi, cluster: str, names: list[str]) -> None:
        self.aws = aws
        self.cluster = cluster
        self.names = names

    def shown(self) -> str:
        """The --dry-run / plan line for the step that makes them."""
        return (
            f"# placement group {', '.join(self.names)} (boto3 ec2 create_placement_group, "
            f"strategy {STRATEGY}): created if missing, deleted after the cluster; "
            "an existing one is used as it is"
        )

    def _find(self, **filters: str) -> list[dict[str, Any]]:
        found = self.aws.call(
            "ec2",
            "describe_placement_groups",
            _GROUPS,
            Filters=[{"Name": key, "Values": [value]} for key, value in filters.items()],
        )
        return list(found["PlacementGroups"])

    def ensure(self, tags: dict[str, str]) -> list[str]:
        """Make the missing groups; one line per group saying what was done."""
        done = []
        for name in self.names:
            found = self._find(**{"group-name": name})
            if found:
                state = str(found[0].get("State") or "available")
                if state not in _USABLE:
                    raise UserError(
                        f"placement group {name} is {state}: wait until it is gone, then "
                        "create the cluster again (or name another group in the cluster file)"
                    )
                done.append(f"placement group {name} exists ({state}): used as it is")
                continue
            labels = {**tags, MADE_FOR_TAG: self.cluster}
            made = self.aws.call(
                "ec2",
                "create_placement_group",
                {},
                missing=_DUPLICATE,
                GroupName=name,
                Strategy=STRATEGY,
                TagSpecifications=[
                    {
                        "ResourceType": "placement-group",
                        "Tags": [{"Key": k, "Value": v} for k, v in labels.items()],
                    }
                ],
            )
            # Duplicate: another create (e.g. a sister cluster's) made it a moment ago.
            verb = "created" if made is not None else "exists (made just now elsewhere)"
            done.append(f"placement group {name} {verb}")
        return done

    def delete_ours(self, cluster: str) -> list[str]:
        """Delete the groups kary made for `cluster`; a line for each that would not go."""
        problems = []
        for group in self._find(**{f"tag:{MADE_FOR_TAG}": cluster}):
            name = group["GroupName"]
            try:
                self.aws.call("ec2", "delete_placement_group", {}, missing=_GONE, GroupName=name)
            except UserError as err:  # e.g. InUse: a sister cluster's nodes still run in it
                problems.append(
                    f"placement group {name} was not deleted ({err}); delete it with `aws ec2 "
                    f"delete-placement-group --group-name {name} --region {self.aws.region}` "
                    "once nothing runs in it"
                )
        return problems
