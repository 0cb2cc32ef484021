"""Local plans on emulated links (--link-bandwidth / --link-latency): what the plan predicts.

No timing here: these pin the model's structure (store and forward per 1 MiB
blob; a broker's link carries one copy per child).  How close it lands to
measured runs is benchmarks/local_links_bench.py's job.
"""

from __future__ import annotations

import pytest

from experiments.estimate.plan_estimate import with_emulated_links
from experiments.estimate.time_model import CellTime, default_time_model, predict_cell
from experiments.model.links import link_settings
from experiments.model.plan import Cell

MIB = 2**20


def _predict(
    topo: str,
    size: int,
    bandwidth: str | None,
    latency: str | None = None,
    nodes: int = 7,
    strategies: tuple[str, ...] = ("all",),
) -> CellTime:
    model = default_time_model("local")
    if bandwidth or latency:
        model = with_emulated_links(model, link_settings(bandwidth, latency))
    return predict_cell(Cell(nodes, topo, 0, (size,), strategies), model, verify=True)


def _link_s(size: int, copies: int, bits_per_s: float) -> float:
    return size * copies * 8 / bits_per_s


@pytest.mark.parametrize(("topo", "fanout"), [("kary:1", 1), ("kary:2", 2), ("kary:6", 6)])
@pytest.mark.parametrize("size", [8 * MIB, 64 * MIB, 1024 * MIB])
def test_the_root_link_sends_one_copy_per_child(topo: str, fanout: int, size: int) -> None:
    cell = _predict(topo, size, "200Mbit")
    assert cell.parts["distribute"] >= _link_s(size, fanout, 200e6)


def test_a_wide_tree_on_a_slow_link_is_the_link_and_nothing_else() -> None:
    # kary:6 on 7 nodes: the root feeds 6 leaves; 64M at 200 Mbit/s is 16.1 s of
    # its link, far more than the CPU the emulator spends, so that is the time.
    model = default_time_model("local")
    cell = _predict("kary:6", 64 * MIB, "200Mbit")
    assert cell.parts["distribute"] == pytest.approx(
        _link_s(64 * MIB, 6, 200e6) + model.distribute_s
    )


def test_half_the_bandwidth_doubles_a_link_bound_distribution() -> None:
    fixed = default_time_model("local").distribute_s
    fast = _predict("kary:6", 256 * MIB, "200Mbit").parts["distribute"] - fixed
    slow = _predict("kary:6", 256 * MIB, "100Mbit").parts["distribute"] - fixed
    assert slow == pytest.approx(2 * fast)


def test_each_level_below_the_root_adds_one_blob_per_child() -> None:
    # Store and forward: a level can pass a blob on only once it has it all.
    model = with_emulated_links(default_time_model("local"), link_settings("200Mbit", None))
    blob = MIB * 8 / 200e6
    assert model.distribute_wave_s(fanout=2, depth=3) == pytest.approx(
        model.distribute_s + 2 * 2 * blob
    )
    assert model.distribute_wave_s(fanout=6, depth=1) == pytest.approx(model.distribute_s)


def test_links_only_ever_slow_a_plan_down_and_touch_only_distribution() -> None:
    for topo in ("kary:1", "kary:2", "kary:6"):
        free = _predict(topo, 64 * MIB, None, strategies=("all", "leaves"))
        shaped = _predict(topo, 64 * MIB, "1Gbit", "200us", strategies=("all", "leaves"))
        assert shaped.parts["distribute"] > free.parts["distribute"]
        for part in ("overhead", "generate", "create", "verify", "delete", "clean"):
            assert shaped.parts[part] == free.parts[part], (topo, part)


def test_latency_costs_a_chain_but_hides_behind_siblings_on_a_busy_link() -> None:
    blobs, depth, round_trip = 64, 6, 2 * 0.001
    chain = _predict("kary:1", 64 * MIB, "200Mbit", "1ms").parts["distribute"]
    chain_free = _predict("kary:1", 64 * MIB, "200Mbit").parts["distribute"]
    # Nothing overlaps a lone child's wait: every blob's request and reply cross
    # each of the 6 levels, and so does the first request.
    assert chain - chain_free == pytest.approx(blobs * round_trip * depth + depth * round_trip)
    wide = _predict("kary:6", 64 * MIB, "200Mbit", "1ms").parts["distribute"]
    wide_free = _predict("kary:6", 64 * MIB, "200Mbit").parts["distribute"]
    # kary:6: five siblings' 42 ms copies hide each child's 2 ms round trip;
    # only the first request's climb (one level) shows.
    assert wide - wide_free == pytest.approx(2 * 0.001)


def test_every_wave_pays_the_link_again() -> None:
    one = _predict("kary:2", 64 * MIB, "200Mbit", strategies=("all",))
    middle = _predict("kary:2", 64 * MIB, "200Mbit", strategies=("middle",))
    assert middle.parts["distribute"] == pytest.approx(2 * one.parts["distribute"])
    assert middle.parts["distribute"] >= 2 * _link_s(64 * MIB, 2, 200e6)


def test_more_ranks_cost_more_cpu_on_shared_cores() -> None:
    small = _predict("kary:2", 64 * MIB, None, nodes=7)
    big = _predict("kary:2", 64 * MIB, None, nodes=16)
    # 15 receiving ranks against 6, all on the same cores.
    assert big.parts["distribute"] > 2 * small.parts["distribute"]
    assert big.parts["verify"] > small.parts["verify"]
    assert big.parts["overhead"] > small.parts["overhead"]
