"""The smoke cell: the small run a billed sweep makes before its first study cell.

A sweep on a cluster that costs money can fail for reasons no local check
sees (the image, the operator, the nodes' network, the template on that
Flux); finding out on the first 10 GB cell of a 30-node sweep is the most
expensive way.  So kary first runs one small cell: the fewest nodes the sweep
asks, its first two topologies (one if it has one), size 16M, every strategy
it asks, with verify on, and stops the sweep if that fails.

The smoke cell is one cell per topology in kary's terms (a cell is one
nodes x topology), kept under the raw tree's `smoke/` (cell_layout.SMOKE_DIR),
which `kary parse` never reads.  This module only chooses them; where they
run, how they are priced and what the plan says is experiments/smoke.py's.
"""

from __future__ import annotations

from collections.abc import Sequence

from experiments.errors import UserError
from experiments.model.plan import Cell
from experiments.model.render import strategy_waves
from experiments.model.topology import build_tree

__all__ = ["SMOKE_SIZE", "SMOKE_TOPOLOGIES", "smoke_cells"]

# Small enough to cost seconds on any cluster, large enough to be more than one
# content blob at Flux's default 1M chunk size (so the tree really relays).
SMOKE_SIZE = 16 * 2**20
SMOKE_TOPOLOGIES = 2


def smoke_cells(cells: Sequence[Cell]) -> list[Cell]:
    """The smoke cells for a sweep's `cells` (plan order): [] when there are none.

    Nodes: the fewest any cell asks.  Topologies: the first two of that node
    count's cells, then (if it has one only) the sweep's next one that builds
    at that node count.  Knobs and experiment: the first such cell's, so a
    sweep's chunk size or mmap is exercised too.  Iteration 0, size 16M.
    """
    if not cells:
        return []
    nodes = min(cell.nodes for cell in cells)
    first = next(cell for cell in cells if cell.nodes == nodes)
    at_nodes = [cell.topo for cell in cells if cell.nodes == nodes]
    others = [cell.topo for cell in cells if cell.nodes != nodes]
    topos: list[str] = []
    for topo in [*at_nodes, *others]:
        if topo not in topos and _runs_at(topo, nodes, first.strategies):
            topos.append(topo)
        if len(topos) == SMOKE_TOPOLOGIES:
            break
    return [
        Cell(
            nodes,
            topo,
            0,
            (SMOKE_SIZE,),
            first.strategies,
            first.knobs,
            first.experiment,
            blob=first.blob,
        )
        for topo in topos
    ]


def _runs_at(topo: str, nodes: int, strategies: Sequence[str]) -> bool:
    """A topology another node count asks may not build at this one (plan.py checks each)."""
    try:
        tree = build_tree(topo, nodes)
        for strategy in strategies:
            strategy_waves(tree, strategy)
    except (UserError, ValueError):
        return False
    return True
