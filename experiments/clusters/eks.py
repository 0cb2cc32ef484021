"""EKS: eksctl creates and deletes, boto3 asks (EKS, CloudFormation, the dead-man switch).

`eksctl create cluster -f` gets a copy of the user's ClusterConfig with kary's
lease added to metadata.tags (which eksctl puts on the cluster and its
CloudFormation stacks) and to every node group's tags.  A failed create can
leave half a stack behind (`eksctl-NAME-cluster` without its node group), so
"is anything left" also asks CloudFormation, not just EKS.  No step needs the
`aws` CLI: questions go to the AWS APIs through boto3 (experiments/clusters/
aws_api.py) and `eksctl utils write-kubeconfig` points kubectl at the cluster.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import yaml

from experiments.clusters.aws_api import AwsApi, SessionFactory
from experiments.clusters.base import (
    KUBECTL_WHY,
    ClusterState,
    DeadManStatus,
    Provider,
    Step,
    command_step,
    operator_steps,
)
from experiments.clusters.deadman import (
    DeadManError,
    arm_eks_switch,
    eks_node_groups,
    eks_switch_status,
)
from experiments.clusters.lease import Lease
from experiments.clusters.placement import PlacementGroups, placement_group_names
from experiments.clusters.shell import Command, Shell
from experiments.errors import UserError
from experiments.files import write_atomic
from experiments.model.cluster_spec import ClusterSpec

__all__ = ["EksProvider"]

CREATE_TIMEOUT_S = 3600.0
DELETE_TIMEOUT_S = 3600.0
KUBECONFIG_TIMEOUT_S = 120.0
_NOT_FOUND = ("ResourceNotFoundException",)
_GONE_STACK = ("DELETE_COMPLETE",)
# What kary reads of each answer (experiments.tool_output shapes).
_CLUSTER = {"cluster": {"name": str, "status?": str, "version?": str, "tags?": dict}}
_CLUSTER_PAGE = {"clusters": [str]}
_STACK_PAGE = {"StackSummaries": [{"StackName": str, "StackStatus": str}]}


class EksProvider(Provider):
    name = "eks"

    def __init__(
        self,
        spec: ClusterSpec,
        shell: Shell,
        state_dir: Path | None = None,
        session_factory: SessionFactory | None = None,
    ) -> None:
        super().__init__(spec, shell, state_dir)
        self.aws = AwsApi(spec.region, session_factory)
        self.placement = PlacementGroups(self.aws, spec.name, placement_group_names(spec.raw or {}))

    @property
    def config_path(self) -> Path:
        return self.state_dir / "eksctl" / f"{self.spec.name}.yaml"

    def tagged_config(self, lease: Lease) -> str:
        """The user's ClusterConfig with the lease in metadata.tags and each group's tags."""
        raw = copy.deepcopy(self.spec.raw)
        labels = lease.labels()
        raw.setdefault("metadata", {})
        raw["metadata"]["tags"] = {**(raw["metadata"].get("tags") or {}), **labels}
        for key in ("managedNodeGroups", "nodeGroups"):
            for group in raw.get(key) or []:
                group["tags"] = {**(group.get("tags") or {}), **labels}
        header = f"# Written by kary from {self.spec.path}: the lease tags are kary's.\n"
        return header + yaml.safe_dump(raw, sort_keys=False)

    def create_steps(self, lease: Lease, dead_man: bool, operator: bool) -> list[Step]:
        create = Command(
            ("eksctl", "create", "cluster", "-f", str(self.config_path)),
            CREATE_TIMEOUT_S,
            "create the cluster",
        )

        def write_config() -> None:
            write_atomic(self.config_path, self.tagged_config(lease))

        steps = [
            Step(
                f"# write {self.config_path}: {self.spec.path} + tags {_tags(lease)}", write_config
            ),
        ]
        if self.placement.names:
            # eksctl only names the group in the launch template: it must exist first.
            # creates=True: from here on a failure runs the delete, which removes the group.
            def make_groups() -> None:
                for line in self.placement.ensure(lease.labels()):
                    self.shell.echo(line)

            steps.append(Step(self.placement.shown(), make_groups, creates=True))
        steps.append(command_step(self.shell, create, creates=True))
        if dead_man:
            steps.append(Step(self.dead_man_shown(lease), lambda: self._arm(lease)))
        kubeconfig = Command(
            (
                "eksctl",
                "utils",
                "write-kubeconfig",
                "--cluster",
                self.spec.name,
                "--region",
                self.spec.region,
            ),
            KUBECONFIG_TIMEOUT_S,
            "point kubectl at the cluster",
        )
        steps.append(command_step(self.shell, kubeconfig))
        if operator:
            steps += operator_steps(self.shell, self.spec.operator_image)
        return steps

    def tools(self, operator: bool) -> list[tuple[str, str]]:
        # Every API call kary and kubectl make runs the kubeconfig's exec authenticator:
        # eksctl writes the first of aws, aws-iam-authenticator on PATH (its kubeconfig
        # package, LookupAuthenticator), so with neither the cluster would be unusable.
        signer = "aws"
        if shutil.which("aws") is None and shutil.which("aws-iam-authenticator") is not None:
            signer = "aws-iam-authenticator"
        tools = [
            ("eksctl", "it creates and deletes the cluster"),
            (signer, "the kubeconfig eksctl writes signs in with `aws eks get-token`"),
        ]
        return tools + ([("kubectl", KUBECTL_WHY)] if operator else [])

    def dead_man_shown(self, lease: Lease) -> str:
        groups = ", ".join(name for name, _ in eks_node_groups(self.spec.raw))
        return (
            f"# dead-man switch (boto3 autoscaling put_scheduled_update_group_action): "
            f"scale node group {groups} to 0 at {lease.expires.isoformat()}"
        )

    def _arm(self, lease: Lease) -> None:
        try:
            arm_eks_switch(self.aws, self.spec.name, eks_node_groups(self.spec.raw), lease.expires)
        except DeadManError as err:
            raise UserError(f"{err} (--no-dead-man-switch skips it)") from None

    def delete_command(self, name: str | None = None) -> Command:
        return Command(
            (
                "eksctl",
                "delete",
                "cluster",
                "--name",
                name or self.spec.name,
                "--region",
                self.spec.region,
                "--wait",
            ),
            DELETE_TIMEOUT_S,
            "delete the cluster",
        )

    def after_delete(self, name: str | None = None) -> None:
        problems = self.placement.delete_ours(name or self.spec.name)
        if problems:
            raise UserError("; ".join(problems))

    def _describe(self, name: str) -> ClusterState | None:
        found = self.aws.call("eks", "describe_cluster", _CLUSTER, missing=_NOT_FOUND, name=name)
        if found is None:
            return None
        cluster = found["cluster"]
        return ClusterState(
            name=cluster["name"],
            location=self.spec.region,
            status=str(cluster.get("status") or "UNKNOWN"),
            version=cluster.get("version"),
            labels={str(k): str(v) for k, v in (cluster.get("tags") or {}).items()},
        )

    def describe(self) -> ClusterState | None:
        return self._describe(self.spec.name)

    def list_clusters(self) -> list[ClusterState]:
        pages = self.aws.pages("eks", "list_clusters", _CLUSTER_PAGE)
        states = [self._describe(name) for page in pages for name in page["clusters"]]
        return [s for s in states if s is not None]

    def leftovers(self, name: str | None = None) -> list[str]:
        name = name or self.spec.name
        left = []
        if self._describe(name) is not None:
            left.append(f"EKS cluster {name}")
        for page in self.aws.pages("cloudformation", "list_stacks", _STACK_PAGE):
            for stack in page["StackSummaries"]:
                if stack["StackName"].startswith(f"eksctl-{name}-") and (
                    stack["StackStatus"] not in _GONE_STACK
                ):
                    left.append(
                        f"CloudFormation stack {stack['StackName']} ({stack['StackStatus']})"
                    )
        return left

    def dead_man_status(self) -> DeadManStatus | None:
        try:
            return eks_switch_status(self.aws, self.spec.name, eks_node_groups(self.spec.raw))
        except DeadManError as err:
            return DeadManStatus(None, str(err))


def _tags(lease: Lease) -> str:
    return ",".join(f"{k}={v}" for k, v in lease.labels().items())
