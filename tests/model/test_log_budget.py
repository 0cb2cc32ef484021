"""A nested group's log against the kubelet's rotation size (issue 44, item 1)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from benchmark_scripts import load_benchmark

from experiments import api
from experiments.model.log_budget import (
    DEFAULT_ROTATE_BYTES,
    cell_log_bytes,
    group_budget,
    split_by_budget,
)

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results"


def test_groups_split_where_the_next_cell_would_pass_the_budget() -> None:
    assert split_by_budget([3, 3, 3, 1], 6) == [2, 2]
    assert split_by_budget([9, 2], 5) == [1, 1]  # a cell over the budget still runs, alone
    assert split_by_budget([], 5) == []
    assert group_budget() == DEFAULT_ROTATE_BYTES // 2 == 5 * 2**20


def test_the_seeds_30_node_nested_group_stays_under_the_rotation_budget() -> None:
    """The study the README prices (benchmarks/nested_manifest.py's): 16 topologies at 30
    nodes, 1-10 GB, one MiniCluster, whose log stays under half of 10 MiB."""
    planned = api.plan(load_benchmark("nested_manifest").seed_study())
    cells = [c for c in planned.ledger.to_run]
    assert len(cells) == 16 and {len(c.sizes) for c in cells} == {10}
    sizes = [cell_log_bytes(c.experiment, c.nodes, len(c.sizes), len(c.strategies)) for c in cells]
    assert split_by_budget(sizes, group_budget()) == [16]
    # A cell's log grows with the nodes, sizes and strategies it prints for.
    assert cell_log_bytes("distribute", 256, 10, 3) > cell_log_bytes("distribute", 30, 10, 1)
    assert cell_log_bytes("ping", 256, 10, 0) > cell_log_bytes("ping", 30, 10, 0)


def test_the_shipped_fit_is_the_benchmarks_on_its_committed_samples() -> None:
    """One set of figures: what kary predicts is benchmarks/cell_log_bytes.py's fit of the
    samples it measured, and the committed table is that script's output."""
    bench = load_benchmark("cell_log_bytes")
    samples = json.loads((RESULTS / "cell-log-bytes-emulator.json").read_text())["samples"]
    for experiment in ("distribute", "ping"):
        coef = bench.fit(samples, experiment)
        for nodes, sizes, strategies in ((4, 1, 1), (30, 10, 1), (256, 10, 3)):
            expected = math.ceil(bench.predict(coef, experiment, nodes, sizes, strategies) - 1e-6)
            assert abs(cell_log_bytes(experiment, nodes, sizes, strategies) - expected) <= 1
    table = (RESULTS / "cell-log-bytes-emulator.txt").read_text()
    assert table == bench.report(samples) + "\n"
