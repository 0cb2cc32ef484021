"""Which cells a billed sweep's smoke cell runs (experiments/model/smoke.py)."""

from __future__ import annotations

from experiments.formats.cell_layout import Knobs
from experiments.model.plan import Cell
from experiments.model.smoke import SMOKE_SIZE, smoke_cells

GIB = 2**30


def _cell(nodes: int, topo: str, iteration: int = 0, **kw: object) -> Cell:
    strategies = kw.pop("strategies", ("all", "leaves"))
    return Cell(nodes, topo, iteration, (GIB, 2 * GIB), strategies, **kw)  # type: ignore[arg-type]


def test_fewest_nodes_first_two_topologies_16m_every_strategy() -> None:
    cells = [
        _cell(8, "kary:1"),
        _cell(4, "kary:3", knobs=Knobs(chunksize=256 * 1024)),
        _cell(4, "kary:2"),
        _cell(4, "binomial"),
        _cell(4, "kary:3", 1),
    ]
    smoke = smoke_cells(cells)
    assert [(c.nodes, c.topo, c.iteration) for c in smoke] == [(4, "kary:3", 0), (4, "kary:2", 0)]
    assert {c.sizes for c in smoke} == {(SMOKE_SIZE,)} and SMOKE_SIZE == 16 * 2**20
    assert {c.strategies for c in smoke} == {("all", "leaves")}
    # The first such cell's knobs, so the sweep's chunk size is exercised too.
    assert {c.knobs for c in smoke} == {Knobs(chunksize=256 * 1024)}


def test_one_topology_at_the_fewest_nodes_borrows_the_next_that_builds_there() -> None:
    # middle needs a tree two levels deep: kary:8 on 4 nodes is one level, so it is passed over.
    cells = [
        _cell(4, "kary:1", strategies=("middle",)),
        _cell(8, "kary:8", strategies=("middle",)),
        _cell(8, "kary:2", strategies=("middle",)),
    ]
    assert [c.topo for c in smoke_cells(cells)] == ["kary:1", "kary:2"]


def test_a_sweep_of_one_topology_smokes_one_and_none_smokes_none() -> None:
    assert [c.id for c in smoke_cells([_cell(6, "kary:2", i) for i in range(3)])] == ["6/kary-2/0"]
    assert smoke_cells([]) == []


def test_a_ping_sweep_smokes_ping() -> None:
    cells = [Cell(4, "kary:2", 0, (GIB,), (), experiment="ping")]
    (smoke,) = smoke_cells(cells)
    assert smoke.experiment == "ping" and smoke.strategies == () and smoke.sizes == (SMOKE_SIZE,)
