"""Design sets: which (nodes, topology) pairs are worth running.

The rule is flux-distribute's generator: for each N, `kary:k` for 1 <= k <= N//2,
plus `binomial` when ceil(log2 N) <= N//2.  Files are JSON lists of
`{"nodes": N, "topo": "kary:2", "levels": {"0": ["0"], ...}}`, flux-distribute's shape.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.errors import UserError
from experiments.files import read_document, write_atomic
from experiments.model.topology import build_tree, parse_topology
from experiments.model.validate import node_count

__all__ = ["Design", "design_entry", "generate_designs", "load_designs", "write_designs"]


@dataclass(frozen=True)
class Design:
    nodes: int
    topo: str


def _topologies_for(nodes: int, min_kary: int, max_kary: int | None) -> list[str]:
    top = nodes // 2 if max_kary is None else min(max_kary, nodes // 2)
    topos = [f"kary:{k}" for k in range(max(1, min_kary), top + 1)]
    if math.ceil(math.log2(nodes)) <= nodes // 2:
        topos.insert(0, "binomial")  # flux-distribute lists it before the karys
    return topos


def generate_designs(
    min_nodes: int, max_nodes: int, min_kary: int = 1, max_kary: int | None = None
) -> list[Design]:
    """Every design for min_nodes..max_nodes (inclusive), in flux-distribute's order."""
    node_count(min_nodes, "--min-nodes")
    node_count(max_nodes, "--max-nodes")
    if min_nodes > max_nodes:
        raise UserError(f"--min-nodes {min_nodes} is larger than --max-nodes {max_nodes}")
    if min_kary < 1 or (max_kary is not None and max_kary < min_kary):
        raise UserError("--min-kary must be >= 1 and no larger than --max-kary")
    # flux-distribute's order: by nodes, then binomial, then kary by fan-out.
    return [
        Design(n, topo)
        for n in range(min_nodes, max_nodes + 1)
        for topo in _topologies_for(n, min_kary, max_kary)
    ]


def design_entry(design: Design) -> dict[str, Any]:
    """flux-distribute's JSON entry for one design, levels as strings."""
    levels = build_tree(design.topo, design.nodes).levels()
    return {
        "nodes": design.nodes,
        "topo": design.topo,
        "levels": {str(lvl): [str(r) for r in ranks] for lvl, ranks in levels.items()},
    }


def write_designs(designs: list[Design], out: Path) -> None:
    write_atomic(out, json.dumps([design_entry(d) for d in designs], indent=4) + "\n")


def load_designs(path: Path) -> list[Design]:
    """Read a design file; every entry is validated, so a typo fails here, not on a cluster."""
    raw = read_document(path, "design file", "json")
    if not isinstance(raw, list):
        raise UserError(f"design file {path}: expected a JSON list of designs")
    designs = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or "nodes" not in entry or "topo" not in entry:
            raise UserError(f"design file {path}: entry {i} needs 'nodes' and 'topo'")
        nodes, topo = entry["nodes"], entry["topo"]
        node_count(nodes, f"nodes in entry {i} of {path}")
        parse_topology(topo)
        designs.append(Design(nodes, topo))
    return designs
