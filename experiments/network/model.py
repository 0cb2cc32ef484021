"""EC2 instance topology as kary reads it: instances, their network nodes, and the switch tree.

The input is the JSON that `aws ec2 describe-instance-topology` prints (and that
`kary network fetch` writes): `{"Instances": [{"InstanceId": ..., "NetworkNodes":
[...], ...}, ...]}`. NetworkNodes are listed top-down: the first is the layer-1
node farthest from the instance, the LAST is the switch closest to it.
Instances of unsupported types, or not running, have no NetworkNodes; they are
kept and reported, never dropped silently.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.errors import UserError

__all__ = [
    "Fabric",
    "Instance",
    "Switch",
    "build_fabric",
    "load_instances",
    "parse_instances",
    "shared_layers",
]


@dataclass(frozen=True)
class Instance:
    """One entry of describe-instance-topology; `network_nodes` top-down, closest last."""

    instance_id: str
    network_nodes: tuple[str, ...] = ()
    instance_type: str = ""
    group_name: str = ""
    availability_zone: str = ""

    @property
    def closest(self) -> str | None:
        """The switch closest to the instance (the last network node), or None."""
        return self.network_nodes[-1] if self.network_nodes else None


@dataclass
class Switch:
    """A network node: its layer (1 = top), parent node, child nodes and instances below it."""

    name: str
    layer: int
    parent: str | None
    switches: list[str] = field(default_factory=list)
    instances: list[str] = field(default_factory=list)
    # Every instance anywhere below this node, in input order.
    below: list[str] = field(default_factory=list)


@dataclass
class Fabric:
    """The switch tree under a set of instances (a forest when layer-1 nodes differ)."""

    instances: list[Instance]
    switches: dict[str, Switch]

    @property
    def depth(self) -> int:
        """The number of network layers (3 on today's EC2 types), 0 without topology."""
        return max((len(i.network_nodes) for i in self.instances), default=0)

    @property
    def roots(self) -> list[str]:
        """Layer-1 nodes, in order of first appearance."""
        return [s.name for s in self.switches.values() if s.parent is None]

    @property
    def without_topology(self) -> list[Instance]:
        """Instances whose NetworkNodes are empty (unsupported type or not running)."""
        return [i for i in self.instances if not i.network_nodes]

    def layer(self, number: int) -> list[Switch]:
        """Switches at one layer (1 = top), in order of first appearance."""
        return [s for s in self.switches.values() if s.layer == number]


def _text(entry: Mapping[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise UserError(f"{where}: {key} must be a string, not {type(value).__name__}")
    return value


def parse_instances(data: Any, source: str = "topology") -> list[Instance]:
    """Read the describe-instance-topology shape; a repeated InstanceId keeps its first entry."""
    if isinstance(data, list):  # a bare list of instances is accepted too
        entries = data
    elif isinstance(data, Mapping) and isinstance(data.get("Instances"), list):
        entries = data["Instances"]
    else:
        raise UserError(
            f"{source}: expected the JSON of `aws ec2 describe-instance-topology`, "
            '{"Instances": [...]}'
        )
    seen: set[str] = set()
    instances: list[Instance] = []
    for index, entry in enumerate(entries):
        where = f"{source}: Instances[{index}]"
        if not isinstance(entry, Mapping):
            raise UserError(f"{where}: expected an object")
        instance_id = _text(entry, "InstanceId", where)
        if not instance_id:
            raise UserError(f"{where}: InstanceId is missing")
        nodes = entry.get("NetworkNodes") or []
        if not isinstance(nodes, list) or not all(isinstance(n, str) and n for n in nodes):
            raise UserError(f"{where}: NetworkNodes must be a list of node ids")
        if instance_id in seen:
            continue
        seen.add(instance_id)
        instances.append(
            Instance(
                instance_id=instance_id,
                network_nodes=tuple(nodes),
                instance_type=_text(entry, "InstanceType", where),
                group_name=_text(entry, "GroupName", where),
                availability_zone=_text(entry, "AvailabilityZone", where),
            )
        )
    return instances


def load_instances(path: Path) -> list[Instance]:
    """Load a describe-instance-topology JSON file (AWS CLI output or `kary network fetch`)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise UserError(f"cannot read {path}: {err.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise UserError(f"{path}: not JSON ({err.msg} at line {err.lineno})") from None
    return parse_instances(data, source=str(path))


def build_fabric(instances: Iterable[Instance]) -> Fabric:
    """Link network nodes into a tree: each node's parent is the one listed before it."""
    instances = list(instances)
    switches: dict[str, Switch] = {}
    for inst in instances:
        parent: str | None = None
        for layer, name in enumerate(inst.network_nodes, start=1):
            switch = switches.get(name)
            if switch is None:
                switch = switches[name] = Switch(name=name, layer=layer, parent=parent)
                if parent is not None:
                    switches[parent].switches.append(name)
            elif switch.layer != layer or switch.parent != parent:
                raise UserError(
                    f"network node {name} of {inst.instance_id} sits at layer {layer} under "
                    f"{parent or 'nothing'}, but another instance has it at layer "
                    f"{switch.layer} under {switch.parent or 'nothing'}"
                )
            switch.below.append(inst.instance_id)
            parent = name
        if parent is not None:
            switches[parent].instances.append(inst.instance_id)
    return Fabric(instances=instances, switches=switches)


def shared_layers(a: Sequence[str], b: Sequence[str]) -> int:
    """How many network layers two instances share from the top (0 if either has none)."""
    shared = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        shared += 1
    return shared
