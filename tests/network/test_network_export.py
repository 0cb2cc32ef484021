"""Slurm and Kubernetes exports of the shipped example, against golden files."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from experiments.errors import UserError
from experiments.network.export import (
    EXPORT_FORMATS,
    export_topology,
    k8s_label_value,
    slurm_block,
)
from experiments.network.model import Instance, load_instances
from experiments.network.names import load_node_names, name_instances

_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


@pytest.mark.parametrize("fmt", sorted(EXPORT_FORMATS))
def test_export_by_instance_id(
    example: Path, fmt: str, assert_golden: Callable[[str, str], None]
) -> None:
    named = name_instances(load_instances(example), None)
    assert_golden(f"example.{fmt}.txt", export_topology(named, fmt))


@pytest.mark.parametrize("fmt", sorted(EXPORT_FORMATS))
def test_export_with_node_names(
    example: Path, node_names_file: Path, fmt: str, assert_golden: Callable[[str, str], None]
) -> None:
    named = name_instances(load_instances(example), load_node_names(node_names_file))
    assert_golden(f"example.named.{fmt}.txt", export_topology(named, fmt))


def test_slurm_tree_compresses_names_under_each_switch(
    example: Path, node_names_file: Path
) -> None:
    named = name_instances(load_instances(example), load_node_names(node_names_file))
    text = export_topology(named, "slurm-tree")
    assert "Nodes=hpc7g-[01-04]\n" in text
    assert "# no network topology (left out): login[1-2]\n" in text


def test_block_sizes_start_at_the_smallest_block_and_double() -> None:
    def named(*sizes: int) -> str:
        instances = [
            Instance(f"i-{b}-{k}", ("L1", "L2", f"L3-{b}"))
            for b, size in enumerate(sizes)
            for k in range(size)
        ]
        return slurm_block(name_instances(instances, None)).splitlines()[-1]

    assert named(4) == "BlockSizes=4"
    assert named(4, 4) == "BlockSizes=4,8"
    assert named(3, 4, 3) == "BlockSizes=3,6"
    assert named(2, 2, 2, 2, 2) == "BlockSizes=2,4,8"


def test_block_needs_some_topology() -> None:
    with pytest.raises(UserError, match="no instance has network topology"):
        slurm_block(name_instances([Instance("i-1")], None))


def test_k8s_yaml_is_valid_nodes_with_tier_labels(example: Path) -> None:
    named = name_instances(load_instances(example), None)
    docs = [d for d in yaml.safe_load_all(export_topology(named, "k8s-labels-yaml")) if d]
    assert len(docs) == 16
    assert all(d["kind"] == "Node" for d in docs)
    by_name = {d["metadata"]["name"]: d for d in docs}
    assert list(by_name) == sorted(by_name)
    first = by_name["i-0468c6414ce9da201"]
    # tier-0 is the closest switch: the LAST of NetworkNodes.
    assert first["metadata"]["labels"] == {
        "fabric.topograph.run/tier-0": "nn-b656a4d2bad821df9",
        "fabric.topograph.run/tier-1": "nn-8c764d1c0acb3dea1",
        "fabric.topograph.run/tier-2": "nn-a84bba07931db9253",
    }


def test_long_or_invalid_label_values_become_a_stable_hash() -> None:
    long = "nn-" + "a" * 70
    hashed = k8s_label_value(long)
    assert hashed == k8s_label_value(long) != k8s_label_value(long + "b")
    assert _LABEL_VALUE.match(hashed) and len(hashed) == 32
    assert _LABEL_VALUE.match(k8s_label_value("has/slash"))
    assert k8s_label_value("nn-" + "a" * 60) == "nn-" + "a" * 60  # 63 characters: kept
    instances = [Instance("i-1", (long, "nn-2"))]
    script = export_topology(name_instances(instances, None), "k8s-labels")
    assert f"fabric.topograph.run/tier-1={hashed}" in script


def test_unknown_format_lists_the_valid_ones() -> None:
    with pytest.raises(UserError) as err:
        export_topology(name_instances([Instance("i-1", ("a",))], None), "slurm")
    assert str(err.value) == (
        "unknown export format 'slurm': choose one of "
        "slurm-tree, slurm-block, k8s-labels, k8s-labels-yaml"
    )
