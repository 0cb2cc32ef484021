"""What a cloud provider must do for kary: create, delete, describe and list clusters.

A Provider turns a ClusterSpec into Steps (one CLI call or API call each, with
the exact text `--dry-run` prints) and answers questions about what exists.
The lifecycle (experiments/clusters/lifecycle.py) strings them together with the
guards: refuse to touch an existing cluster, delete what a failed create made,
retry a failed delete once, check that nothing is left.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from experiments.backends.k8s_api import OPERATOR_MANIFEST
from experiments.clusters.lease import Lease
from experiments.clusters.shell import Command, Shell
from experiments.model.cluster_spec import ClusterSpec

__all__ = [
    "OPERATOR_DEPLOYMENT",
    "OPERATOR_MANIFEST",
    "OPERATOR_NAMESPACE",
    "ClusterState",
    "DeadManStatus",
    "Provider",
    "Step",
    "default_state_dir",
    "operator_steps",
]

OPERATOR_NAMESPACE = "operator-system"
OPERATOR_DEPLOYMENT = "operator-controller-manager"
KUBECTL_WHY = "it installs the Flux Operator"
DEAD_MAN_NAME = "kary-expire"


def default_state_dir() -> Path:
    """Where kary keeps files it renders for the cloud tools (e.g. tagged eksctl configs)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "kary"


@dataclass(frozen=True)
class Step:
    """One thing `up` or `down` does. `shown` is what `--dry-run` prints for it."""

    shown: str
    run: Callable[[], None]
    # A step that makes something billable: once it has started, a failure must delete.
    creates: bool = False


def command_step(shell: Shell, command: Command, creates: bool = False) -> Step:
    def run() -> None:
        shell.run(command)

    return Step(str(command), run, creates=creates)


@dataclass(frozen=True)
class DeadManStatus:
    """When the provider-side switch takes the workers away, and how."""

    fires_at: datetime | None
    detail: str


@dataclass(frozen=True)
class ClusterState:
    """A cluster as the provider reports it."""

    name: str
    location: str
    status: str
    version: str | None = None
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def lease(self) -> Lease | None:
        return Lease.from_labels(self.labels)


def operator_steps(shell: Shell) -> list[Step]:
    """Install the Flux Operator into the current kubectl context and wait for it."""
    return [
        command_step(
            shell, Command(("kubectl", "apply", "-f", OPERATOR_MANIFEST), 300, "install operator")
        ),
        command_step(
            shell,
            Command(
                (
                    "kubectl",
                    "-n",
                    OPERATOR_NAMESPACE,
                    "rollout",
                    "status",
                    f"deployment/{OPERATOR_DEPLOYMENT}",
                    "--timeout=300s",
                ),
                360,
                "wait for the operator",
            ),
        ),
    ]


class Provider(abc.ABC):
    """One cloud's cluster lifecycle for one ClusterSpec."""

    name: str

    def __init__(self, spec: ClusterSpec, shell: Shell, state_dir: Path | None = None) -> None:
        self.spec = spec
        self.shell = shell
        self.state_dir = state_dir or default_state_dir()

    @property
    def location(self) -> str:
        """Where the cluster lives, as the provider's tools name it (region or zone)."""
        return self.spec.region

    @abc.abstractmethod
    def create_steps(self, lease: Lease, dead_man: bool, operator: bool) -> list[Step]:
        """Everything `up` runs, in order; nothing runs until the caller calls each step."""

    @abc.abstractmethod
    def tools(self, operator: bool) -> list[tuple[str, str]]:
        """(program, why) for every CLI the cluster's whole life needs, from create to delete."""

    @abc.abstractmethod
    def delete_command(self, name: str | None = None) -> Command:
        """The command that deletes cluster `name` (default: the spec's)."""

    def after_delete(self, name: str | None = None) -> None:  # noqa: B027 - optional
        """Remove helpers that outlive the cluster (e.g. a scheduler job); best effort."""

    @abc.abstractmethod
    def describe(self) -> ClusterState | None:
        """The spec's cluster, or None when it does not exist."""

    @abc.abstractmethod
    def list_clusters(self) -> list[ClusterState]:
        """Every cluster in the spec's region or zone (for reap)."""

    @abc.abstractmethod
    def leftovers(self, name: str | None = None) -> list[str]:
        """What still exists (and may bill) of cluster `name`; empty when it is gone."""

    @abc.abstractmethod
    def dead_man_status(self) -> DeadManStatus | None:
        """The provider-side switch for the spec's cluster, or None if there is none."""

    def dead_man_shown(self, lease: Lease) -> str:
        """One line for --dry-run / the plan: what the switch does and when."""
        return f"dead-man switch at {lease.expires.isoformat()}"
