"""Cluster files: the shipped eksctl configs and GKE spec load; bad ones are one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.errors import UserError
from experiments.model.cluster_spec import load_cluster_spec
from experiments.resources import resource_dir


def test_every_shipped_cluster_file_loads() -> None:
    specs = {
        p.name: load_cluster_spec(p)
        for p in resource_dir("clusters").glob("*.yaml")
        if p.name != "prices.yaml"
    }
    assert {n: (s.provider, s.instance_type, s.nodes) for n, s in specs.items()} == {
        "eks-6.yaml": ("eks", "c5a.4xlarge", 6),
        "eks-30.yaml": ("eks", "c5a.4xlarge", 30),
        "eks-256.yaml": ("eks", "c5a.4xlarge", 256),
        "eks-p5-efa.yaml": ("eks", "p5.48xlarge", 4),
        "gke-30.yaml": ("gke", "c2d-standard-32", 30),
    }
    gke = specs["gke-30.yaml"]
    assert (gke.region, gke.zone) == ("us-central1", "us-central1-a")
    assert [g.instance_type for g in specs["eks-p5-efa.yaml"].node_groups] == [
        "m5.xlarge",
        "p5.48xlarge",
    ]


def test_the_seeds_eksctl_configs_load(flux_distribute: Path) -> None:
    for n in (6, 30, 256):
        spec = load_cluster_spec(flux_distribute / "clusters" / f"eks-config-{n}.yaml")
        assert (spec.instance_type, spec.nodes, spec.region) == ("c5a.4xlarge", n, "us-east-2")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("kind: Pod\n", "kind must be ClusterConfig"),
        ("[1, 2]\n", "expected a YAML mapping"),
        ("kind: ClusterConfig\nmetadata: {name: x}\n", "needs metadata.name, metadata.region"),
        ("kind: GKECluster\nname: x\nzone: us-central1-a\nmachineType: n2\n", "numNodes"),
        ("kind: GKECluster\nname: x\nzone: z\nmachineType: m\nnumNodes: 2\nbogus: 1\n", "bogus"),
        ("a: [\n", "not valid YAML"),
    ],
)
def test_bad_cluster_files_are_user_errors(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(content)
    with pytest.raises(UserError, match=message):
        load_cluster_spec(path)
