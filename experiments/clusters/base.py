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

from experiments.clusters.lease import Lease
from experiments.clusters.shell import Command, Shell
from experiments.errors import UserError
from experiments.model.cluster_spec import ClusterSpec
from experiments.model.operator import (
    OPERATOR_CONTAINER,
    OPERATOR_DEPLOYMENT,
    OPERATOR_MANIFEST,
    OPERATOR_NAMESPACE,
)
from experiments.tool_output import read_json

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


# kubectl is supported within one minor version (older or newer) of kube-apiserver
# (the Kubernetes version skew policy).
KUBECTL_SKEW = 1
_KUBECTL_VERSION = {"clientVersion": {"major": str, "minor": str, "gitVersion?": str}}


def check_kubectl_skew(shell: Shell, cluster_version: str) -> str:
    """kubectl's version, or a UserError when it is too far from `cluster_version` (1.33)."""
    command = Command(("kubectl", "version", "--client", "-o", "json"), 60, "kubectl version")
    client = read_json(str(command), shell.run(command, capture=True), _KUBECTL_VERSION)
    found = client["clientVersion"]
    major, minor = _number(found["major"]), _number(found["minor"])
    parts = [*cluster_version.split("."), ""][:2]
    want_major, want_minor = _number(parts[0]), _number(parts[1])
    shown = str(found.get("gitVersion") or f"v{found['major']}.{found['minor']}")
    if major is None or minor is None or want_major is None or want_minor is None:
        return shown  # a version kary cannot read: kubectl itself will say
    if major != want_major or abs(minor - want_minor) > KUBECTL_SKEW:
        raise UserError(
            f"kubectl {shown} is more than {KUBECTL_SKEW} minor version from Kubernetes "
            f"{cluster_version}, the skew kubectl supports, and it installs the Flux Operator: "
            f"install kubectl {want_major}.{want_minor - KUBECTL_SKEW} to "
            f"{want_major}.{want_minor + KUBECTL_SKEW} (https://kubernetes.io/docs/tasks/tools/)"
        )
    return shown


def _number(text: str) -> int | None:
    """`33` or `33+` (as some vendors' builds say) -> 33."""
    digits = "".join(ch for ch in str(text) if ch.isdigit())
    return int(digits) if digits else None


def operator_steps(shell: Shell, pin: str | None = None) -> list[Step]:
    """Install the Flux Operator into the current kubectl context and wait for it.

    `pin` (the cluster file's kary/operator-image, by digest) replaces the manifest's
    controller image, `:latest` pulled Always, before the wait: the rollout then waits
    for the pinned build.  Without one, the controller stays on `:latest` and a billed
    run refuses it (backends/kubernetes/backend.py)."""

    def kubectl(args: tuple[str, ...], timeout: int, what: str) -> Step:
        return command_step(shell, Command(("kubectl", *args), timeout, what))

    deployment = f"deployment/{OPERATOR_DEPLOYMENT}"
    in_namespace = ("-n", OPERATOR_NAMESPACE)
    pinning = [
        kubectl(
            (*in_namespace, "set", "image", deployment, f"{OPERATOR_CONTAINER}={pin}"),
            60,
            "pin the operator",
        )
    ]
    return [
        kubectl(("apply", "-f", OPERATOR_MANIFEST), 300, "install operator"),
        *(pinning if pin else []),
        kubectl(
            (*in_namespace, "rollout", "status", deployment, "--timeout=300s"),
            360,
            "wait for the operator",
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

    def preflight(self, dead_man: bool, operator: bool) -> None:
        """Read-only checks that what create_steps makes will work, before any of it
        is made (a UserError says what to fix).  Here: kubectl's version against the
        cluster's, when kubectl installs the operator."""
        if operator and self.spec.kubernetes_version:
            check_kubectl_skew(self.shell, self.spec.kubernetes_version)

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
