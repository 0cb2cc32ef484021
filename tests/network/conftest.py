"""Fixtures for the network tests: the shipped example, golden files, stubbed EC2 clients."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.stub import Stubber
from offline_aws import offline_client

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "instance-topology.json"
GOLDEN = Path(__file__).resolve().parent / "golden"


@pytest.fixture
def example() -> Path:
    return EXAMPLE


@pytest.fixture
def node_names_file() -> Path:
    return GOLDEN / "node-names.txt"


def _assert_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("KARY_UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"golden file {path} is missing: run with KARY_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8")


@pytest.fixture
def assert_golden() -> Callable[[str, str], None]:
    """Compare text with tests/network/golden/NAME; KARY_UPDATE_GOLDEN=1 rewrites it instead."""
    return _assert_golden


@pytest.fixture
def ec2() -> Iterator[tuple[Any, Stubber]]:
    """A real boto3 EC2 client with dummy credentials, every call answered by a Stubber."""
    client = offline_client("ec2", "us-east-1")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()
