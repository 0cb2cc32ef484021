"""Topology exports: Slurm topology.conf (tree and block) and Kubernetes node labels.

Every export takes the instances a MAP selected and the name each goes by (see
`experiments.network.names`). Instances without network topology cannot be
placed in a switch tree; each export lists them in a comment instead.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Callable

import yaml

from experiments.errors import UserError
from experiments.network.hostlist import compress_hostlist
from experiments.network.model import build_fabric
from experiments.network.names import NamedInstances

__all__ = [
    "EXPORT_FORMATS",
    "K8S_LABEL_PREFIX",
    "export_topology",
    "k8s_label_value",
    "k8s_labels",
    "k8s_labels_yaml",
    "slurm_block",
    "slurm_tree",
]

K8S_LABEL_PREFIX = "fabric.topograph.run/tier-"

_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


def _unplaced_comment(named: NamedInstances) -> list[str]:
    missing = [named.name(i) for i in named.instances if not i.network_nodes]
    if not missing:
        return []
    return [f"# no network topology (left out): {compress_hostlist(missing)}"]


def slurm_tree(named: NamedInstances) -> str:
    """topology.conf for topology/tree: upper switches list Switches=, leaf switches Nodes=."""
    fabric = build_fabric(named.instances)
    lines = ["# Slurm topology.conf (topology/tree) written by kary from EC2 instance topology"]
    lines += _unplaced_comment(named)
    for layer in range(1, fabric.depth + 1):
        for switch in sorted(fabric.layer(layer), key=lambda s: s.name):
            parts = [f"SwitchName={switch.name}"]
            if switch.switches:
                parts.append(f"Switches={compress_hostlist(switch.switches)}")
            if switch.instances:
                nodes = [named.names[i] for i in switch.instances]
                parts.append(f"Nodes={compress_hostlist(nodes)}")
            lines.append(" ".join(parts))
    return "\n".join(lines) + "\n"


def _block_sizes(sizes: list[int]) -> list[int]:
    """The smallest block, then doublings up to the largest power of two number of blocks."""
    base = min(sizes)
    out = [base]
    while len(out) < 64 and 2 ** len(out) <= len(sizes):
        out.append(base * 2 ** len(out))
    return out


def slurm_block(named: NamedInstances) -> str:
    """topology.conf for topology/block: one block per closest switch, then BlockSizes=."""
    fabric = build_fabric(named.instances)
    leaves = sorted((s for s in fabric.switches.values() if s.instances), key=lambda s: s.name)
    lines = ["# Slurm topology.conf (topology/block) written by kary from EC2 instance topology"]
    lines += _unplaced_comment(named)
    if not leaves:
        raise UserError("no instance has network topology: there is no block to write")
    for switch in leaves:
        nodes = [named.names[i] for i in switch.instances]
        lines.append(f"BlockName={switch.name} Nodes={compress_hostlist(nodes)}")
    sizes = _block_sizes([len(s.instances) for s in leaves])
    lines.append(f"# base block = the smallest block; then doublings up to {len(leaves)} blocks")
    lines.append("BlockSizes=" + ",".join(str(s) for s in sizes))
    return "\n".join(lines) + "\n"


def k8s_label_value(value: str) -> str:
    """`value` if it is a valid label value, else a stable hash of it that is one (32 hex)."""
    if _LABEL_VALUE.match(value):
        return value
    return hashlib.sha256(value.encode()).hexdigest()[:32]


def _tier_labels(named: NamedInstances) -> list[tuple[str, dict[str, str]]]:
    """(node name, labels) by node name, for each instance with topology; tier-0 is closest."""
    out = []
    for inst in named.instances:
        if not inst.network_nodes:
            continue
        labels = {
            f"{K8S_LABEL_PREFIX}{tier}": k8s_label_value(node)
            for tier, node in enumerate(reversed(inst.network_nodes))
        }
        out.append((named.name(inst), labels))
    return sorted(out, key=lambda pair: pair[0])


def k8s_labels(named: NamedInstances) -> str:
    """A shell script of `kubectl label node` commands, one per node (idempotent: --overwrite)."""
    lines = [
        "#!/bin/sh",
        "# Kubernetes node labels from EC2 instance topology, written by kary.",
        f"# {K8S_LABEL_PREFIX}0 is the switch closest to the node.",
        "set -e",
    ]
    lines += _unplaced_comment(named)
    for node, labels in _tier_labels(named):
        pairs = " ".join(shlex.quote(f"{k}={v}") for k, v in labels.items())
        lines.append(f"kubectl label node {shlex.quote(node)} {pairs} --overwrite")
    return "\n".join(lines) + "\n"


def k8s_labels_yaml(named: NamedInstances) -> str:
    """Node objects holding only the labels: `kubectl apply --server-side -f FILE`."""
    docs = [
        "# Kubernetes node labels from EC2 instance topology, written by kary.\n"
        "# Apply with: kubectl apply --server-side --field-manager=kary -f FILE\n"
        f"# {K8S_LABEL_PREFIX}0 is the switch closest to the node.\n"
        + "".join(line + "\n" for line in _unplaced_comment(named))
    ]
    for node, labels in _tier_labels(named):
        body = "".join(f"    {k}: {_yaml_scalar(v)}\n" for k, v in labels.items())
        docs.append(
            f"apiVersion: v1\nkind: Node\nmetadata:\n  name: {_yaml_scalar(node)}\n"
            f"  labels:\n{body}"
        )
    return docs[0] + "---\n".join(docs[1:])


def _yaml_scalar(text: str) -> str:
    """Plain if YAML reads it back as this string, else double-quoted (JSON is valid YAML)."""
    try:
        plain = yaml.safe_load(text) == text
    except yaml.YAMLError:
        plain = False
    return text if plain else json.dumps(text)


EXPORT_FORMATS: dict[str, Callable[[NamedInstances], str]] = {
    "slurm-tree": slurm_tree,
    "slurm-block": slurm_block,
    "k8s-labels": k8s_labels,
    "k8s-labels-yaml": k8s_labels_yaml,
}


def export_topology(named: NamedInstances, fmt: str) -> str:
    """Render one export format; an unknown name lists the valid ones."""
    try:
        render = EXPORT_FORMATS[fmt]
    except KeyError:
        raise UserError(
            f"unknown export format {fmt!r}: choose one of {', '.join(EXPORT_FORMATS)}"
        ) from None
    return render(named)
