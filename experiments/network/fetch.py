"""Fetch EC2 instance topology with boto3, in the shape the AWS CLI prints.

`aws ec2 describe-instance-topology > f.json` and `kary network fetch --out
f.json` give the same `{"Instances": [...]}`, so either is an input to every
other `kary network` command.

API limits: MaxResults is at most 100 and may not be sent with InstanceIds;
InstanceIds and GroupNames take at most 100 values per call. Longer lists are
sent in batches and the results joined (first entry wins for a repeated id).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from experiments.errors import UserError

__all__ = ["API_BATCH", "aws_errors", "dumps_topology", "ec2_client", "fetch_topology"]

# The per-call limit of MaxResults, InstanceIds and GroupNames.
API_BATCH = 100

_DENIED = {"UnauthorizedOperation", "AccessDenied", "AccessDeniedException"}
_BAD_CREDENTIALS = {
    "AuthFailure",
    "InvalidClientTokenId",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "RequestExpired",
    "UnrecognizedClientException",
}


@contextmanager
def aws_errors(region: str | None) -> Iterator[None]:
    """Turn the AWS failures a user can fix into a one-line UserError."""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
    )

    where = f"region {region}" if region else "the default region"
    try:
        yield
    except (NoCredentialsError, PartialCredentialsError):
        raise UserError(
            "no AWS credentials found: run `aws configure`, set AWS_PROFILE, or export "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        ) from None
    except NoRegionError:
        raise UserError("no AWS region: pass --region (or set AWS_REGION)") from None
    except EndpointConnectionError as err:
        raise UserError(f"cannot reach EC2 in {where}: {err}") from None
    except ClientError as err:
        code = err.response.get("Error", {}).get("Code", "")
        message = err.response.get("Error", {}).get("Message", "") or str(err)
        message = message.splitlines()[0] if message else code
        if code in _DENIED:
            raise UserError(
                f"not allowed to call ec2:DescribeInstanceTopology in {where} ({code}): "
                "the credentials need that IAM permission"
            ) from None
        if code in _BAD_CREDENTIALS:
            raise UserError(f"AWS refused the credentials ({code}): {message}") from None
        raise UserError(
            f"describe-instance-topology failed in {where} ({code}): {message}"
        ) from None
    except BotoCoreError as err:
        raise UserError(f"AWS call failed in {where}: {err}") from None


def ec2_client(region: str | None) -> Any:
    """A boto3 EC2 client for `region` (None: the AWS config's default region)."""
    import boto3

    with aws_errors(region):
        return boto3.session.Session(region_name=region).client("ec2")


def _batches(values: Sequence[str]) -> list[list[str]] | list[None]:
    if not values:
        return [None]
    unique = list(dict.fromkeys(values))
    return [unique[i : i + API_BATCH] for i in range(0, len(unique), API_BATCH)]


def fetch_topology(
    client: Any,
    *,
    instance_types: Sequence[str] = (),
    groups: Sequence[str] = (),
    instance_ids: Sequence[str] = (),
    zones: Sequence[str] = (),
    region: str | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """Every page of describe_instance_topology for the filters, as `{"Instances": [...]}`.

    `instance_types` may use the API's wildcards (`p4d*`); `zones` are
    Availability Zone names. Instances with empty NetworkNodes are kept.
    """
    filters: list[dict[str, Any]] = []
    if instance_types:
        filters.append({"Name": "instance-type", "Values": list(dict.fromkeys(instance_types))})
    if zones:
        filters.append({"Name": "availability-zone", "Values": list(dict.fromkeys(zones))})
    instances: list[dict[str, Any]] = []
    seen: set[str] = set()
    with aws_errors(region):
        paginator = client.get_paginator("describe_instance_topology")
        for id_batch in _batches(instance_ids):
            for group_batch in _batches(groups):
                params: dict[str, Any] = {}
                if id_batch is not None:
                    params["InstanceIds"] = id_batch
                if group_batch is not None:
                    params["GroupNames"] = group_batch
                if filters:
                    params["Filters"] = filters
                # MaxResults may not go with InstanceIds; NextToken is followed either way.
                config = {} if id_batch is not None else {"PageSize": API_BATCH}
                for page in paginator.paginate(**params, PaginationConfig=config):
                    for entry in page.get("Instances", []):
                        if entry.get("InstanceId") in seen:
                            continue
                        seen.add(entry.get("InstanceId"))
                        instances.append(entry)
    return {"Instances": instances}


def dumps_topology(topology: dict[str, list[dict[str, Any]]]) -> str:
    """JSON text as the AWS CLI prints it (4-space indent), with a final newline."""
    return json.dumps(topology, indent=4) + "\n"
