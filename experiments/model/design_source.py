"""Where a plan's designs came from, in words: --topo, a sweep file's topo axis, or a
design file (the default one unless --data names another).

`kary plan --exact-nodes 30` runs every design the default design file lists
for 30 nodes (16 of them), which nothing in the command says; the plan names
the source so a reader knows what they asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from experiments.model.plan import Cell
from experiments.model.sweep import Sweep

__all__ = ["DEFAULT_DESIGN_FILE", "DesignSource", "design_source"]

# The design file kary ships (experiments.resources), as a reader of the repository finds it.
DEFAULT_DESIGN_FILE = "designs/kary-designs.json"


@dataclass(frozen=True)
class DesignSource:
    """How many designs a plan runs, at which node counts, and where they came from."""

    designs: int
    node_counts: tuple[int, ...]
    source: str  # "the default design file designs/kary-designs.json"

    def text(self) -> str:
        """`designs: 16 topologies at 30 nodes, from the default design file ...`."""
        if len(self.node_counts) == 1:
            topologies = _count(self.designs, "topology", "topologies")
            what = f"{topologies} at {self.node_counts[0]} nodes"
        else:
            low, high = min(self.node_counts), max(self.node_counts)
            what = (
                f"{_count(self.designs, 'design', 'designs')} (nodes and topology) at "
                f"{len(self.node_counts)} node counts, {low}-{high}"
            )
        return f"designs: {what}, from {self.source}"

    def record(self) -> dict[str, Any]:
        return {"count": self.designs, "nodes": list(self.node_counts), "source": self.source}


def design_source(sweep: Sweep, cells: Sequence[Cell]) -> DesignSource:
    """The designs `cells` run and where `sweep` took them from."""
    designs = {(cell.nodes, cell.topo) for cell in cells}
    nodes = tuple(sorted({cell.nodes for cell in cells}))
    return DesignSource(len(designs), nodes, _source(sweep))


def _source(sweep: Sweep) -> str:
    if "topo" in sweep.matrix or "topo" in sweep.zip:
        where = f" of {sweep.file.path}" if sweep.file is not None else ""
        return f"the topo axis{where}"
    if sweep.topos:
        return "--topo"
    if sweep.designs is None:
        return f"the default design file {DEFAULT_DESIGN_FILE}"
    return f"the design file {sweep.designs}"


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"
