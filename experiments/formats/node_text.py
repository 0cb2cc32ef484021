"""A cell's nodes as the parsed runs table writes them, and reads them back.

run.json's `rank_nodes` (each rank's node: name, capacity type, instance type and
id, zone; the kubernetes backend records them) become the runs table's
`rank_nodes` column: the nodes in rank order as `name:capacity:instance id`,
comma-separated (`node-0:spot:i-0abc, node-1:on-demand:i-0def`; `unknown` where
the node had no capacity label, the id left off where unknown).  Node names are
DNS names (no `:`, `,` or space), so the text splits back exactly.  run.json's
`node_set` (the worker nodes there were when the cell ended: their count and a
digest of their names) becomes `30 nodes #3f2a9c0d1e2b`: two cells with another
text saw another set of nodes.  run.json's `zones` (the zones of the nodes the
cell's pods ran on) become `us-east-2a, us-east-2b`.  "" where run.json says
nothing (another backend, or a cell recorded before kary said).
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = [
    "NodeText",
    "node_set_text",
    "nodes_of_text",
    "rank_nodes_text",
    "zones_of_text",
    "zones_text",
]

UNKNOWN = "unknown"


class NodeText(NamedTuple):
    """One node of a `rank_nodes` cell: its name, capacity type and instance id ("")."""

    name: str
    capacity: str
    instance_id: str


def rank_nodes_text(value: Any) -> str:
    """run.json's `rank_nodes` as the runs table's cell (see the module doc)."""
    if not isinstance(value, list):
        return ""
    entries = []
    for entry in value:
        if not isinstance(entry, dict) or not isinstance(entry.get("node"), str):
            continue
        capacity = entry.get("capacity") if isinstance(entry.get("capacity"), str) else None
        parts = [entry["node"], capacity or UNKNOWN]
        if isinstance(entry.get("instance_id"), str) and entry["instance_id"]:
            parts.append(entry["instance_id"])
        entries.append(":".join(parts))
    return ", ".join(entries)


def nodes_of_text(text: Any) -> list[NodeText]:
    """A `rank_nodes` cell read back, in rank order ([] for "" or a missing cell)."""
    if not isinstance(text, str):
        return []
    nodes = []
    for entry in text.split(","):
        name, _, rest = entry.strip().partition(":")
        capacity, _, instance_id = rest.partition(":")
        if name:
            nodes.append(NodeText(name, capacity or UNKNOWN, instance_id))
    return nodes


def node_set_text(value: Any) -> str:
    """run.json's `node_set` as the runs table's cell: `30 nodes #3f2a9c0d1e2b`."""
    if not isinstance(value, dict):
        return ""
    count, digest = value.get("nodes"), value.get("digest")
    if not isinstance(count, int) or not isinstance(digest, str):
        return ""
    return f"{count} node{'' if count == 1 else 's'} #{digest}"


def zones_text(value: Any) -> str:
    """run.json's `zones` as the runs table's cell: `us-east-2a, us-east-2b`."""
    if not isinstance(value, list):
        return ""
    return ", ".join(zone for zone in value if isinstance(zone, str) and zone)


def zones_of_text(text: Any) -> list[str]:
    """A `zones` cell read back ([] for "" or a missing cell)."""
    if not isinstance(text, str):
        return []
    return [zone.strip() for zone in text.split(",") if zone.strip()]
