"""GKE through gcloud: a zonal cluster from kary's GKECluster spec.

The dead-man switch is a Cloud Scheduler HTTP job, created before the cluster,
that calls the GKE API's `nodePools/default-pool:setSize` with `nodeCount: 0`
at the lease's expiry, authenticated as a service account (OAuth).  GKE has
no cluster TTL and its node pools' instance groups are managed by GKE, so a
scheduled call to GKE's own API is the closest match to EKS's scheduled
scale-to-zero: it runs in Google's cloud, needs nothing from here, and leaves
the cluster for `reap` / `down` to delete.  The service account is
$KARY_GKE_SERVICE_ACCOUNT, else the project's Compute Engine default account
(PROJECT_NUMBER-compute@developer.gserviceaccount.com), which needs
permission to resize node pools (container.clusters.update).  Before anything
is made (`preflight`), kary checks that the Cloud Scheduler API is enabled and
that the account holds a role with that permission in the project's IAM
policy; else the switch would fail with a 403 at expiry, when nobody looks.
`kary cluster status` shows a switch whose last attempt failed.
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from experiments.clusters.base import (
    DEAD_MAN_NAME,
    KUBECTL_WHY,
    ClusterState,
    DeadManStatus,
    Provider,
    Step,
    command_step,
    operator_steps,
)
from experiments.clusters.lease import Lease
from experiments.clusters.shell import Command, CommandFailed, Shell
from experiments.errors import UserError
from experiments.model.cluster_spec import ClusterSpec, GkeSpec
from experiments.tool_output import read_json, read_line

__all__ = ["GkeProvider"]

CREATE_TIMEOUT_S = 2400.0
DELETE_TIMEOUT_S = 1800.0
QUERY_TIMEOUT_S = 120.0
NODE_POOL = "default-pool"
_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
_NOT_FOUND = ("NOT_FOUND", "was not found", "Not found")
# What kary reads of gcloud's output (experiments.tool_output shapes and patterns).
_CLUSTER = {
    "name": str,
    "status?": str,
    "location?": str,
    "zone?": str,
    "currentMasterVersion?": str,
    "resourceLabels?": dict,
}
_JOB = {"scheduleTime?": str, "state?": str, "status?": {"code?": int, "message?": str}}
SCHEDULER_API = "cloudscheduler.googleapis.com"
# Predefined roles that hold container.clusters.update, which nodePools.setSize needs.
# A custom role may hold it too: kary cannot read one, so it asks for one of these.
RESIZE_ROLES = (
    "roles/container.admin",
    "roles/container.clusterAdmin",
    "roles/editor",
    "roles/owner",
)
# Project ids: 6-30 of a-z, 0-9, '-'; old ones may carry a domain prefix (example.com:proj).
_PROJECT_ID = r"(?:[a-z0-9.-]+:)?[a-z][-a-z0-9]{4,28}[a-z0-9]"


def _not_found(err: CommandFailed) -> bool:
    return any(marker in err.tail for marker in _NOT_FOUND)


def _cron_at(when: datetime) -> str:
    """A cron line that fires once a year, at the first whole minute not before `when`."""
    when = when.astimezone(timezone.utc)
    if when.second or when.microsecond:
        when = when.replace(second=0, microsecond=0) + timedelta(minutes=1)
    return f"{when.minute} {when.hour} {when.day} {when.month} *"


def _parse_rfc3339(text: str) -> datetime | None:
    """`2026-06-27T19:31:00.123456789Z` (nanoseconds allowed) -> a UTC datetime."""
    match = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)", text)
    if match is None:
        return None
    return datetime.fromisoformat(match.group(1)).replace(tzinfo=timezone.utc)


class GkeProvider(Provider):
    name = "gke"

    def __init__(self, spec: ClusterSpec, shell: Shell, state_dir: Path | None = None) -> None:
        super().__init__(spec, shell, state_dir)
        self.gke = GkeSpec.model_validate(spec.raw)
        self._project: str | None = self.gke.project
        self._account: str | None = None

    @property
    def location(self) -> str:
        return self.gke.zone

    @property
    def job_name(self) -> str:
        return f"{DEAD_MAN_NAME}-{self.spec.name}"

    def _project_flags(self) -> tuple[str, ...]:
        return ("--project", self.gke.project) if self.gke.project else ()

    def _gcloud(
        self, *args: str, timeout: float = QUERY_TIMEOUT_S, what: str = "gcloud"
    ) -> Command:
        return Command(("gcloud", *args, *self._project_flags()), timeout, what)

    def project(self, resolve: bool = True) -> str:
        """The spec's project, else gcloud's configured one (a local read); PROJECT unresolved."""
        if self._project is None and resolve:
            command = Command(("gcloud", "config", "get-value", "project"), 60, "project")
            self._project = read_line(
                str(command),
                self.shell.run(command, capture=True),
                _PROJECT_ID,
                "a project id: set project in the cluster file or run "
                "`gcloud config set project ID`",
            )
        return self._project or "PROJECT"

    def create_command(self, lease: Lease) -> Command:
        gke = self.gke
        argv = [
            "gcloud", "container", "clusters", "create", gke.name,
            "--zone", gke.zone,
            "--num-nodes", str(gke.num_nodes),
            "--machine-type", gke.machine_type,
        ]  # fmt: skip
        if gke.placement == "COMPACT":
            argv.append("--placement-type=COMPACT")
        if gke.threads_per_core is not None:
            argv.append(f"--threads-per-core={gke.threads_per_core}")
        if gke.gvnic:
            argv.append("--enable-gvnic")
        # Rank 0's pod keeps every blob and a cell's content store (model/disk.py):
        # GKE's 100 GB default boot disk is too small for flux-distribute's sizes nested.
        if gke.disk_size is not None:
            argv += ["--disk-size", str(gke.disk_size)]
        if gke.disk_type is not None:
            argv += ["--disk-type", gke.disk_type]
        # The default pool on Spot VMs: Google may take a node back at any time.
        if gke.spot:
            argv.append("--spot")
        if gke.network:
            argv += ["--network", gke.network]
        if gke.cluster_version:
            argv += ["--cluster-version", gke.cluster_version]
        labels = {**gke.labels, **lease.labels()}
        argv += ["--labels", ",".join(f"{k}={v}" for k, v in labels.items())]
        return self._gcloud(*argv[1:], "--quiet", timeout=CREATE_TIMEOUT_S, what="create")

    def _service_account(self, resolve: bool) -> str:
        account = os.environ.get("KARY_GKE_SERVICE_ACCOUNT")
        if account:
            return account
        if not resolve:
            return "PROJECT_NUMBER-compute@developer.gserviceaccount.com"
        if self._account is not None:
            return self._account
        command = Command(
            ("gcloud", "projects", "describe", self.project(), "--format=value(projectNumber)"),
            QUERY_TIMEOUT_S,
            "project number",
        )
        number = read_line(
            str(command), self.shell.run(command, capture=True), "[0-9]+", "a project number"
        )
        self._account = f"{number}-compute@developer.gserviceaccount.com"
        return self._account

    def preflight(self, dead_man: bool, operator: bool) -> None:
        """kubectl fits the cluster; the dead-man switch can run: its API is on, its
        account may resize node pools."""
        super().preflight(dead_man, operator)
        if not dead_man:
            return
        project = self.project()
        services = Command(
            (
                "gcloud", "services", "list", "--enabled", "--project", project,
                f"--filter=config.name={SCHEDULER_API}", "--format=value(config.name)",
            ),
            QUERY_TIMEOUT_S,
            "enabled services",
        )  # fmt: skip
        if SCHEDULER_API not in self.shell.run(services, capture=True).split():
            raise UserError(
                f"the Cloud Scheduler API is not enabled in project {project}, and the "
                f"dead-man switch is a Cloud Scheduler job: `gcloud services enable "
                f"{SCHEDULER_API} --project {project}` (--no-dead-man-switch skips it)"
            )
        account = self._service_account(resolve=True)
        policy = Command(
            (
                "gcloud", "projects", "get-iam-policy", project,
                "--flatten=bindings[].members", "--format=value(bindings.members,bindings.role)",
            ),
            QUERY_TIMEOUT_S,
            "IAM policy",
        )  # fmt: skip
        member = f"serviceAccount:{account}"
        roles = {
            words[1]
            for line in self.shell.run(policy, capture=True).splitlines()
            if len(words := line.split()) == 2 and words[0] == member
        }
        if not roles & set(RESIZE_ROLES):
            raise UserError(
                f"the dead-man switch's service account {account} has none of "
                f"{', '.join(RESIZE_ROLES)} in project {project}: its resize at the lease's "
                f"end would fail (403). Grant one (`gcloud projects add-iam-policy-binding "
                f"{project} --member={member} --role=roles/container.clusterAdmin`) or set "
                "KARY_GKE_SERVICE_ACCOUNT to an account that has one"
            )

    def switch_command(self, lease: Lease, resolve: bool = True) -> Command:
        uri = (
            f"https://container.googleapis.com/v1/projects/{self.project(resolve)}/locations/"
            f"{self.gke.zone}/clusters/{self.spec.name}/nodePools/{NODE_POOL}:setSize"
        )
        return self._gcloud(
            "scheduler", "jobs", "create", "http", self.job_name,
            "--location", self.gke.region,
            "--schedule", _cron_at(lease.expires),
            "--time-zone", "Etc/UTC",
            "--uri", uri,
            "--http-method", "POST",
            "--message-body", '{"nodeCount": 0}',
            "--oauth-service-account-email", self._service_account(resolve),
            "--oauth-token-scope", _SCOPE,
            "--description", f"kary dead-man switch: {self.spec.name} expires "
            f"{lease.expires.isoformat()}",
            what="dead-man switch",
        )  # fmt: skip

    def create_steps(self, lease: Lease, dead_man: bool, operator: bool) -> list[Step]:
        steps: list[Step] = []
        if dead_man:
            # Armed before the cluster exists: no window in which nodes bill unguarded.
            shown = self.switch_command(lease, resolve=False)

            def arm() -> None:
                self.shell.run(self.switch_command(lease, resolve=True))

            steps.append(Step(f"{shown}   # dead-man switch", arm, creates=True))
        steps.append(command_step(self.shell, self.create_command(lease), creates=True))
        steps.append(
            command_step(
                self.shell,
                self._gcloud(
                    "container", "clusters", "get-credentials", self.spec.name,
                    "--zone", self.gke.zone, what="credentials",
                ),
            )
        )  # fmt: skip
        if operator:
            steps += operator_steps(self.shell, self.spec.operator_image)
        return steps

    def tools(self, operator: bool) -> list[tuple[str, str]]:
        # Since GKE 1.26 kubeconfig entries authenticate through this plugin, not gcloud.
        tools = [
            ("gcloud", "it creates and deletes the cluster"),
            ("gke-gcloud-auth-plugin", "the kubeconfig gcloud writes signs in with it"),
        ]
        return tools + ([("kubectl", KUBECTL_WHY)] if operator else [])

    def dead_man_shown(self, lease: Lease) -> str:
        return str(self.switch_command(lease, resolve=False))

    def delete_command(self, name: str | None = None) -> Command:
        return self._gcloud(
            "container", "clusters", "delete", name or self.spec.name,
            "--zone", self.gke.zone, "--quiet",
            timeout=DELETE_TIMEOUT_S, what="delete",
        )  # fmt: skip

    def job_delete_command(self, name: str | None = None) -> Command:
        job = f"{DEAD_MAN_NAME}-{name or self.spec.name}"
        return self._gcloud(
            "scheduler", "jobs", "delete", job, "--location", self.gke.region, "--quiet",
            what="delete the dead-man switch",
        )  # fmt: skip

    def after_delete(self, name: str | None = None) -> None:
        try:
            self.shell.run(self.job_delete_command(name))
        except CommandFailed as err:
            if not _not_found(err):
                raise

    def _state(self, raw: dict[str, Any]) -> ClusterState:
        """A cluster as gcloud prints it, already checked to have the shape _CLUSTER."""
        return ClusterState(
            name=raw["name"],
            location=raw.get("location") or raw.get("zone") or self.gke.zone,
            status=raw.get("status") or "UNKNOWN",
            version=raw.get("currentMasterVersion") or None,
            labels={str(k): str(v) for k, v in (raw.get("resourceLabels") or {}).items()},
        )

    def _describe(self, name: str) -> ClusterState | None:
        command = self._gcloud(
            "container", "clusters", "describe", name, "--zone", self.gke.zone, "--format", "json"
        )
        try:
            out = self.shell.run(command, capture=True)
        except CommandFailed as err:
            if _not_found(err):
                return None
            raise
        return self._state(read_json(str(command), out, _CLUSTER))

    def describe(self) -> ClusterState | None:
        return self._describe(self.spec.name)

    def list_clusters(self) -> list[ClusterState]:
        command = self._gcloud(
            "container", "clusters", "list", "--zone", self.gke.zone, "--format", "json"
        )
        found = read_json(str(command), self.shell.run(command, capture=True), [_CLUSTER])
        return [self._state(raw) for raw in found]

    def leftovers(self, name: str | None = None) -> list[str]:
        state = self._describe(name or self.spec.name)
        return [] if state is None else [f"GKE cluster {state.name} ({state.status})"]

    def dead_man_status(self) -> DeadManStatus | None:
        command = self._gcloud(
            "scheduler", "jobs", "describe", self.job_name,
            "--location", self.gke.region, "--format", "json",
        )  # fmt: skip
        try:
            job = read_json(str(command), self.shell.run(command, capture=True), _JOB)
        except CommandFailed as err:
            if _not_found(err):
                return None
            return DeadManStatus(None, f"could not read the dead-man switch: {err}")
        except UserError as err:  # odd output: status still shows the rest
            return DeadManStatus(None, f"could not read the dead-man switch: {err}")
        when = job.get("scheduleTime")
        fires_at = _parse_rfc3339(when) if when else None
        detail = (
            f"Cloud Scheduler job {self.job_name} ({job.get('state') or '?'}) resizes "
            f"{NODE_POOL} to 0"
        )
        if when and fires_at is None:
            detail += f" (its scheduleTime {when!r} is not a time)"
        failed = job.get("status") or {}
        if failed.get("code"):  # google.rpc.Status of the last attempt: 0 / absent is OK
            detail += (
                f"; its last attempt FAILED (code {failed['code']}"
                + (f": {failed['message']}" if failed.get("message") else "")
                + "): the workers were not taken away"
            )
        return DeadManStatus(fires_at, detail)
