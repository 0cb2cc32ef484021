"""Fake cloud CLIs on a PATH that holds nothing else, a fake AWS API over the same state,
and a moto AWS for the dead-man switch."""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import boto3
import botocore.loaders
import botocore.session
import pytest
from moto import mock_aws

# Every test sees this moment as "now" (kary and the fakes alike): nothing it asserts
# may depend on how long the machine took to get there.
FROZEN_NOW = datetime(2026, 6, 27, 15, 30, 0, tzinfo=timezone.utc)

FAKES = Path(__file__).resolve().parent.parent / "fakes"
CLUSTERS = Path(__file__).resolve().parents[2] / "clusters"
PROGRAMS = ("eksctl", "aws", "gcloud", "kubectl")

sys.path.insert(0, str(FAKES))
from fake_aws_api import FakeAwsApi  # noqa: E402
from fake_placement_groups import FakePlacementGroups  # noqa: E402


@dataclass
class FakeCloud:
    """The fakes' shared state and call log, plus a switch to fail on demand."""

    bin_dir: Path
    state_path: Path
    log_path: Path
    monkeypatch: pytest.MonkeyPatch
    api: FakeAwsApi
    placement: FakePlacementGroups

    def state(self) -> dict[str, Any]:
        text = self.state_path.read_text() if self.state_path.exists() else ""
        state = json.loads(text) if text.strip() else {}
        for key in ("eks", "stacks", "gke", "jobs", "counters"):
            state.setdefault(key, {})
        return state

    def write_state(self, state: dict[str, Any]) -> None:
        self.state_path.write_text(json.dumps(state))

    def calls(self, prog: str | None = None) -> list[list[str]]:
        if not self.log_path.exists():
            return []
        rows = [json.loads(line) for line in self.log_path.read_text().splitlines()]
        return [[r["prog"], *r["argv"]] for r in rows if prog is None or r["prog"] == prog]

    def fail(self, variable: str, mode: str) -> None:
        self.monkeypatch.setenv(f"KARY_FAKE_{variable}", mode)

    def prints(self, call: str, text: str, skip: int = 0) -> None:
        """Fake calls whose argv starts with `call` print `text` and exit 0 (after `skip`)."""
        odd = json.loads(os.environ.get("KARY_FAKE_STDOUT") or "{}")
        odd[call] = {"text": text, "skip": skip}
        self.monkeypatch.setenv("KARY_FAKE_STDOUT", json.dumps(odd))

    def remove(self, program: str) -> None:
        (self.bin_dir / program).unlink()

    def running(self) -> list[str]:
        """Everything kary would leave: clusters, stacks, scheduler jobs, placement groups."""
        state = self.state()
        return (
            [f"eks:{n}" for n in state["eks"]]
            + [f"stack:{n}" for n in state["stacks"]]
            + [f"gke:{n}" for n in state["gke"]]
            + [f"job:{n}" for n in state["jobs"]]
            + [f"placement:{n}" for n in self.placement.groups]
        )


@dataclass
class FrozenClock:
    """kary's clock (experiments.clusters.clock) and the fakes', moved only by the test."""

    now: datetime
    monkeypatch: pytest.MonkeyPatch

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.set(self.now + timedelta(**delta))

    def set(self, now: datetime) -> None:
        self.now = now
        self.monkeypatch.setenv("KARY_FAKE_NOW", now.isoformat())


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FrozenClock:
    frozen = FrozenClock(FROZEN_NOW, monkeypatch)
    frozen.set(FROZEN_NOW)
    monkeypatch.setattr("experiments.clusters.clock.utc_now", frozen)
    return frozen


@pytest.fixture
def fake_cloud(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: FrozenClock
) -> Iterator[FakeCloud]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for program in PROGRAMS:
        shutil.copy(FAKES / program, bin_dir / program)
    # kary only checks that GKE's kubeconfig signer is there; the fake API server needs none.
    plugin = bin_dir / "gke-gcloud-auth-plugin"
    plugin.write_text("#!/bin/sh\nexit 0\n")
    plugin.chmod(0o755)
    # Only the fakes: a real eksctl/gcloud/aws/kubectl on this machine is never reachable.
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("KARY_FAKE_PYTHON", sys.executable)
    monkeypatch.setenv("KARY_FAKE_SCRIPT", str(FAKES / "fake_cloud.py"))
    monkeypatch.setenv("KARY_FAKE_STATE", str(tmp_path / "cloud.json"))
    monkeypatch.setenv("KARY_FAKE_LOG", str(tmp_path / "calls.jsonl"))
    monkeypatch.setenv("KARY_OWNER", "tester")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    # boto3 signs with throwaway keys; every session kary makes answers from the fake state.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    api = FakeAwsApi(tmp_path / "cloud.json", tmp_path / "calls.jsonl")
    placement = FakePlacementGroups()
    monkeypatch.setattr(
        "experiments.clusters.aws_api.default_session",
        lambda region: placement.attach(api.attach(boto3.session.Session(region_name=region))),
    )
    for name in list(os.environ):
        if name.startswith("KARY_FAKE_") and name not in (
            "KARY_FAKE_PYTHON",
            "KARY_FAKE_SCRIPT",
            "KARY_FAKE_STATE",
            "KARY_FAKE_LOG",
            "KARY_FAKE_NOW",
        ):
            monkeypatch.delenv(name)
    cloud = FakeCloud(
        bin_dir, tmp_path / "cloud.json", tmp_path / "calls.jsonl", monkeypatch, api, placement
    )
    # What the fake API does not answer, moto does: no boto3 call ever leaves the machine.
    # Without its default AMIs (moto's documented switch): kary asks EC2 for none, and
    # building them (thousands of images with random ids, from a large JSON file) was
    # most of the CPU of a test here.
    monkeypatch.setenv("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
    with mock_aws():
        yield cloud
    # What boto3 does, kary asks boto3: the aws CLI is never called.
    assert cloud.calls("aws") == [], cloud.calls("aws")


@pytest.fixture
def aws(fake_cloud: FakeCloud, monkeypatch: pytest.MonkeyPatch) -> Any:
    """moto's side of AWS (node groups, Auto Scaling): `prime_node_groups` fills it."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-2")
    return prime_node_groups


# botocore reads each service's model (large JSON files) into its session's loader, and
# every session has its own: kary's per call, boto3's default one, the ones moto makes
# inside its backends.  Reading them again was most of a cluster test's CPU.  Every
# session in this worker shares one loader (per data path), so each file is read once;
# the models it hands out are only read.
botocore.session.create_loader = functools.cache(botocore.loaders.create_loader)


def prime_node_groups(name: str, groups: list[str], region: str = "us-east-2") -> list[str]:
    """What eksctl would have made on the AWS side: the cluster and its managed node groups."""
    eks = boto3.client("eks", region_name=region)
    eks.create_cluster(
        name=name,
        roleArn="arn:aws:iam::123456789012:role/eks",
        resourcesVpcConfig={"subnetIds": ["subnet-1"]},
    )
    asgs = []
    for group in groups:
        made = eks.create_nodegroup(
            clusterName=name,
            nodegroupName=group,
            nodeRole="arn:aws:iam::123456789012:role/node",
            subnets=["subnet-1"],
        )
        asgs += [g["name"] for g in made["nodegroup"]["resources"]["autoScalingGroups"]]
    return asgs
