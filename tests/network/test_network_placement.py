"""TBON edges by shared network layer, and the proposed rank order."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from experiments.errors import UserError
from experiments.model.topology import build_tree
from experiments.network.model import Instance, load_instances
from experiments.network.placement import count_edges, propose_order


def _inst(name: str, l1: str, l2: str, l3: str) -> Instance:
    return Instance(name, (l1, l2, l3))


def test_count_edges_by_shared_layer() -> None:
    ranked = [
        _inst("r0", "A", "B", "C"),
        _inst("r1", "A", "B", "C"),  # same closest switch as r0
        _inst("r2", "A", "B", "D"),  # same layer 2 only
        _inst("r3", "A", "E", "F"),  # child of r1: same layer 1 only
        _inst("r4", "Z", "Y", "X"),  # child of r1: nothing shared
        Instance("r5"),  # child of r2: no topology
    ]
    counts = count_edges(build_tree("kary:2", 6), ranked)
    assert counts.edges == 5
    assert counts.by_shared == {
        "layer-3": 1,
        "layer-2": 1,
        "layer-1": 1,
        "none": 1,
        "unknown": 1,
    }
    assert counts.cross_l3 == 4


def test_two_switches_of_eight_under_kary2_need_one_crossing_edge() -> None:
    # Alternate the two switches: in input order about half the edges cross.
    instances = [_inst(f"i-{n}", "A", "B", "C" if n % 2 else "D") for n in range(16)]
    placement = propose_order(instances, "kary:2")
    assert placement.counts_before.cross_l3 == 7
    # Rank 1's subtree has 8 ranks: one switch takes it, the other the rest.
    assert placement.counts_after.cross_l3 == 1
    assert sorted(i.instance_id for i in placement.order) == sorted(
        i.instance_id for i in instances
    )


def test_a_good_input_order_is_kept() -> None:
    instances = [_inst(f"i-{n}", "A", "B", "C") for n in range(5)]
    placement = propose_order(instances, "binomial")
    assert placement.order == instances
    assert placement.strategy == "input order"
    assert placement.counts_after.cross_l3 == 0


@pytest.mark.parametrize("topo", ["kary:1", "kary:2", "kary:3", "kary:0", "binomial", "mincrit"])
def test_never_worse_than_the_input_order(topo: str) -> None:
    rng = random.Random(topo)
    for _ in range(15):
        n = rng.randint(1, 60)
        instances = [
            Instance(f"i-{k}")
            if rng.random() < 0.1
            else _inst(f"i-{k}", "A", f"B{rng.randint(0, 2)}", f"C{rng.randint(0, 6)}")
            for k in range(n)
        ]
        # Keep the switch tree consistent: a layer-3 name belongs to one layer-2 node.
        instances = [
            i
            if not i.network_nodes
            else _inst(i.instance_id, "A", "B" + i.network_nodes[2], i.network_nodes[2])
            for i in instances
        ]
        placement = propose_order(instances, topo)
        before, after = placement.counts_before, placement.counts_after
        assert after.cross_l3 <= before.cross_l3
        assert sorted(placement.order, key=lambda i: i.instance_id) == sorted(
            instances, key=lambda i: i.instance_id
        )
        assert after == count_edges(placement.tree, placement.order)


def test_example_under_kary2(example: Path) -> None:
    placement = propose_order(load_instances(example), "kary:2")
    assert (placement.counts_before.cross_l3, placement.counts_after.cross_l3) == (16, 7)
    # The two instances without topology end up as leaves: one edge each.
    assert placement.counts_after.by_shared["unknown"] == 2


def test_no_instances_is_a_user_error() -> None:
    with pytest.raises(UserError, match="no instances to place"):
        propose_order([], "kary:2")
