"""EKS placement groups: eksctl only names them; kary makes them first, deletes its own after."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from experiments.cli import app
from experiments.clusters.placement import placement_group_names
from experiments.model.cluster_spec import load_cluster_spec

runner = CliRunner()
CLUSTERS = Path(__file__).resolve().parents[2] / "clusters"
EKS_30 = CLUSTERS / "eks-30.yaml"
NAME = "kary-topology-30"
GROUP = "kary-topology-study"


def _up(*extra: str) -> Any:
    return runner.invoke(
        app,
        ["cluster", "up", str(EKS_30), "--yes", "--no-dead-man-switch", "--no-operator", *extra],
    )


def _ec2(fake_cloud: Any) -> list[str]:
    return [c[2] for c in fake_cloud.calls("boto3") if c[1] == "ec2"]


def test_every_placement_group_the_cluster_files_name_is_found() -> None:
    names = {
        path.name: placement_group_names(load_cluster_spec(path).raw)
        for path in sorted(CLUSTERS.glob("eks-*.yaml"))
    }
    assert names == {
        "eks-256.yaml": [],
        "eks-30-spot.yaml": [f"{GROUP}-spot"],
        "eks-30.yaml": [GROUP],
        "eks-6.yaml": [GROUP],
        "eks-p5-efa.yaml": ["kary-p5-efa"],
    }


def test_the_group_is_made_before_eksctl_and_named_in_the_up_plan(fake_cloud: Any) -> None:
    dry = runner.invoke(app, ["cluster", "up", str(EKS_30), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert (
        f"  # placement group {GROUP} (boto3 ec2 create_placement_group, strategy cluster): "
        "created if missing, deleted after the cluster; an existing one is used as it is"
    ) in dry.stdout.splitlines()
    assert fake_cloud.calls() == []
    result = _up()
    assert result.exit_code == 0, result.output
    order = [c[0] if c[0] != "boto3" else c[2] for c in fake_cloud.calls()]
    assert order.index("CreatePlacementGroup") < order.index("eksctl")
    assert fake_cloud.placement.groups[GROUP]["Strategy"] == "cluster"
    # down deletes the group it made, once the cluster is gone.
    down = runner.invoke(app, ["cluster", "down", str(EKS_30)])
    assert down.exit_code == 0, down.output
    assert fake_cloud.placement.groups == {} and fake_cloud.placement.deleted == [GROUP]
    assert fake_cloud.state()["eks"] == {}


def test_a_failed_create_deletes_the_group_it_made(fake_cloud: Any) -> None:
    fake_cloud.fail("EKSCTL_CREATE", "fail-early")
    result = _up()
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1].endswith("what was made is deleted")
    # The group was made, and is gone again.
    assert fake_cloud.placement.deleted == [GROUP] and fake_cloud.placement.groups == {}
    assert fake_cloud.running() == []


def test_a_group_that_exists_is_used_and_never_deleted(fake_cloud: Any) -> None:
    fake_cloud.placement.add(GROUP)  # someone's, or the sister cluster eks-6's
    assert _up().exit_code == 0
    assert "CreatePlacementGroup" not in _ec2(fake_cloud)
    down = runner.invoke(app, ["cluster", "down", str(EKS_30)])
    assert down.exit_code == 0, down.output
    assert list(fake_cloud.placement.groups) == [GROUP] and fake_cloud.placement.deleted == []


def test_a_group_being_deleted_is_one_line_before_anything_bills(fake_cloud: Any) -> None:
    fake_cloud.placement.add(GROUP, state="deleting")
    result = _up()
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1].startswith(f"kary: error: placement group {GROUP} is ")
    assert "deleting: wait until it is gone" in result.stderr
    assert not [c for c in fake_cloud.calls("eksctl") if c[1] == "create"]


def test_a_group_still_in_use_is_a_warning_after_the_cluster_is_gone(fake_cloud: Any) -> None:
    assert _up().exit_code == 0
    fake_cloud.placement.fail("DeletePlacementGroup", "InvalidPlacementGroup.InUse")
    down = runner.invoke(app, ["cluster", "down", str(EKS_30)])
    assert down.exit_code == 0, down.output
    warning = [line for line in down.stderr.splitlines() if "warning" in line]
    assert len(warning) == 1 and "InvalidPlacementGroup.InUse" in warning[0]
    assert f"aws ec2 delete-placement-group --group-name {GROUP} --region us-east-2" in warning[0]
    assert fake_cloud.state()["eks"] == {}
