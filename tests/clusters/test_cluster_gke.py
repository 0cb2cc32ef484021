"""`kary cluster` on GKE against a fake gcloud/kubectl: commands, switch, failures, reap."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from experiments.cli import app
from experiments.clusters import Lease, Shell, provider_for, up_plan
from experiments.clusters.lease import format_stamp
from experiments.model.cluster_spec import load_cluster_spec

runner = CliRunner()
GKE_30 = Path(__file__).resolve().parents[2] / "clusters" / "gke-30.yaml"
NAME = "kary-topology-30"
JOB = f"kary-expire-{NAME}"
DELETE = ["gcloud", "container", "clusters", "delete", NAME, "--zone", "us-central1-a", "--quiet"]


def _up(*extra: str) -> Any:
    return runner.invoke(app, ["cluster", "up", str(GKE_30), "--yes", *extra])


def test_the_plan_is_the_exact_gcloud_commands() -> None:
    lease = Lease(
        "tester",
        datetime(2026, 6, 27, 15, 30, 0, tzinfo=timezone.utc),
        datetime(2026, 6, 27, 19, 30, 0, tzinfo=timezone.utc),
    )
    lines = up_plan(provider_for(load_cluster_spec(GKE_30), Shell()), lease)
    assert lines == [
        f"  gcloud scheduler jobs create http {JOB} --location us-central1 --schedule "
        "'30 19 27 6 *' --time-zone Etc/UTC --uri https://container.googleapis.com/v1/projects/"
        f"PROJECT/locations/us-central1-a/clusters/{NAME}/nodePools/default-pool:setSize "
        "--http-method POST --message-body '{\"nodeCount\": 0}' --oauth-service-account-email "
        "PROJECT_NUMBER-compute@developer.gserviceaccount.com --oauth-token-scope "
        "https://www.googleapis.com/auth/cloud-platform --description 'kary dead-man switch: "
        f"{NAME} expires 2026-06-27T19:30:00+00:00'   # dead-man switch",
        f"  gcloud container clusters create {NAME} --zone us-central1-a --num-nodes 30 "
        "--machine-type c2d-standard-32 --placement-type=COMPACT --threads-per-core=1 "
        "--enable-gvnic --disk-size 200 --disk-type pd-balanced --labels "
        "managed-by=kary,owner=tester,created=20260627t153000z,"
        "expires=20260627t193000z --quiet",
        f"  gcloud container clusters get-credentials {NAME} --zone us-central1-a",
        "  kubectl apply -f https://raw.githubusercontent.com/flux-framework/flux-operator/0d75cef855dee5351d68e32ec139a70e892b5268/"
        "examples/dist/flux-operator.yaml",
        "  kubectl -n operator-system rollout status deployment/operator-controller-manager "
        "--timeout=300s",
        f"  on failure or Ctrl-C: {' '.join(DELETE)}",
    ]


def test_up_arms_the_switch_first_then_creates_and_down_removes_both(
    fake_cloud: Any, clock: Any
) -> None:
    result = _up("--max-hours", "3")
    assert result.exit_code == 0, result.output
    state = fake_cloud.state()
    cluster, job = state["gke"][NAME], state["jobs"][JOB]
    # The switch was armed before the cluster was made: it was there when the create came.
    assert cluster["switches_at_create"] == [JOB]
    assert cluster["status"] == "RUNNING"
    lease = Lease.from_labels(cluster["labels"])
    assert lease is not None and lease.owner == "tester"
    # It resizes this cluster's pool to 0 when the lease ends, as the project's default
    # compute account (which the fake's IAM policy lets resize).
    assert job["uri"] == (
        "https://container.googleapis.com/v1/projects/fake-project/locations/us-central1-a/"
        f"clusters/{NAME}/nodePools/default-pool:setSize"
    )
    assert job["schedule"] == "30 18 27 6 *" and job["state"] == "ENABLED"
    assert job["serviceAccount"] == "123456789012-compute@developer.gserviceaccount.com"
    assert state["kubecontext"] == NAME
    assert fake_cloud.state()["operator"] == [NAME]
    status = runner.invoke(app, ["cluster", "status", str(GKE_30)])
    assert status.exit_code == 0, status.output
    lines = status.stdout.splitlines()
    assert lines[0] == f"cluster {NAME} (gke, us-central1-a): RUNNING, Kubernetes 1.33.1-gke.1"
    assert lease.created == clock.now
    clock.advance(minutes=90)  # status counts from kary's clock, not the machine's
    assert lines[2] == (
        "dead-man switch: fires 2026-06-27 18:30 UTC (in 3 h 0 min): "
        f"Cloud Scheduler job {JOB} (ENABLED) resizes default-pool to 0"
    )
    later = runner.invoke(app, ["cluster", "status", str(GKE_30)]).stdout.splitlines()
    assert later[1] == (
        "owner tester · created 2026-06-27 15:30 UTC (1 h 30 min ago) · "
        "expires 2026-06-27 18:30 UTC (in 1 h 30 min)"
    )
    assert later[2].startswith("dead-man switch: fires 2026-06-27 18:30 UTC (in 1 h 30 min): ")
    assert later[3] == (
        "cost: $44.51/h (30 x c2d-standard-32 at $1.4528/h + control plane $0.10/h + disks "
        "30 x 200 GiB pd-balanced at $0.0274/h); about $66.76 so far"
    )
    down = runner.invoke(app, ["cluster", "down", str(GKE_30)])
    assert down.exit_code == 0, down.output
    # Both are gone: the cluster and its switch.
    assert fake_cloud.state()["gke"] == {} and fake_cloud.state()["jobs"] == {}
    assert fake_cloud.running() == []


def test_a_service_account_can_be_given(fake_cloud: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KARY_GKE_SERVICE_ACCOUNT", "reaper@p.iam.gserviceaccount.com")
    monkeypatch.setenv("KARY_FAKE_SA_MEMBER", "reaper@p.iam.gserviceaccount.com")
    assert _up("--no-operator").exit_code == 0
    assert [c[1:3] for c in fake_cloud.calls("gcloud")].count(["projects", "describe"]) == 0
    assert fake_cloud.state()["jobs"][JOB]["serviceAccount"] == "reaper@p.iam.gserviceaccount.com"


def test_a_create_that_fails_half_way_deletes_the_cluster_and_the_switch(fake_cloud: Any) -> None:
    fake_cloud.fail("GCLOUD_CREATE", "fail-halfway")
    fake_cloud.fail("GCLOUD_DELETE", "fail-once")
    result = _up()
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1].endswith(
        "Insufficient regional quota: C2D_CPUS.; what was made is deleted"
    )
    deletes = [
        c for c in fake_cloud.calls("gcloud") if c[1:4] == ["container", "clusters", "delete"]
    ]
    assert deletes == [DELETE, DELETE]
    assert fake_cloud.running() == []


def test_a_scheduler_that_refuses_stops_before_any_cluster_exists(fake_cloud: Any) -> None:
    fake_cloud.fail("SCHEDULER", "fail")
    result = _up()
    assert result.exit_code == 2
    assert "Cloud Scheduler API has not been used in project fake-project" in result.stderr
    creates = [
        c for c in fake_cloud.calls("gcloud") if c[1:4] == ["container", "clusters", "create"]
    ]
    assert creates == []
    assert fake_cloud.running() == []


def test_a_disabled_scheduler_api_is_found_before_anything_is_made(fake_cloud: Any) -> None:
    fake_cloud.fail("SCHEDULER_API", "disabled")
    result = _up()
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        "kary: error: the Cloud Scheduler API is not enabled in project fake-project, and the "
        "dead-man switch is a Cloud Scheduler job: `gcloud services enable "
        "cloudscheduler.googleapis.com --project fake-project` (--no-dead-man-switch skips it)"
    )
    made = [c[1:4] for c in fake_cloud.calls("gcloud") if c[3:4] == ["create"]]
    assert made == []  # neither the switch nor the cluster
    assert fake_cloud.running() == []


@pytest.mark.parametrize("roles", ["roles/viewer,roles/container.developer", ""])
def test_a_switch_account_that_may_not_resize_is_refused_before_anything_is_made(
    fake_cloud: Any, roles: str
) -> None:
    # Else the 403 comes at the lease's end, when nobody is looking, and nodes bill on.
    fake_cloud.fail("SA_ROLES", roles)
    result = _up()
    assert result.exit_code == 2
    account = "123456789012-compute@developer.gserviceaccount.com"
    assert result.stderr.splitlines()[-1] == (
        f"kary: error: the dead-man switch's service account {account} has none of "
        "roles/container.admin, roles/container.clusterAdmin, roles/editor, roles/owner in "
        "project fake-project: its resize at the lease's end would fail (403). Grant one "
        "(`gcloud projects add-iam-policy-binding fake-project "
        f"--member=serviceAccount:{account} --role=roles/container.clusterAdmin`) or set "
        "KARY_GKE_SERVICE_ACCOUNT to an account that has one"
    )
    assert [c for c in fake_cloud.calls("gcloud") if c[3:4] == ["create"]] == []


def test_without_the_switch_its_checks_are_not_asked(fake_cloud: Any) -> None:
    fake_cloud.fail("SCHEDULER_API", "disabled")
    assert _up("--no-operator", "--no-dead-man-switch").exit_code == 0
    assert not any(c[1:3] == ["services", "list"] for c in fake_cloud.calls("gcloud"))


def test_status_says_when_the_switchs_last_attempt_failed(fake_cloud: Any) -> None:
    assert _up("--no-operator").exit_code == 0
    fake_cloud.fail("JOB_STATUS", '{"code": 7, "message": "Permission denied"}')
    result = runner.invoke(app, ["cluster", "status", str(GKE_30)])
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.stdout.splitlines() if x.startswith("dead-man switch:")]
    assert line.endswith(
        "resizes default-pool to 0; its last attempt FAILED (code 7: Permission denied): "
        "the workers were not taken away"
    )


def test_a_delete_that_keeps_failing_is_reported(fake_cloud: Any) -> None:
    assert _up("--no-operator").exit_code == 0
    fake_cloud.fail("GCLOUD_DELETE", "fail-always")
    result = runner.invoke(app, ["cluster", "down", str(GKE_30)])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"kary: error: could not delete {NAME}: `{' '.join(DELETE)}` failed (exit 1): "
        "ERROR: (gcloud.container.clusters.delete) Some requests did not succeed: operation is "
        f"already in progress. Still there: GKE cluster {NAME} (RUNNING). It bills until it is "
        f"gone: run `{' '.join(DELETE)}` again"
    )


def test_reap_deletes_expired_clusters_of_this_owner_and_their_switches(
    fake_cloud: Any, clock: Any
) -> None:
    now = clock.now

    def lease(owner: str, hours_left: float) -> dict[str, str]:
        return {
            "managed-by": "kary",
            "owner": owner,
            "created": format_stamp(now - timedelta(hours=4)),
            "expires": format_stamp(now + timedelta(hours=hours_left)),
        }

    state = fake_cloud.state()
    for name, labels in {
        "old": lease("tester", -1),
        "new": lease("tester", 1),
        "theirs": lease("other", -1),
    }.items():
        state["gke"][name] = {"zone": "us-central1-a", "status": "RUNNING", "labels": labels}
    state["jobs"]["kary-expire-old"] = {"location": "us-central1", "scheduleTime": "x"}
    fake_cloud.write_state(state)
    result = runner.invoke(app, ["cluster", "reap", str(GKE_30)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == (
        "deleted 1 expired cluster(s) of tester in us-central1-a: old"
    )
    assert sorted(fake_cloud.running()) == ["gke:new", "gke:theirs"]


def test_cluster_up_dry_run_prints_commands_and_cost_and_runs_nothing(fake_cloud: Any) -> None:
    result = _up("--dry-run", "--max-hours", "2")
    assert result.exit_code == 0, result.output
    out = result.stdout.splitlines()
    assert out[:2] == [
        f"kary cluster up {GKE_30}: dry run, nothing is created",
        f"gke cluster {NAME} in us-central1-a: 30 x c2d-standard-32",
    ]
    assert out[2].startswith("lease: managed-by=kary owner=tester created=")
    assert out[-4:-2] == [
        "cost: $44.51/h (30 x c2d-standard-32 at $1.4528/h + control plane $0.10/h + disks "
        "30 x 200 GiB pd-balanced at $0.0274/h; prices as of 2025-07-01)",
        "create: about 7 min 0 s ($5.19)",
    ]
    assert out[-1].startswith("at most $89.01 if it lives until it expires (2 h, ")
    assert fake_cloud.calls() == []


def test_cluster_down_dry_run_and_bad_files_are_one_line(fake_cloud: Any, tmp_path: Path) -> None:
    result = runner.invoke(app, ["cluster", "down", str(GKE_30), "--dry-run"])
    assert result.stdout == (
        f"kary cluster down {GKE_30}: dry run, nothing is deleted\n  {' '.join(DELETE)}\n"
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Pod\n")
    result = runner.invoke(app, ["cluster", "up", str(bad)])
    assert (result.exit_code, result.stderr) == (
        2,
        f"kary: error: cluster file {bad}: kind must be ClusterConfig (eksctl) or GKECluster, "
        "got 'Pod'\n",
    )
    result = _up("--max-hours", "0")
    assert result.stderr == "kary: error: invalid --max-hours 0: must be above 0 and at most 168\n"
    assert fake_cloud.calls() == []


def test_a_missing_auth_plugin_is_found_before_create(fake_cloud: Any) -> None:
    fake_cloud.remove("gke-gcloud-auth-plugin")
    result = _up()
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        "kary: error: gke-gcloud-auth-plugin is not on PATH (the kubeconfig gcloud writes signs "
        "in with it): install it (`gcloud components install gke-gcloud-auth-plugin`)"
    )
    # The fake gcloud records every call: none, so no create (and no dead-man switch) ran.
    assert fake_cloud.calls("gcloud") == []
    assert fake_cloud.running() == []
