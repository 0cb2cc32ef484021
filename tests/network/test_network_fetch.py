"""fetch_topology over a Stubber-backed boto3 client: pages, batches, filters, errors."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError
from botocore.stub import Stubber

from experiments.errors import UserError
from experiments.network.fetch import dumps_topology, fetch_topology
from experiments.network.model import parse_instances


def _instance(
    n: int, nodes: list[str] | None = None, itype: str = "p4d.24xlarge"
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "InstanceId": f"i-{n:017x}",
        "InstanceType": itype,
        "GroupName": "pg",
        "AvailabilityZone": "us-east-1a",
        "ZoneId": "use1-az1",
    }
    entry["NetworkNodes"] = ["nn-l1", "nn-l2", f"nn-l3-{n % 2}"] if nodes is None else nodes
    return entry


def test_follows_every_page_with_max_results_100(ec2: tuple[Any, Stubber]) -> None:
    client, stubber = ec2
    first = [_instance(1), _instance(2)]
    second = [_instance(3, nodes=[], itype="m6i.large")]
    stubber.add_response(
        "describe_instance_topology",
        {"Instances": first, "NextToken": "page-2"},
        {"MaxResults": 100},
    )
    stubber.add_response(
        "describe_instance_topology",
        {"Instances": second},
        {"MaxResults": 100, "NextToken": "page-2"},
    )
    topology = fetch_topology(client)
    assert topology == {"Instances": first + second}
    # The instance without topology is kept, and reads back as such.
    assert parse_instances(topology)[2].network_nodes == ()


def test_filters_types_zones_and_groups(ec2: tuple[Any, Stubber]) -> None:
    client, stubber = ec2
    stubber.add_response(
        "describe_instance_topology",
        {"Instances": [_instance(1)]},
        {
            "MaxResults": 100,
            "GroupNames": ["pg-a", "pg-b"],
            "Filters": [
                {"Name": "instance-type", "Values": ["p4d*", "hpc7g.16xlarge"]},
                {"Name": "availability-zone", "Values": ["us-east-1a"]},
            ],
        },
    )
    topology = fetch_topology(
        client,
        instance_types=["p4d*", "hpc7g.16xlarge", "p4d*"],
        groups=["pg-a", "pg-b"],
        zones=["us-east-1a"],
    )
    assert [i["InstanceId"] for i in topology["Instances"]] == [_instance(1)["InstanceId"]]


def test_instance_ids_go_in_batches_of_100_without_max_results(ec2: tuple[Any, Stubber]) -> None:
    client, stubber = ec2
    ids = [f"i-{n:017x}" for n in range(250)]
    for start in (0, 100, 200):
        batch = ids[start : start + 100]
        stubber.add_response(
            "describe_instance_topology",
            {"Instances": [_instance(n) for n in range(start, start + len(batch))]},
            {"InstanceIds": batch},
        )
    topology = fetch_topology(client, instance_ids=ids)
    assert [i["InstanceId"] for i in topology["Instances"]] == ids


def test_ids_and_groups_batch_together_and_repeats_are_dropped(ec2: tuple[Any, Stubber]) -> None:
    client, stubber = ec2
    ids = [f"i-{n:017x}" for n in range(101)]
    # The second batch answers with an instance already seen, and pages once.
    stubber.add_response(
        "describe_instance_topology",
        {"Instances": [_instance(0)]},
        {"InstanceIds": ids[:100], "GroupNames": ["pg"]},
    )
    stubber.add_response(
        "describe_instance_topology",
        {"Instances": [_instance(0)], "NextToken": "t"},
        {"InstanceIds": ids[100:], "GroupNames": ["pg"]},
    )
    stubber.add_response(
        "describe_instance_topology",
        {"Instances": [_instance(100)]},
        {"InstanceIds": ids[100:], "GroupNames": ["pg"], "NextToken": "t"},
    )
    topology = fetch_topology(client, instance_ids=ids + ids[:3], groups=["pg"])
    assert [i["InstanceId"] for i in topology["Instances"]] == [ids[0], ids[100]]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (
            "UnauthorizedOperation",
            "not allowed to call ec2:DescribeInstanceTopology in region us-east-1 "
            "(UnauthorizedOperation): the credentials need that IAM permission",
        ),
        ("AuthFailure", "AWS refused the credentials (AuthFailure): boom"),
        (
            "InvalidInstanceID.Malformed",
            "describe-instance-topology failed in region us-east-1 "
            "(InvalidInstanceID.Malformed): boom",
        ),
    ],
)
def test_client_errors_become_one_line(ec2: tuple[Any, Stubber], code: str, expected: str) -> None:
    client, stubber = ec2
    stubber.add_client_error("describe_instance_topology", code, "boom\nsecond line")
    with pytest.raises(UserError) as err:
        fetch_topology(client, region="us-east-1")
    assert str(err.value) == expected


def test_no_credentials_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(name, raising=False)
    client = boto3.session.Session(region_name="us-east-1").client("ec2")

    def never_send(**_: Any) -> None:
        raise AssertionError("a request was about to leave the machine")

    # Signing needs credentials and comes before sending: the call must stop there.
    client.meta.events.register("before-send.ec2.*", never_send)
    with pytest.raises(UserError, match="^no AWS credentials found"):
        fetch_topology(client)


class _Unreachable:
    def get_paginator(self, name: str) -> Any:
        assert name == "describe_instance_topology"
        return self

    def paginate(self, **params: Any) -> Any:
        raise EndpointConnectionError(endpoint_url="https://ec2.example.invalid")


def test_unreachable_endpoint_is_a_user_error() -> None:
    with pytest.raises(UserError, match="^cannot reach EC2 in region eu-west-9: Could not connect"):
        fetch_topology(_Unreachable(), region="eu-west-9")


def test_dumps_matches_the_aws_cli_shape() -> None:
    topology = {"Instances": [_instance(1, nodes=[])]}
    text = dumps_topology(topology)
    assert text.endswith("}\n")
    assert json.loads(text) == topology
    assert text.startswith('{\n    "Instances": [\n        {\n            "InstanceId"')
