"""Node names for instances: the MAP file of `--node-names`.

Three forms are read, told apart by their content:

- a JSON object `{"i-0abc...": "node-1", ...}`;
- the output of `kubectl get nodes -o json`: each item's `spec.providerID`
  (`aws:///us-east-1a/i-0abc...`) names the instance, `metadata.name` the node;
- text with two columns per line, `INSTANCE-ID NODE-NAME` (spaces, a tab or a
  comma between them; blank lines and `#` comments are skipped).

A MAP also selects: instances it does not name are left out of an export or a
placement, and the CLI says how many.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.errors import UserError
from experiments.network.model import Instance

__all__ = ["NamedInstances", "load_node_names", "name_instances", "parse_node_names"]

_PROVIDER_ID = re.compile(r"^aws://.*/(?P<id>i-[0-9a-f]+)$")


def _from_kubectl(data: Mapping[str, Any], source: str) -> dict[str, str]:
    names: dict[str, str] = {}
    for index, item in enumerate(data.get("items") or []):
        if not isinstance(item, Mapping):
            raise UserError(f"{source}: items[{index}] is not an object")
        spec, meta = item.get("spec") or {}, item.get("metadata") or {}
        provider, name = spec.get("providerID"), meta.get("name")
        if not isinstance(name, str) or not name:
            raise UserError(f"{source}: items[{index}] has no metadata.name")
        match = _PROVIDER_ID.match(provider) if isinstance(provider, str) else None
        if match is None:
            raise UserError(
                f"{source}: node {name} has no AWS spec.providerID "
                "(expected aws:///ZONE/i-...): is this an EC2 node?"
            )
        names[match.group("id")] = name
    return names


def _from_columns(text: str, source: str) -> dict[str, str]:
    names: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        columns = [c for c in re.split(r"[\s,]+", line) if c]
        if len(columns) != 2:
            raise UserError(
                f"{source}:{number}: expected INSTANCE-ID NODE-NAME, got {raw.strip()!r}"
            )
        names[columns[0]] = columns[1]
    return names


def parse_node_names(text: str, source: str = "node names") -> dict[str, str]:
    """Read a MAP from its text in any of the three forms; instance id -> node name."""
    names: dict[str, str]
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise UserError(f"{source}: not JSON ({err.msg} at line {err.lineno})") from None
        if "items" in data and isinstance(data["items"], list):
            names = _from_kubectl(data, source)
        elif all(isinstance(k, str) and isinstance(v, str) and v for k, v in data.items()):
            names = dict(data)
        else:
            raise UserError(
                f'{source}: expected {{"INSTANCE-ID": "NODE-NAME", ...}} '
                "or `kubectl get nodes -o json` output"
            )
    else:
        names = _from_columns(text, source)
    if not names:
        raise UserError(f"{source}: names no instance")
    seen: dict[str, str] = {}
    for instance_id, name in names.items():
        if name in seen:
            raise UserError(
                f"{source}: node name {name} is given to {seen[name]} and {instance_id}"
            )
        seen[name] = instance_id
    return names


def load_node_names(path: Path) -> dict[str, str]:
    """Read a MAP file (see the module docstring for its forms)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise UserError(f"cannot read {path}: {err.strerror}") from None
    return parse_node_names(text, source=str(path))


@dataclass(frozen=True)
class NamedInstances:
    """The instances a MAP selects, in input order, with the name each one goes by."""

    instances: list[Instance]
    names: dict[str, str]
    left_out: list[Instance]

    def name(self, instance: Instance) -> str:
        return self.names[instance.instance_id]


def name_instances(instances: list[Instance], names: Mapping[str, str] | None) -> NamedInstances:
    """Apply a MAP: without one every instance goes by its id; with one, only named ones stay."""
    if names is None:
        return NamedInstances(
            list(instances), {i.instance_id: i.instance_id for i in instances}, []
        )
    kept = [i for i in instances if i.instance_id in names]
    left_out = [i for i in instances if i.instance_id not in names]
    return NamedInstances(kept, {i.instance_id: names[i.instance_id] for i in kept}, left_out)
