"""`kary cluster` on EKS against fake eksctl/aws/kubectl and a moto AWS: every path ends clean."""

from __future__ import annotations

import os
import signal
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from typer.testing import CliRunner

from experiments.cli import app
from experiments.clusters import Lease, Shell, cluster_status, provider_for, reap_clusters
from experiments.clusters.lease import format_stamp
from experiments.model.cluster_spec import load_cluster_spec

runner = CliRunner()
EKS_30 = Path(__file__).resolve().parents[2] / "clusters" / "eks-30.yaml"
NAME = "kary-topology-30"
MANIFEST = (
    "https://raw.githubusercontent.com/flux-framework/flux-operator/0d75cef855dee5351d68e32ec139a70e892b5268/"
    "examples/dist/flux-operator.yaml"
)
# eks-30.yaml's node group names this placement group; kary makes it.
PLACEMENT = "kary-topology-study"
PLACEMENT_FILTER = f"Filters=[{{'Name': 'group-name', 'Values': ['{PLACEMENT}']}}]"
DELETE = ["eksctl", "delete", "cluster", "--name", NAME, "--region", "us-east-2", "--wait"]


def _up(*extra: str) -> Any:
    return runner.invoke(app, ["cluster", "up", str(EKS_30), "--yes", *extra])


def _deletes(fake_cloud: Any) -> list[list[str]]:
    return [c for c in fake_cloud.calls("eksctl") if c[1] == "delete"]


def test_up_creates_a_labelled_cluster_with_the_operator_and_a_dead_man_switch(
    fake_cloud: Any, aws: Any, clock: Any
) -> None:
    asgs = aws(NAME, ["workers"])
    result = _up("--max-hours", "2")
    assert result.exit_code == 0, result.output
    config = Path(os.environ["XDG_STATE_HOME"]) / "kary" / "eksctl" / f"{NAME}.yaml"
    assert [c[:4] for c in fake_cloud.calls()] == [
        ["boto3", "eks", "DescribeCluster", f"name={NAME}"],
        # kubectl within one minor version of the cluster's 1.35, before anything is made.
        ["kubectl", "version", "--client", "-o"],
        ["boto3", "ec2", "DescribePlacementGroups", PLACEMENT_FILTER],
        ["boto3", "ec2", "CreatePlacementGroup", f"GroupName={PLACEMENT}"],
        ["eksctl", "create", "cluster", "-f"],
        ["boto3", "eks", "DescribeNodegroup", f"clusterName={NAME}"],
        [
            "boto3",
            "autoscaling",
            "PutScheduledUpdateGroupAction",
            f"AutoScalingGroupName={asgs[0]}",
        ],
        ["eksctl", "utils", "write-kubeconfig", "--cluster"],
        ["kubectl", "apply", "-f", MANIFEST],
        ["kubectl", "-n", "operator-system", "rollout"],
    ]
    assert fake_cloud.calls("eksctl") == [
        ["eksctl", "create", "cluster", "-f", str(config)],
        ["eksctl", "utils", "write-kubeconfig", "--cluster", NAME, "--region", "us-east-2"],
    ]
    assert fake_cloud.state()["kubecontext"] == NAME
    # The rendered config is the user's plus the lease, on the cluster and on every group.
    rendered = yaml.safe_load(config.read_text())
    tags = rendered["metadata"]["tags"]
    assert tags["managed-by"] == "kary" and tags["owner"] == "tester"
    lease = Lease.from_labels(tags)
    assert lease is not None and lease.expires - lease.created == timedelta(hours=2)
    assert lease.created == clock.now
    assert rendered["managedNodeGroups"][0]["tags"] == tags
    assert rendered["managedNodeGroups"][0]["instanceType"] == "c5a.4xlarge"
    assert fake_cloud.state()["eks"][NAME]["tags"] == tags
    # The placement group eksctl only names: made first, strategy cluster, tagged as kary's.
    group = fake_cloud.placement.groups[PLACEMENT]
    assert group["Strategy"] == "cluster"
    assert fake_cloud.placement.tags(PLACEMENT) == {**tags, "kary/placement-for": NAME}
    # The dead-man switch: scale to zero at expiry, held by AWS.
    actions = boto3.client("autoscaling", region_name="us-east-2").describe_scheduled_actions(
        AutoScalingGroupName=asgs[0]
    )["ScheduledUpdateGroupActions"]
    sizes = [(a["MinSize"], a["MaxSize"], a["DesiredCapacity"]) for a in actions]
    assert [a["ScheduledActionName"] for a in actions] == ["kary-expire"]
    assert sizes == [(0, 0, 0)]
    assert actions[0]["StartTime"] == lease.expires
    # status shows the lease and when the switch fires.
    clock.advance(minutes=30)
    status = runner.invoke(app, ["cluster", "status", str(EKS_30)])
    assert status.exit_code == 0, status.output
    assert status.stdout.splitlines() == [
        f"cluster {NAME} (eks, us-east-2): ACTIVE, Kubernetes 1.35",
        "owner tester · created 2026-06-27 15:30 UTC (30 min 0 s ago) · "
        "expires 2026-06-27 17:30 UTC (in 1 h 30 min)",
        "dead-man switch: fires 2026-06-27 17:30 UTC (in 1 h 30 min): "
        f"scales node group workers ({asgs[0]}) to 0",
        "cost: $19.60/h (30 x c5a.4xlarge at $0.6160/h + control plane $0.10/h + disks 30 x "
        "200 GiB gp2 at $0.0274/h + NAT gateway 1 x $0.0450/h + public IPv4 31 x $0.0050/h); "
        "about $9.80 so far",
    ]
    # down removes everything.
    down = runner.invoke(app, ["cluster", "down", str(EKS_30)])
    assert down.exit_code == 0, down.output
    assert fake_cloud.calls("eksctl")[-1] == DELETE
    # Gone is checked with EKS and CloudFormation.
    assert fake_cloud.calls()[-4:-2] == [
        ["boto3", "eks", "DescribeCluster", f"name={NAME}"],
        ["boto3", "cloudformation", "ListStacks"],
    ]
    # Only then the placement group kary made for it goes.
    assert fake_cloud.calls()[-1] == [
        "boto3",
        "ec2",
        "DeletePlacementGroup",
        f"GroupName={PLACEMENT}",
    ]
    assert fake_cloud.placement.groups == {}
    assert fake_cloud.running() == []
    assert runner.invoke(app, ["cluster", "status", str(EKS_30)]).stdout == (
        f"cluster {NAME} (eks, us-east-2): not found\n"
    )


def test_a_create_that_fails_half_way_deletes_the_half_stack(fake_cloud: Any, aws: Any) -> None:
    fake_cloud.fail("EKSCTL_CREATE", "fail-halfway")
    result = _up()
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"kary: error: creating cluster {NAME} failed: `eksctl create cluster -f "
        f"{Path(os.environ['XDG_STATE_HOME']) / 'kary' / 'eksctl' / (NAME + '.yaml')}` failed "
        f'(exit 1): Error: failed to create cluster "{NAME}": waiter state transitioned to '
        "Failure; what was made is deleted"
    )
    assert "deleting what was made" in result.stderr
    assert fake_cloud.calls("eksctl")[-1] == DELETE
    assert fake_cloud.running() == []


def test_a_delete_that_fails_once_is_retried(fake_cloud: Any, aws: Any) -> None:
    fake_cloud.fail("EKSCTL_CREATE", "fail-halfway")
    fake_cloud.fail("EKSCTL_DELETE", "fail-once")
    result = _up()
    assert result.exit_code == 2
    assert "delete failed" in result.stderr and "trying once more" in result.stderr
    assert _deletes(fake_cloud) == [DELETE, DELETE]
    assert fake_cloud.running() == []


def test_a_delete_that_leaves_a_stack_is_retried(fake_cloud: Any, aws: Any) -> None:
    aws(NAME, ["workers"])
    assert _up().exit_code == 0
    fake_cloud.fail("EKSCTL_DELETE", "partial-once")
    result = runner.invoke(app, ["cluster", "down", str(EKS_30)])
    assert result.exit_code == 0, result.output
    assert _deletes(fake_cloud) == [DELETE, DELETE]
    assert fake_cloud.running() == []


def test_a_delete_that_keeps_failing_says_what_is_left_and_how_to_retry(
    fake_cloud: Any, aws: Any
) -> None:
    fake_cloud.fail("EKSCTL_CREATE", "fail-halfway")
    fake_cloud.fail("EKSCTL_DELETE", "fail-always")
    result = _up()
    assert result.exit_code == 2
    last = result.stderr.splitlines()[-1]
    assert last.startswith(f"kary: error: creating cluster {NAME} failed (`eksctl create ")
    assert f"and deleting what was made did not finish: could not delete {NAME}: " in last
    assert f"Still there: EKS cluster {NAME}, CloudFormation stack eksctl-{NAME}-cluster" in last
    assert f"run `{' '.join(DELETE)}` again" in last
    assert "Traceback" not in result.output


def test_a_create_that_hangs_is_stopped_and_deleted(
    fake_cloud: Any, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("experiments.clusters.eks.CREATE_TIMEOUT_S", 1.0)
    fake_cloud.fail("EKSCTL_CREATE", "hang")
    result = _up()
    assert result.exit_code == 2
    assert "did not finish within 1 s and was stopped" in result.stderr
    assert fake_cloud.calls("eksctl")[-1] == DELETE
    assert fake_cloud.running() == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_create_is_deleted(fake_cloud: Any, aws: Any, sig: int) -> None:
    fake_cloud.fail("EKSCTL_CREATE", "hang")
    started = threading.Event()

    def interrupt_once_create_hangs() -> None:
        # Wait for the create itself (not a fixed delay: under load the steps
        # before it can take longer than any delay), then interrupt.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not started.is_set():
            try:
                calls = fake_cloud.calls()
            except ValueError:  # a log line half written
                calls = []
            if any(call[:3] == ["eksctl", "create", "cluster"] for call in calls):
                time.sleep(0.2)
                os.kill(os.getpid(), sig)
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=interrupt_once_create_hangs, daemon=True)
    watcher.start()
    try:
        result = _up()
    finally:
        started.set()
        watcher.join()
    assert result.exit_code == 130
    assert "creating kary-topology-30 failed (interrupted); deleting what was made" in result.stderr
    assert result.stderr.splitlines()[-1] == "kary: interrupted; what was made is deleted"
    assert fake_cloud.calls("eksctl")[-1] == DELETE
    assert fake_cloud.running() == []


def test_a_dead_man_switch_that_cannot_be_armed_deletes_the_cluster(
    fake_cloud: Any, aws: Any
) -> None:
    # moto knows no node group: the ASG cannot be found.
    result = _up()
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"kary: error: could not arm the dead-man switch: node group workers of {NAME} has no "
        "Auto Scaling group (--no-dead-man-switch skips it); what was made is deleted"
    )
    assert fake_cloud.running() == []


def test_without_the_switch_and_operator_only_the_cluster_is_made(fake_cloud: Any) -> None:
    result = _up("--no-dead-man-switch", "--no-operator")
    assert result.exit_code == 0, result.output
    assert [c[:3] for c in fake_cloud.calls()] == [
        ["boto3", "eks", "DescribeCluster"],
        ["boto3", "ec2", "DescribePlacementGroups"],
        ["boto3", "ec2", "CreatePlacementGroup"],
        ["eksctl", "create", "cluster"],
        ["eksctl", "utils", "write-kubeconfig"],
    ]
    assert fake_cloud.running() == [f"eks:{NAME}", f"stack:eksctl-{NAME}-cluster",
                                    f"stack:eksctl-{NAME}-nodegroup-workers",
                                    f"placement:{PLACEMENT}"]  # fmt: skip


def test_an_operator_install_failure_deletes_the_cluster(fake_cloud: Any, aws: Any) -> None:
    aws(NAME, ["workers"])
    fake_cloud.fail("KUBECTL", "fail")
    result = _up()
    assert result.exit_code == 2
    assert "Unauthorized; what was made is deleted" in result.stderr.splitlines()[-1]
    assert fake_cloud.running() == []


def test_up_refuses_a_cluster_that_exists_and_deletes_nothing(fake_cloud: Any) -> None:
    assert _up("--no-dead-man-switch", "--no-operator").exit_code == 0
    result = _up()
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"kary: error: cluster {NAME} already exists in us-east-2 (ACTIVE); use it without "
        f"--up, or delete it first with `kary cluster down {EKS_30}`"
    )
    assert _deletes(fake_cloud) == []
    assert f"eks:{NAME}" in fake_cloud.running()


def test_down_with_nothing_there_says_so(fake_cloud: Any) -> None:
    result = runner.invoke(app, ["cluster", "down", str(EKS_30)])
    assert result.exit_code == 0
    assert result.stderr == f"kary: no cluster {NAME} in us-east-2: nothing to delete\n"
    assert fake_cloud.calls("eksctl") == []


def test_missing_eksctl_is_one_line_before_anything_is_asked(fake_cloud: Any) -> None:
    fake_cloud.remove("eksctl")
    result = _up("--no-dead-man-switch")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        "kary: error: eksctl is not on PATH (it creates and deletes the cluster): install it "
        "(https://eksctl.io/installation/)"
    )
    assert fake_cloud.calls() == []


@pytest.mark.parametrize(
    ("missing", "why"),
    [
        ("aws", "the kubeconfig eksctl writes signs in with `aws eks get-token`"),
        ("kubectl", "it installs the Flux Operator"),
    ],
)
def test_every_tool_of_the_clusters_life_is_checked_before_create(
    fake_cloud: Any, missing: str, why: str
) -> None:
    fake_cloud.remove(missing)
    result = _up("--no-dead-man-switch")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1].startswith(
        f"kary: error: {missing} is not on PATH ({why}): install it ("
    )
    assert fake_cloud.calls() == []  # nothing was asked, let alone created


def test_aws_iam_authenticator_stands_in_for_aws(fake_cloud: Any) -> None:
    # eksctl's kubeconfig takes whichever of the two is on PATH.
    fake_cloud.remove("aws")
    (fake_cloud.bin_dir / "aws-iam-authenticator").write_text("#!/bin/sh\nexit 0\n")
    (fake_cloud.bin_dir / "aws-iam-authenticator").chmod(0o755)
    assert _up("--no-dead-man-switch", "--no-operator").exit_code == 0


def test_no_aws_credentials_is_one_line_before_anything_is_made(
    fake_cloud: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    credentials = (
        "kary: error: no AWS credentials found: run `aws configure`, set AWS_PROFILE, or export "
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY\n"
    )
    result = runner.invoke(app, ["cluster", "status", str(EKS_30)])
    assert (result.exit_code, result.stderr) == (2, credentials)
    result = _up()
    assert result.exit_code == 2
    assert result.stderr.endswith(credentials)
    assert fake_cloud.calls("eksctl") == []


def _seed(fake_cloud: Any, clusters: dict[str, dict[str, str]]) -> None:
    state = fake_cloud.state()
    for name, tags in clusters.items():
        state["eks"][name] = {"region": "us-east-2", "status": "ACTIVE", "version": "1.33",
                              "tags": tags, "nodegroups": []}  # fmt: skip
        state["stacks"][f"eksctl-{name}-cluster"] = {
            "region": "us-east-2",
            "status": "CREATE_COMPLETE",
        }
    fake_cloud.write_state(state)


def _lease(now: datetime, owner: str, hours_ago: float, hours: float) -> dict[str, str]:
    created = now - timedelta(hours=hours_ago)
    return {
        "managed-by": "kary",
        "owner": owner,
        "created": format_stamp(created),
        "expires": format_stamp(created + timedelta(hours=hours)),
    }


def test_reap_deletes_only_expired_clusters_kary_made_for_this_owner(
    fake_cloud: Any, clock: Any
) -> None:
    _seed(
        fake_cloud,
        {
            "old-mine": _lease(clock.now, "tester", 5, 4),
            "fresh-mine": _lease(clock.now, "tester", 1, 4),
            "old-theirs": _lease(clock.now, "someone", 5, 4),
            "hand-made": {"team": "hpc"},
        },
    )
    dry = runner.invoke(app, ["cluster", "reap", str(EKS_30), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert dry.stdout.splitlines()[0] == (
        "would delete 1 expired cluster(s) of tester in us-east-2: old-mine"
    )
    assert fake_cloud.calls("eksctl") == []
    result = runner.invoke(app, ["cluster", "reap", str(EKS_30)])
    assert result.exit_code == 0, result.output
    out = result.stdout.splitlines()
    assert out[0] == "deleted 1 expired cluster(s) of tester in us-east-2: old-mine"
    assert sorted(out[1:]) == [
        "kept fresh-mine (expires 2026-06-27 18:30 UTC (in 3 h 0 min))",
        "kept hand-made (no kary lease)",
        "kept old-theirs (owner someone)",
    ]
    assert sorted(fake_cloud.state()["eks"]) == ["fresh-mine", "hand-made", "old-theirs"]
    assert "stack:eksctl-old-mine-cluster" not in fake_cloud.running()


def test_reap_reports_a_cluster_it_could_not_delete(fake_cloud: Any, clock: Any) -> None:
    _seed(fake_cloud, {"old-mine": _lease(clock.now, "tester", 5, 4)})
    fake_cloud.fail("EKSCTL_DELETE", "fail-always")
    spec = load_cluster_spec(EKS_30)
    report = reap_clusters(provider_for(spec, Shell()), "tester", lambda line: None)
    assert report.reaped == []
    assert report.failed[0].startswith("old-mine: could not delete old-mine: ")


def test_status_of_a_cluster_kary_did_not_make(fake_cloud: Any, aws: Any) -> None:
    _seed(fake_cloud, {NAME: {"team": "hpc"}})
    lines = cluster_status(provider_for(load_cluster_spec(EKS_30), Shell()))
    assert lines[:3] == [
        f"cluster {NAME} (eks, us-east-2): ACTIVE, Kubernetes 1.33",
        "lease: none (not created by kary; reap leaves it alone)",
        "dead-man switch: none",
    ]


def test_the_dry_run_prices_the_control_plane_for_the_day(
    fake_cloud: Any, clock: Any, tmp_path: Path
) -> None:
    # eks-30.yaml as it was before it moved to 1.35: Kubernetes 1.33, which left EKS
    # standard support on 2026-07-29 (clusters/prices.yaml).
    raw = EKS_30.read_text()
    assert raw.count('version: "1.35"') == 1
    on_1_33 = tmp_path / "eks-30.yaml"
    on_1_33.write_text(raw.replace('version: "1.35"', 'version: "1.33"'))
    clock.set(datetime(2026, 11, 25, 12, 0, tzinfo=clock.now.tzinfo))

    def cost(path: Path) -> list[str]:
        result = runner.invoke(app, ["cluster", "up", str(path), "--dry-run"])
        assert result.exit_code == 0, result.output
        return [line for line in result.stdout.splitlines() if line.startswith("cost: ")]

    # 18.48 + 0.60 + 0.8219 (30 x 200 GB x $0.10 / 730 h) + 0.045 + 0.155 = $20.10/h.
    assert cost(on_1_33) == [
        "cost: $20.10/h (30 x c5a.4xlarge at $0.6160/h + control plane $0.60/h "
        "(Kubernetes 1.33 in extended support since 2026-07-29) + disks 30 x 200 GiB gp2 at "
        "$0.0274/h + NAT gateway 1 x $0.0450/h + public IPv4 31 x $0.0050/h; prices as of "
        "2025-07-01)"
    ]
    # eks-30.yaml's own 1.35, in standard support until 2027-03-27, the same day:
    # 18.48 + 0.10 + 0.8219 + 0.045 + 0.155 = $19.60/h.
    assert cost(EKS_30) == [
        "cost: $19.60/h (30 x c5a.4xlarge at $0.6160/h + control plane $0.10/h + disks 30 x "
        "200 GiB gp2 at $0.0274/h + NAT gateway 1 x $0.0450/h + public IPv4 31 x $0.0050/h; "
        "prices as of 2025-07-01)"
    ]


# eks-30.yaml asks for Kubernetes 1.35: kubectl 1.34 to 1.36 may install the operator.
@pytest.mark.parametrize(
    ("version", "ok"), [("1.33.4", False), ("1.34.0", True), ("1.36.2", True), ("1.37.1", False)]
)
def test_kubectl_too_far_from_the_clusters_version_is_found_before_anything_is_made(
    fake_cloud: Any, aws: Any, version: str, ok: bool
) -> None:
    aws(NAME, ["workers"])
    fake_cloud.fail("KUBECTL_VERSION", version)
    result = _up("--max-hours", "2")
    if ok:
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"kary: error: kubectl v{version} is more than 1 minor version from Kubernetes 1.35, "
        "the skew kubectl supports, and it installs the Flux Operator: install kubectl 1.34 "
        "to 1.36 (https://kubernetes.io/docs/tasks/tools/)"
    )
    assert not [
        c for c in fake_cloud.calls() if "Create" in c[2] or c[1:3] == ["create", "cluster"]
    ]
    assert fake_cloud.running() == []
