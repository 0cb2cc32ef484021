"""EKS through eksctl and the aws CLI; the dead-man switch through boto3.

`eksctl create cluster -f` gets a copy of the user's ClusterConfig with kary's
lease added to metadata.tags (which eksctl puts on the cluster and its
CloudFormation stacks) and to every node group's tags.  A failed create can
leave half a stack behind (`eksctl-NAME-cluster` without its node group), so
"is anything left" also asks CloudFormation, not just EKS.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import yaml

from experiments.clusters.base import (
    ClusterState,
    DeadManStatus,
    Provider,
    Step,
    command_step,
    operator_steps,
)
from experiments.clusters.deadman import (
    DeadManError,
    SessionFactory,
    arm_eks_switch,
    default_session,
    eks_node_groups,
    eks_switch_status,
)
from experiments.clusters.lease import Lease
from experiments.clusters.shell import Command, CommandFailed, Shell
from experiments.clusterspec import ClusterSpec
from experiments.errors import UserError
from experiments.files import write_atomic

__all__ = ["EksProvider"]

CREATE_TIMEOUT_S = 3600.0
DELETE_TIMEOUT_S = 3600.0
QUERY_TIMEOUT_S = 120.0
_NOT_FOUND = "ResourceNotFoundException"
_GONE_STACK = ("DELETE_COMPLETE",)


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
        self.session_factory = session_factory or default_session

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

    def _aws(self, *args: str, timeout: float = QUERY_TIMEOUT_S) -> Command:
        return Command(
            ("aws", *args, "--region", self.spec.region, "--output", "json"), timeout, "aws"
        )

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
            command_step(self.shell, create, creates=True),
        ]
        if dead_man:
            steps.append(Step(self.dead_man_shown(lease), lambda: self._arm(lease)))
        kubeconfig = Command(
            (
                "aws",
                "eks",
                "update-kubeconfig",
                "--name",
                self.spec.name,
                "--region",
                self.spec.region,
            ),
            QUERY_TIMEOUT_S,
            "point kubectl at the cluster",
        )
        steps.append(command_step(self.shell, kubeconfig))
        if operator:
            steps += operator_steps(self.shell)
        return steps

    def dead_man_shown(self, lease: Lease) -> str:
        groups = ", ".join(name for name, _ in eks_node_groups(self.spec.raw))
        return (
            f"# dead-man switch (boto3 autoscaling put_scheduled_update_group_action): "
            f"scale node group {groups} to 0 at {lease.expires.isoformat()}"
        )

    def _arm(self, lease: Lease) -> None:
        session = self.session_factory(self.spec.region)
        try:
            arm_eks_switch(session, self.spec.name, eks_node_groups(self.spec.raw), lease.expires)
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

    def _describe(self, name: str) -> ClusterState | None:
        try:
            out = self.shell.run(self._aws("eks", "describe-cluster", "--name", name), capture=True)
        except CommandFailed as err:
            if _NOT_FOUND in err.tail:
                return None
            raise
        cluster = json.loads(out)["cluster"]
        return ClusterState(
            name=cluster["name"],
            location=self.spec.region,
            status=str(cluster.get("status", "UNKNOWN")),
            version=cluster.get("version"),
            labels=dict(cluster.get("tags") or {}),
        )

    def describe(self) -> ClusterState | None:
        return self._describe(self.spec.name)

    def list_clusters(self) -> list[ClusterState]:
        out = self.shell.run(self._aws("eks", "list-clusters"), capture=True)
        states = [self._describe(name) for name in json.loads(out).get("clusters", [])]
        return [s for s in states if s is not None]

    def leftovers(self, name: str | None = None) -> list[str]:
        name = name or self.spec.name
        left = []
        if self._describe(name) is not None:
            left.append(f"EKS cluster {name}")
        out = self.shell.run(self._aws("cloudformation", "list-stacks"), capture=True)
        for stack in json.loads(out).get("StackSummaries", []):
            if stack["StackName"].startswith(f"eksctl-{name}-") and (
                stack.get("StackStatus") not in _GONE_STACK
            ):
                left.append(f"CloudFormation stack {stack['StackName']} ({stack['StackStatus']})")
        return left

    def dead_man_status(self) -> DeadManStatus | None:
        session = self.session_factory(self.spec.region)
        try:
            return eks_switch_status(session, self.spec.name, eks_node_groups(self.spec.raw))
        except DeadManError as err:
            return DeadManStatus(None, str(err))


def _tags(lease: Lease) -> str:
    return ",".join(f"{k}={v}" for k, v in lease.labels().items())
