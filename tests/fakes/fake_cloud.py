# ruff: noqa: E501 - messages copy the real tools' one-line errors
"""Fake eksctl, aws, gcloud and kubectl for tests: record argv, keep a tiny cloud state.

Called as `fake_cloud.py PROG ARGS...` by the wrapper scripts beside it.  kary
asks AWS through boto3 (see fake_aws_api.py, which reads the same state), so
the fake `aws` only records its call and prints nothing, like the `aws` of the
bug report that once ended `kary cluster up` in a JSONDecodeError; the tests
check that nobody calls it.
Environment:
  KARY_FAKE_STATE  JSON file: which clusters, stacks and scheduler jobs "exist"
  KARY_FAKE_LOG    JSON lines: one {"prog": ..., "argv": [...]} per call
  KARY_FAKE_EKSCTL_CREATE  ok | fail-early | fail-halfway | hang
  KARY_FAKE_EKSCTL_DELETE  ok | fail-once | fail-always | partial-once
  KARY_FAKE_GCLOUD_CREATE  ok | fail-halfway | hang
  KARY_FAKE_GCLOUD_DELETE  ok | fail-once | fail-always
  KARY_FAKE_SCHEDULER      ok | fail
  KARY_FAKE_SCHEDULER_API  enabled | disabled (what `gcloud services list --enabled` shows)
  KARY_FAKE_SA_ROLES       the roles the service account holds (default roles/editor)
  KARY_FAKE_SA_MEMBER      that account (default the compute default account)
  KARY_FAKE_JOB_STATUS     JSON google.rpc.Status a scheduler job's describe shows
  KARY_FAKE_KUBECTL        ok | fail
  KARY_FAKE_KUBECTL_VERSION  what `kubectl version --client -o json` reports (default 1.35.1,
                             within kubectl's skew of the EKS cluster files' 1.35)
  KARY_FAKE_STDOUT         JSON {"PROG ARG ARG": {"text": T, "skip": N}}: calls whose argv
                           starts so, after the first N, print T and exit 0 instead
                           (odd-output tests)
  KARY_FAKE_NOW            ISO time the fakes take as now (the test's frozen clock)
Every call is first checked against the flags and subcommands the real tool
documents (cli_reference.py): anything else fails with the real tool's own
message and exit status.  Of the documented calls, only those kary makes are
understood; anything else exits 99 so a test notices.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from contextlib import contextmanager

TYPE_CHECKING = False  # typing is not loaded: every fake CLI call starts this script
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any


def _mode(name: str) -> str:
    return os.environ.get(name, "ok")


@contextmanager
def _state() -> Iterator[dict[str, Any]]:
    path = os.environ["KARY_FAKE_STATE"]
    with open(path, "a+") as handle:
        handle.seek(0)
        fcntl.flock(handle, fcntl.LOCK_EX)
        text = handle.read()
        state = json.loads(text) if text.strip() else {}
        for key in ("eks", "stacks", "gke", "jobs", "counters"):
            state.setdefault(key, {})
        try:
            yield state
        finally:  # also when a fake exits non-zero half way through
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps(state, indent=1, sort_keys=True))


def _flag(argv: list[str], name: str, default: str | None = None) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return default


def _fail(message: str, code: int = 1) -> None:
    print(message, file=sys.stderr)
    sys.exit(code)


def _count(state: dict[str, Any], key: str) -> int:
    state["counters"][key] = state["counters"].get(key, 0) + 1
    return int(state["counters"][key])


def eksctl(argv: list[str]) -> None:
    if argv[:2] == ["create", "cluster"]:
        import yaml  # only here: the other fakes start faster without it

        with open(_flag(argv, "-f") or "") as handle:
            config = yaml.safe_load(handle)
        name, region = config["metadata"]["name"], config["metadata"]["region"]
        mode = _mode("KARY_FAKE_EKSCTL_CREATE")
        if mode == "fail-early":
            _fail("Error: loading config file: invalid instance type")
        # eksctl's own checks of a group's capacity fields (its v1alpha5 validation).
        for index, group in enumerate(config.get("managedNodeGroups") or []):
            if group.get("instanceType") and group.get("instanceTypes"):
                _fail(
                    "Error: only one of instanceType or instanceTypes can be specified "
                    f"(managedNodeGroups[{index}])"
                )
        # Unmanaged groups have neither field: eksctl parses its file strictly.
        for group in config.get("nodeGroups") or []:
            for field in ("spot", "instanceTypes"):
                if field in group:
                    _fail(
                        f'Error: loading config file "{_flag(argv, "-f")}": error unmarshaling '
                        f'JSON: while decoding JSON: json: unknown field "{field}"'
                    )
        with _state() as state:
            if name in state["eks"]:
                _fail(f"Error: creating CloudFormation stack: AlreadyExistsException {name}")
            state["stacks"][f"eksctl-{name}-cluster"] = {
                "region": region,
                "status": "CREATE_IN_PROGRESS",
            }
        print(f'[i]  building cluster stack "eksctl-{name}-cluster"')
        sys.stdout.flush()
        if mode == "hang":
            time.sleep(60)
        with _state() as state:
            state["stacks"][f"eksctl-{name}-cluster"]["status"] = "CREATE_COMPLETE"
            state["eks"][name] = {
                "region": region,
                "status": "ACTIVE",
                "version": str(config["metadata"].get("version", "1.33")),
                "tags": config["metadata"].get("tags", {}),
                "nodegroups": [g["name"] for g in config.get("managedNodeGroups") or []],
                # What EKS would launch per managed group (its capacityType, instanceTypes).
                "capacity": {
                    g["name"]: {
                        "capacityType": "SPOT" if g.get("spot") else "ON_DEMAND",
                        "instanceTypes": g.get("instanceTypes") or [g.get("instanceType")],
                    }
                    for g in config.get("managedNodeGroups") or []
                },
            }
            if mode == "fail-halfway":
                for group in config.get("managedNodeGroups") or []:
                    stack = f"eksctl-{name}-nodegroup-{group['name']}"
                    state["stacks"][stack] = {"region": region, "status": "ROLLBACK_COMPLETE"}
                _fail(
                    f'Error: failed to create cluster "{name}": waiter state transitioned to Failure'
                )
            for group in config.get("managedNodeGroups") or []:
                stack = f"eksctl-{name}-nodegroup-{group['name']}"
                state["stacks"][stack] = {"region": region, "status": "CREATE_COMPLETE"}
        print(f'[✔]  EKS cluster "{name}" in "{region}" region is ready')
        return
    if argv[:2] == ["utils", "write-kubeconfig"]:
        name = _flag(argv, "--cluster")
        with _state() as state:
            if name not in state["eks"]:
                _fail(
                    f"Error: unable to describe cluster control plane: ResourceNotFoundException: No cluster found for name: {name}."
                )
            state["kubecontext"] = name
        print(f'[✔]  saved kubeconfig as "{os.environ.get("KUBECONFIG", "~/.kube/config")}"')
        return
    if argv[:2] == ["delete", "cluster"]:
        name, region = _flag(argv, "--name"), _flag(argv, "--region")
        mode = _mode("KARY_FAKE_EKSCTL_DELETE")
        with _state() as state:
            stacks = [
                s
                for s, v in state["stacks"].items()
                if s.startswith(f"eksctl-{name}-") and v["region"] == region
            ]
            if name not in state["eks"] and not stacks:
                _fail(
                    f"Error: unable to describe cluster control plane: ResourceNotFoundException: No cluster found for name: {name}."
                )
            attempt = _count(state, f"eksctl-delete-{name}")
            if mode == "fail-always" or (mode == "fail-once" and attempt == 1):
                _fail("Error: failed to delete cluster: waiter state transitioned to Failure")
            state["eks"].pop(name, None)
            if mode == "partial-once" and attempt == 1:
                # The node group stack goes, the cluster stack stays behind.
                for stack in stacks:
                    if "-nodegroup-" in stack:
                        state["stacks"].pop(stack)
                _fail(f"Error: deleting stack eksctl-{name}-cluster: DELETE_FAILED")
            for stack in stacks:
                state["stacks"].pop(stack)
        print("[✔]  all cluster resources were deleted")
        return
    _fail(f"fake eksctl: unsupported {argv}", 99)


def aws(argv: list[str]) -> None:
    """kary never calls the aws CLI: record the call (done in main), print nothing."""


def _schedule_time(cron: str) -> str:
    from datetime import datetime, timezone

    minute, hour, day, month, _ = cron.split()
    # The test's frozen clock, when it has one: the year depends on "now".
    frozen = os.environ.get("KARY_FAKE_NOW")
    now = datetime.fromisoformat(frozen) if frozen else datetime.now(timezone.utc)
    when = datetime(now.year, int(month), int(day), int(hour), int(minute), tzinfo=timezone.utc)
    if when < now:
        when = when.replace(year=now.year + 1)
    return when.strftime("%Y-%m-%dT%H:%M:%S.000000123Z")


def _gke_not_found(verb: str, name: str, zone: str | None) -> None:
    _fail(
        f"ERROR: (gcloud.container.clusters.{verb}) ResponseError: code=404, message=Not found: projects/fake-project/zones/{zone}/clusters/{name}."
    )


def gcloud(argv: list[str]) -> None:
    if argv[:3] == ["config", "get-value", "project"]:
        print("fake-project")
        return
    if argv[:2] == ["projects", "describe"]:
        print("123456789012")
        return
    if argv[:2] == ["services", "list"]:
        if os.environ.get("KARY_FAKE_SCHEDULER_API", "enabled") == "enabled":
            print("cloudscheduler.googleapis.com")
        return
    if argv[:2] == ["projects", "get-iam-policy"]:
        # --flatten=bindings[].members --format=value(bindings.members,bindings.role)
        account = "serviceAccount:" + os.environ.get(
            "KARY_FAKE_SA_MEMBER", "123456789012-compute@developer.gserviceaccount.com"
        )
        roles = os.environ.get("KARY_FAKE_SA_ROLES", "roles/editor").split(",")
        print("user:owner@example.com\troles/owner")
        for role in filter(None, roles):
            print(f"{account}\t{role}")
        print("serviceAccount:other@fake-project.iam.gserviceaccount.com\troles/container.admin")
        return
    if argv[:2] == ["container", "clusters"]:
        verb, zone = argv[2], _flag(argv, "--zone")
        if verb == "list":
            with _state() as state:
                found = [
                    {
                        "name": n,
                        "zone": c["zone"],
                        "status": c["status"],
                        "resourceLabels": c["labels"],
                        "currentMasterVersion": "1.33.1-gke.1",
                    }
                    for n, c in state["gke"].items()
                    if c["zone"] == zone
                ]
            print(json.dumps(found))
            return
        name = argv[3]
        if verb == "create":
            labels = dict(
                kv.split("=", 1) for kv in (_flag(argv, "--labels") or "").split(",") if kv
            )
            mode = _mode("KARY_FAKE_GCLOUD_CREATE")
            with _state() as state:
                if name in state["gke"]:
                    _fail(
                        f"ERROR: (gcloud.container.clusters.create) ResponseError: code=409, message=Already exists: {name}."
                    )
                state["gke"][name] = {
                    "zone": zone,
                    "status": "PROVISIONING",
                    "labels": labels,
                    "spot": "--spot" in argv,
                }
                # The dead-man switches aimed at this cluster when it was made.
                state["gke"][name]["switches_at_create"] = sorted(
                    job
                    for job, spec in state["jobs"].items()
                    if f"/clusters/{name}/" in (spec.get("uri") or "")
                )
            print(f"Creating cluster {name} in {zone}...", file=sys.stderr)
            sys.stderr.flush()
            if mode == "hang":
                time.sleep(60)
            with _state() as state:
                if mode == "fail-halfway":
                    state["gke"][name]["status"] = "ERROR"
                    _fail(
                        "ERROR: (gcloud.container.clusters.create) Operation [<Operation ...>] finished with error: Insufficient regional quota: C2D_CPUS."
                    )
                state["gke"][name]["status"] = "RUNNING"
            print(
                f"Created [https://container.googleapis.com/v1/projects/fake-project/zones/{zone}/clusters/{name}]."
            )
            return
        with _state() as state:
            cluster = state["gke"].get(name)
            if cluster is None or cluster["zone"] != zone:
                _gke_not_found(verb, name, zone)
            if verb == "describe":
                print(
                    json.dumps(
                        {
                            "name": name,
                            "zone": zone,
                            "status": cluster["status"],
                            "resourceLabels": cluster["labels"],
                            "currentMasterVersion": "1.33.1-gke.1",
                        }
                    )
                )
                return
            if verb == "get-credentials":
                state["kubecontext"] = name
                print(f"kubeconfig entry generated for {name}.", file=sys.stderr)
                return
            if verb == "delete":
                mode = _mode("KARY_FAKE_GCLOUD_DELETE")
                attempt = _count(state, f"gke-delete-{name}")
                if mode == "fail-always" or (mode == "fail-once" and attempt == 1):
                    _fail(
                        "ERROR: (gcloud.container.clusters.delete) Some requests did not succeed: operation is already in progress"
                    )
                state["gke"].pop(name)
                print(f"Deleted [{name}].", file=sys.stderr)
                return
    if argv[:3] == ["scheduler", "jobs", "create"]:
        job = argv[4]
        if _mode("KARY_FAKE_SCHEDULER") == "fail":
            _fail(
                "ERROR: (gcloud.scheduler.jobs.create.http) PERMISSION_DENIED: Cloud Scheduler API has not been used in project fake-project before or it is disabled."
            )
        schedule = _flag(argv, "--schedule") or ""
        with _state() as state:
            state["jobs"][job] = {
                "location": _flag(argv, "--location"),
                "schedule": schedule,
                "uri": _flag(argv, "--uri"),
                "serviceAccount": _flag(argv, "--oauth-service-account-email"),
                "scheduleTime": _schedule_time(schedule),
                "state": "ENABLED",
            }
        return
    if argv[:3] in (["scheduler", "jobs", "describe"], ["scheduler", "jobs", "delete"]):
        job = argv[3]
        with _state() as state:
            if job not in state["jobs"]:
                _fail(f"ERROR: (gcloud.scheduler.jobs.{argv[2]}) NOT_FOUND: Job not found.")
            if argv[2] == "delete":
                state["jobs"].pop(job)
                return
            job_status = os.environ.get("KARY_FAKE_JOB_STATUS")
            shown = {
                **state["jobs"][job],
                **({"status": json.loads(job_status)} if job_status else {}),
            }
            print(json.dumps(shown))
        return
    _fail(f"fake gcloud: unsupported {argv}", 99)


def kubectl(argv: list[str]) -> None:
    if argv[:1] == ["version"]:
        version = os.environ.get("KARY_FAKE_KUBECTL_VERSION", "1.35.1")
        major, minor, _ = version.split(".")
        client = {"major": major, "minor": minor, "gitVersion": f"v{version}"}
        print(json.dumps({"clientVersion": client, "kustomizeVersion": "v5.6.0"}, indent=2))
        return
    if _mode("KARY_FAKE_KUBECTL") == "fail":
        _fail('error: unable to recognize "flux-operator.yaml": Unauthorized')
    with _state() as state:
        context = state.get("kubecontext")
        if argv[:1] == ["apply"]:
            state.setdefault("operator", []).append(context)
            print(
                "customresourcedefinition.apiextensions.k8s.io/miniclusters.flux-framework.org created"
            )
            return
    if "rollout" in argv:
        print('deployment "operator-controller-manager" successfully rolled out')
        return
    if "set" in argv and "image" in argv:
        print("deployment.apps/operator-controller-manager image updated")
        return
    _fail(f"fake kubectl: unsupported {argv}", 99)


def _odd_stdout(prog: str, argv: list[str]) -> str | None:
    """The text KARY_FAKE_STDOUT says this call prints instead of its answer, if any."""
    odd = json.loads(os.environ.get("KARY_FAKE_STDOUT") or "{}")
    words = [prog, *argv]
    for prefix, how in odd.items():
        if words[: len(prefix.split())] == prefix.split():
            with _state() as state:
                seen = _count(state, f"odd-{prefix}")
            if seen > int(how.get("skip", 0)):
                return str(how["text"])
    return None


def main() -> None:
    import cli_reference  # beside this script, which Python puts first on sys.path

    prog, argv = sys.argv[1], sys.argv[2:]
    with open(os.environ["KARY_FAKE_LOG"], "a") as log:
        log.write(json.dumps({"prog": prog, "argv": argv}) + "\n")
    try:
        cli_reference.check(prog, argv)
    except cli_reference.Refused as refused:
        _fail(str(refused), refused.code)
    odd = _odd_stdout(prog, argv)
    if odd is not None:
        sys.stdout.write(odd)
        return
    {"eksctl": eksctl, "aws": aws, "gcloud": gcloud, "kubectl": kubectl}[prog](argv)


if __name__ == "__main__":
    main()
