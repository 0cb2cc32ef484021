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
        "eks-30-spot.yaml": ("eks", "c5a.4xlarge", 30),
        "eks-256.yaml": ("eks", "c5a.4xlarge", 256),
        "eks-p5-efa.yaml": ("eks", "p5.48xlarge", 4),
        "gke-30.yaml": ("gke", "c2d-standard-32", 30),
        "gke-30-spot.yaml": ("gke", "c2d-standard-32", 30),
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


def test_the_pods_go_to_the_worker_group_and_tolerate_its_taints() -> None:
    p5 = load_cluster_spec(resource_dir("clusters") / "eks-p5-efa.yaml")
    # Without both, the p5 workers' GPU taint sends every rank to the system node.
    assert p5.node_selector == {"alpha.eksctl.io/nodegroup-name": "workers"}
    assert p5.tolerations == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ]
    eks = load_cluster_spec(resource_dir("clusters") / "eks-30.yaml")
    assert (eks.node_selector, eks.tolerations) == (
        {"alpha.eksctl.io/nodegroup-name": "workers"},
        [],
    )
    gke = load_cluster_spec(resource_dir("clusters") / "gke-30.yaml")
    assert gke.node_selector == {"cloud.google.com/gke-nodepool": "default-pool"}


def _with_taints(tmp_path: Path, taints: str) -> Path:
    path = tmp_path / "eks.yaml"
    path.write_text(
        "apiVersion: eksctl.io/v1alpha5\nkind: ClusterConfig\n"
        "metadata: {name: c, region: us-east-2}\n"
        "managedNodeGroups:\n"
        f"  - {{name: gpu, instanceType: p5.48xlarge, desiredCapacity: 2, taints: {taints}}}\n"
    )
    return path


def test_taints_in_either_eksctl_spelling_become_tolerations(tmp_path: Path) -> None:
    listed = load_cluster_spec(_with_taints(tmp_path, "[{key: a, effect: NO_EXECUTE}]"))
    assert listed.tolerations == [{"key": "a", "operator": "Exists", "effect": "NoExecute"}]
    mapped = load_cluster_spec(_with_taints(tmp_path, '{dedicated: "flux:NoSchedule"}'))
    assert mapped.tolerations == [
        {"key": "dedicated", "operator": "Equal", "value": "flux", "effect": "NoSchedule"}
    ]


def test_a_taint_kubernetes_would_refuse_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(UserError) as caught:
        load_cluster_spec(_with_taints(tmp_path, "[{key: a, value: b, effect: Sometimes}]"))
    assert str(caught.value) == (
        f"{tmp_path / 'eks.yaml'}: node group 'gpu': taint 'a' has effect 'Sometimes', "
        "not one of NoSchedule, PreferNoSchedule, NoExecute"
    )
