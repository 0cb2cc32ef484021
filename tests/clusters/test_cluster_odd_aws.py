"""Odd AWS answers (empty, garbage, the wrong shape) at every boto3 call: one line, exit 2.

Each answer is raw bytes that botocore's own parser reads, as it would read
AWS's (see tests/fakes/fake_aws_api.py).  Whatever kary made before the odd
answer is still deleted.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from experiments.cli import app
from experiments.clusters.aws_api import AwsApi
from experiments.clusters.deadman import DeadManError, arm_eks_switch

runner = CliRunner()
EKS_30 = Path(__file__).resolve().parents[2] / "clusters" / "eks-30.yaml"
NAME = "kary-topology-30"
EMPTY = b""
GARBAGE = b"502 Bad Gateway <html>"
ODD = {"empty": EMPTY, "garbage": GARBAGE}


def _xml(operation: str, inner: str) -> bytes:
    return (
        f"<{operation}Response><{operation}Result>{inner}</{operation}Result>"
        f"<ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></{operation}Response>"
    ).encode()


# (service, operation, an answer of the wrong shape, the call kary names in its error)
WRONG_SHAPE = {
    ("eks", "DescribeCluster"): (
        b'{"cluster": {"status": "ACTIVE"}}',
        f"`eks.describe_cluster(name='{NAME}')`",
    ),
    ("eks", "ListClusters"): (b'{"clusters": [{"name": "a"}]}', "`eks.list_clusters()`"),
    ("cloudformation", "ListStacks"): (
        _xml(
            "ListStacks",
            "<StackSummaries><member><StackName>x</StackName></member></StackSummaries>",
        ),
        "`cloudformation.list_stacks()`",
    ),
    ("eks", "DescribeNodegroup"): (
        b'{"nodegroup": {"resources": {"autoScalingGroups": [{"id": 1}]}}}',
        f"`eks.describe_nodegroup(clusterName='{NAME}', nodegroupName='workers')`",
    ),
    ("autoscaling", "DescribeScheduledActions"): (
        _xml(
            "DescribeScheduledActions",
            "<ScheduledUpdateGroupActions><member>"
            "<ScheduledActionName>kary-expire</ScheduledActionName></member>"
            "</ScheduledUpdateGroupActions>",
        ),
        "`autoscaling.describe_scheduled_actions(",
    ),
    ("autoscaling", "DescribeAutoScalingGroups"): (
        _xml(
            "DescribeAutoScalingGroups",
            "<AutoScalingGroups><member><MinSize>0</MinSize></member></AutoScalingGroups>",
        ),
        "`autoscaling.describe_auto_scaling_groups(",
    ),
}


def _one_line_error(result: Any) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    last = result.stderr.splitlines()[-1]
    assert last.startswith("kary: error: ")
    return last


def _cases(*keys: tuple[str, str]) -> list[Any]:
    cases = []
    for key in keys:
        for kind, body in [*ODD.items(), ("wrong-shape", WRONG_SHAPE[key][0])]:
            cases.append(pytest.param(key, body, id=f"{key[0]}.{key[1]}-{kind}"))
    return cases


@pytest.mark.parametrize(("key", "body"), _cases(("eks", "DescribeCluster")))
def test_describe_cluster_before_create_stops_before_anything_is_made(
    fake_cloud: Any, key: tuple[str, str], body: bytes
) -> None:
    fake_cloud.api.answer_with(*key, body)
    last = _one_line_error(runner.invoke(app, ["cluster", "up", str(EKS_30), "--yes"]))
    assert f"`eks.describe_cluster(name='{NAME}')`" in last
    assert fake_cloud.calls("eksctl") == []
    # status and down ask the same question and fail the same way.
    assert _one_line_error(runner.invoke(app, ["cluster", "status", str(EKS_30)])) == last
    assert _one_line_error(runner.invoke(app, ["cluster", "down", str(EKS_30)])) == last


@pytest.mark.parametrize(("key", "body"), _cases(("eks", "DescribeNodegroup")))
def test_an_odd_answer_while_arming_the_switch_deletes_the_new_cluster(
    fake_cloud: Any, aws: Any, key: tuple[str, str], body: bytes
) -> None:
    aws(NAME, ["workers"])
    fake_cloud.api.answer_with(*key, body)
    last = _one_line_error(
        runner.invoke(app, ["cluster", "up", str(EKS_30), "--yes", "--no-operator"])
    )
    assert last.startswith("kary: error: could not arm the dead-man switch: ")
    assert WRONG_SHAPE[key][1] in last
    assert last.endswith("(--no-dead-man-switch skips it); what was made is deleted")
    assert [c[1] for c in fake_cloud.calls("eksctl")] == ["create", "delete"]
    assert fake_cloud.running() == []


@pytest.mark.parametrize("body", [EMPTY, GARBAGE], ids=["empty", "garbage"])
def test_an_odd_answer_to_the_switch_itself_deletes_the_new_cluster(
    fake_cloud: Any, aws: Any, body: bytes
) -> None:
    # PutScheduledUpdateGroupAction answers nothing kary reads: only unparsable bytes are odd.
    aws(NAME, ["workers"])
    fake_cloud.api.answer_with("autoscaling", "PutScheduledUpdateGroupAction", body)
    last = _one_line_error(
        runner.invoke(app, ["cluster", "up", str(EKS_30), "--yes", "--no-operator"])
    )
    assert "`autoscaling.put_scheduled_update_group_action(" in last
    assert "answered something kary cannot read in us-east-2: " in last
    assert fake_cloud.running() == []


@pytest.mark.parametrize(("key", "body"), _cases(("cloudformation", "ListStacks")))
def test_an_odd_answer_while_checking_a_delete_says_it_could_not_check(
    fake_cloud: Any, key: tuple[str, str], body: bytes
) -> None:
    assert runner.invoke(app, ["cluster", "up", str(EKS_30), "--yes", "--no-dead-man-switch",
                               "--no-operator"]).exit_code == 0  # fmt: skip
    fake_cloud.api.answer_with(*key, body)
    last = _one_line_error(runner.invoke(app, ["cluster", "down", str(EKS_30)]))
    assert last.startswith(f"kary: error: could not check what is left of {NAME}: ")
    assert "`cloudformation.list_stacks()`" in last
    assert last.endswith(f"check with `kary cluster status {EKS_30}` or in the console")


@pytest.mark.parametrize(("key", "body"), _cases(("cloudformation", "ListStacks")))
def test_an_odd_answer_while_cleaning_up_a_failed_create_says_both(
    fake_cloud: Any, key: tuple[str, str], body: bytes
) -> None:
    fake_cloud.fail("EKSCTL_CREATE", "fail-halfway")
    fake_cloud.api.answer_with(*key, body)
    last = _one_line_error(runner.invoke(app, ["cluster", "up", str(EKS_30), "--yes"]))
    assert last.startswith(f"kary: error: creating cluster {NAME} failed (")
    assert "and deleting what was made did not finish: could not check what is left" in last
    # The delete itself ran; only its check could not be read.
    assert [c[1] for c in fake_cloud.calls("eksctl")] == ["create", "delete"]
    # The placement group stays while the cluster's end is unknown (it bills nothing;
    # `kary cluster down` removes it once the cluster is seen gone).
    assert fake_cloud.running() == ["placement:kary-topology-study"]


@pytest.mark.parametrize(("key", "body"), _cases(("eks", "ListClusters")))
def test_reap_with_an_odd_cluster_list_is_one_line(
    fake_cloud: Any, key: tuple[str, str], body: bytes
) -> None:
    fake_cloud.api.answer_with(*key, body)
    last = _one_line_error(runner.invoke(app, ["cluster", "reap", str(EKS_30)]))
    assert "`eks.list_clusters()`" in last
    assert fake_cloud.calls("eksctl") == []


@pytest.mark.parametrize(("key", "body"), _cases(("autoscaling", "DescribeScheduledActions")))
def test_status_with_an_odd_switch_answer_says_it_could_not_read_it(
    fake_cloud: Any, aws: Any, key: tuple[str, str], body: bytes
) -> None:
    aws(NAME, ["workers"])
    assert (
        runner.invoke(app, ["cluster", "up", str(EKS_30), "--yes", "--no-operator"]).exit_code == 0
    )
    fake_cloud.api.answer_with(*key, body)
    result = runner.invoke(app, ["cluster", "status", str(EKS_30)])
    # status reports what it could read: the switch line says why it has no time.
    assert result.exit_code == 0, result.output
    switch = result.stdout.splitlines()[2]
    assert switch.startswith("dead-man switch: could not read the dead-man switch: ")
    assert "`autoscaling.describe_scheduled_actions(" in switch


@pytest.mark.parametrize(("key", "body"), _cases(("autoscaling", "DescribeAutoScalingGroups")))
def test_self_managed_groups_with_an_odd_answer(
    fake_cloud: Any, aws: Any, key: tuple[str, str], body: bytes
) -> None:
    # eks-30.yaml has managed groups only: a self-managed group is asked for by tag.
    fake_cloud.api.answer_with(*key, body)
    api = AwsApi("us-east-2")
    expires = datetime(2026, 6, 27, 19, 30, tzinfo=timezone.utc)
    with pytest.raises(DeadManError) as caught:
        arm_eks_switch(api, NAME, [("self-managed", False)], expires)
    message = str(caught.value)
    assert message.startswith("could not arm the dead-man switch: ")
    assert "`autoscaling.describe_auto_scaling_groups(" in message
    assert "\n" not in message


def test_an_aws_cli_that_prints_nothing_is_never_called(fake_cloud: Any, aws: Any) -> None:
    """The bug report's `aws` (prints nothing, exit 0) is on PATH; up, status, down never use it."""
    aws(NAME, ["workers"])
    for args in (["up", "--yes", "--no-operator"], ["status"], ["down"]):
        result = runner.invoke(app, ["cluster", args[0], str(EKS_30), *args[1:]])
        assert result.exit_code == 0, result.output
    assert (fake_cloud.bin_dir / "aws").exists()
    assert fake_cloud.calls("aws") == []
    assert fake_cloud.running() == []


def test_listings_follow_every_page(fake_cloud: Any, clock: Any) -> None:
    """Paginated calls (EKS ListClusters, CloudFormation ListStacks) read past the first page."""
    state = fake_cloud.state()
    for name in ("a", "b", "c"):
        state["eks"][name] = {"region": "us-east-2", "status": "ACTIVE", "version": "1.33",
                              "tags": {}, "nodegroups": []}  # fmt: skip
    for stack in ("eksctl-a-cluster", "eksctl-b-cluster", f"eksctl-{NAME}-cluster"):
        state["stacks"][stack] = {"region": "us-east-2", "status": "DELETE_FAILED"}
    fake_cloud.write_state(state)
    fake_cloud.api.page_size = 1
    result = runner.invoke(app, ["cluster", "reap", str(EKS_30), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert sorted(result.stdout.splitlines()[1:]) == [
        "kept a (no kary lease)", "kept b (no kary lease)", "kept c (no kary lease)",
    ]  # fmt: skip
    assert [c[2] for c in fake_cloud.calls("boto3")].count("ListClusters") == 3
    status = runner.invoke(app, ["cluster", "status", str(EKS_30)])
    assert status.stdout == (
        f"cluster {NAME} (eks, us-east-2): not found, but CloudFormation stack "
        f"eksctl-{NAME}-cluster (DELETE_FAILED) still exist\n"
    )
    assert [c[2] for c in fake_cloud.calls("boto3")].count("ListStacks") == 3


def test_aws_errors_are_one_line_with_their_code(fake_cloud: Any) -> None:
    fake_cloud.api.answer_with(
        "eks",
        "DescribeCluster",
        b'{"__type": "AccessDeniedException", "message": "User: x is not authorized"}',
        status=403,
    )
    last = _one_line_error(runner.invoke(app, ["cluster", "status", str(EKS_30)]))
    assert last == (
        f"kary: error: not allowed to call `eks.describe_cluster(name='{NAME}')` in us-east-2 "
        "(AccessDeniedException): the credentials need that IAM permission"
    )
