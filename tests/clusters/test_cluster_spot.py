"""Spot clusters against the fake eksctl and gcloud (issue 34, item 4): the spot files
create spot node groups (eksctl `spot: true` with `instanceTypes`; gcloud `--spot`), the
fakes refuse what the real tools refuse, and kary prices them at the spot rate."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from experiments.cli import app
from experiments.clusters import Lease, Shell, provider_for
from experiments.model.cluster_spec import load_cluster_spec

runner = CliRunner()
CLUSTERS = Path(__file__).resolve().parents[2] / "clusters"
EKS_SPOT = CLUSTERS / "eks-30-spot.yaml"
GKE_SPOT = CLUSTERS / "gke-30-spot.yaml"


def test_eks_up_creates_a_spot_managed_group_of_the_listed_types(
    fake_cloud: Any, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The spot file asks for Kubernetes 1.35: kubectl must be within one minor version.
    monkeypatch.setenv("KARY_FAKE_KUBECTL_VERSION", "1.35.0")
    name = "kary-topology-30-spot"
    aws(name, ["workers"])
    result = runner.invoke(app, ["cluster", "up", str(EKS_SPOT), "--yes", "--no-operator"])
    assert result.exit_code == 0, result.output
    # What eksctl was handed: the user's group as written, with kary's lease tags.
    create = next(c for c in fake_cloud.calls("eksctl") if c[1:3] == ["create", "cluster"])
    written = yaml.safe_load(Path(create[create.index("-f") + 1]).read_text())
    (group,) = written["managedNodeGroups"]
    assert (group["spot"], group["instanceTypes"]) == (True, ["c5a.4xlarge"])
    assert "instanceType" not in group and written["metadata"]["version"] == "1.35"
    state = fake_cloud.state()["eks"][name]
    assert state["capacity"] == {
        "workers": {"capacityType": "SPOT", "instanceTypes": ["c5a.4xlarge"]}
    }
    assert state["version"] == "1.35"
    # Priced at the spot rate, with the NAT gateway and public IPv4 lines.
    assert "It bills" not in result.output  # --yes: no question
    cost = next(line for line in result.output.splitlines() if line.startswith("cost: "))
    assert cost.startswith(
        "cost: $10.18/h (30 x c5a.4xlarge spot at $0.3018/h + control plane $0.10/h + disks "
        "30 x 200 GiB gp2 at $0.0274/h + NAT gateway 1 x $0.0450/h + public IPv4 31 x $0.0050/h"
    )
    down = runner.invoke(app, ["cluster", "down", str(EKS_SPOT)])
    assert down.exit_code == 0, down.output
    assert fake_cloud.running() == []


def test_gke_create_passes_spot() -> None:
    provider = provider_for(load_cluster_spec(GKE_SPOT), Shell())
    command = provider.create_command(Lease.new(2.0)).argv  # type: ignore[attr-defined]
    assert command[:5] == ("gcloud", "container", "clusters", "create", "kary-topology-30-spot")
    assert "--spot" in command
    on_demand = provider_for(load_cluster_spec(CLUSTERS / "gke-30.yaml"), Shell())
    assert "--spot" not in on_demand.create_command(Lease.new(2.0)).argv  # type: ignore[attr-defined]


def test_gke_up_makes_a_spot_pool(fake_cloud: Any) -> None:
    result = runner.invoke(
        app, ["cluster", "up", str(GKE_SPOT), "--yes", "--no-operator", "--no-dead-man-switch"]
    )
    assert result.exit_code == 0, result.output
    assert fake_cloud.state()["gke"]["kary-topology-30-spot"]["spot"] is True
    create = next(
        c for c in fake_cloud.calls("gcloud") if c[1:4] == ["container", "clusters", "create"]
    )
    assert "--spot" in create


@pytest.mark.parametrize(
    ("group", "message"),
    [
        (
            {"name": "w", "instanceType": "c5a.4xlarge", "instanceTypes": ["c5a.4xlarge"]},
            "Error: only one of instanceType or instanceTypes can be specified "
            "(managedNodeGroups[0])",
        ),
    ],
)
def test_the_fake_eksctl_refuses_what_eksctl_refuses(
    fake_cloud: Any, tmp_path: Path, group: dict, message: str
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "eksctl.io/v1alpha5",
                "kind": "ClusterConfig",
                "metadata": {"name": "c", "region": "us-east-2"},
                "managedNodeGroups": [group],
            }
        )
    )
    done = subprocess.run(
        ["eksctl", "create", "cluster", "-f", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr.strip()) == (1, message)
    assert fake_cloud.state()["eks"] == {}


def test_the_fake_eksctl_refuses_spot_on_an_unmanaged_group(
    fake_cloud: Any, tmp_path: Path
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        "apiVersion: eksctl.io/v1alpha5\nkind: ClusterConfig\n"
        "metadata: {name: c, region: us-east-2}\n"
        "nodeGroups:\n  - {name: w, instanceType: c5a.4xlarge, spot: true}\n"
    )
    done = subprocess.run(
        ["eksctl", "create", "cluster", "-f", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f'Error: loading config file "{config}": error unmarshaling JSON: while decoding JSON: '
        'json: unknown field "spot"'
    )


def test_the_fake_gcloud_takes_spot_but_no_misspelling_of_it(fake_cloud: Any) -> None:
    argv = ["gcloud", "container", "clusters", "create", "c", "--zone", "us-central1-a"]
    done = subprocess.run([*argv, "--spot-vms"], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr.strip()) == (
        2,
        "ERROR: (gcloud.container.clusters.create) unrecognized arguments: --spot-vms",
    )
    assert subprocess.run([*argv, "--spot"], capture_output=True, timeout=60).returncode == 0
    assert fake_cloud.state()["gke"]["c"]["spot"] is True
