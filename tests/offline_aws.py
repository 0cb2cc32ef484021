"""A real boto3 client that can reach no account: dummy credentials, for a Stubber or
moto to answer every call (tests never touch a real cloud)."""

from __future__ import annotations

from typing import Any

import boto3


def offline_client(service: str, region: str) -> Any:
    return boto3.session.Session(
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name=region,
    ).client(service)
