"""The plan's layouts side by side: per-cell, nested, nested + --mmap (issue 23)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from experiments import Sweep, api
from experiments.estimate.layouts import (
    LEVERS_FILE,
    Levers,
    Ratio,
    derive_levers,
    layout_estimates,
    load_levers,
)
from experiments.estimate.parameters import GIB

REPO = Path(__file__).resolve().parents[2]
KARY = [sys.executable, "-c", "from experiments.cli import main; main()"]


def _summary(median: float, low: float, high: float) -> dict[str, float]:
    return {"n": 3, "median": median, "min": low, "max": high}


def test_levers_are_derived_from_the_benchmark_figures() -> None:
    results = {
        "cores": 2,
        "busy_share": 0.5,
        # start-up exactly 1 + 0.5 x nodes
        "nested_start_s": {str(n): _summary(1 + 0.5 * n, 1, 20) for n in (2, 4, 8)},
        "generate_s": {str(GIB): _summary(2.0, 1.9, 2.2), str(GIB // 2): _summary(1.0, 1, 1)},
        "create_s": {str(GIB): _summary(10.0, 9.0, 11.0)},
        "create_mmap_s": {str(GIB): _summary(5.0, 4.5, 6.0)},
        "dist_s": {str(GIB): _summary(8.0, 8.0, 8.0)},
        "dist_mmap_s": {str(GIB): _summary(8.0, 8.0, 8.0)},
    }
    levers = derive_levers(results, "test")
    assert levers.start_a == pytest.approx(1.0) and levers.start_b == pytest.approx(0.5)
    assert levers.start_spread == pytest.approx(0.0, abs=1e-9)
    assert levers.nested_start_s(30) == pytest.approx(16.0)
    assert levers.create_mmap == Ratio(0.5, 4.5 / 11.0, 6.0 / 9.0, 1)
    assert levers.distribute_mmap.median == pytest.approx(1.0)
    assert levers.generate_s_per_gb == pytest.approx(2.0)


def test_the_shipped_levers_are_the_benchmark_result_byte_for_byte() -> None:
    # One set of measured figures: the copy beside the estimator is the benchmark's output.
    result = REPO / "benchmarks" / "results" / LEVERS_FILE.name
    assert LEVERS_FILE.read_bytes() == result.read_bytes()
    levers = load_levers()
    assert levers.start_b > 0 and levers.create_mmap.n >= 2


def _eks30_plan() -> api.PlannedSweep:
    return api.plan(
        Sweep(
            cluster=REPO / "clusters" / "eks-30.yaml",
            exact_nodes=30,
            min_size_gb=1,
            max_size_gb=3,
            topos=["kary:1", "kary:2", "kary:4"],
        )
    )


FAKE = Levers(
    start_a=2.0,
    start_b=0.1,
    start_nodes=(2, 4, 8, 16),
    start_n=3,
    start_spread=0.1,
    create_mmap=Ratio(0.5, 0.4, 0.6, 3),
    distribute_mmap=Ratio(1.0, 0.9, 1.1, 3),
    generate_s_per_gb=2.0,
    source="fake",
)


def test_nesting_pays_the_minicluster_once_and_each_blob_once_per_node_count() -> None:
    planned = _eks30_plan()
    estimate = planned.estimate
    per_cell, nested, mmap = layout_estimates(estimate, FAKE)
    assert per_cell.seconds == estimate.seconds and per_cell.cost_usd == estimate.cost_usd
    model, cells = estimate.model, len(estimate.cells)
    assert cells == 3
    minicluster = model.run_overhead_s + model.broker_start_s * 30
    saved = (cells - 1) * minicluster - cells * FAKE.nested_start_s(30)
    assert per_cell.parts["overhead"] - nested.parts["overhead"] == pytest.approx(saved)
    # 1+2+3 GB generated once, not once per cell.
    assert nested.parts["generate"] == pytest.approx(model.generate_s_per_gb * 6)
    assert per_cell.parts["generate"] == pytest.approx(3 * nested.parts["generate"])
    assert nested.parts["create"] == per_cell.parts["create"]
    assert mmap.parts["create"] == pytest.approx(0.5 * per_cell.parts["create"])
    assert mmap.parts["distribute"] == pytest.approx(per_cell.parts["distribute"])
    for layout in (per_cell, nested, mmap):
        assert layout.seconds_low < layout.seconds < layout.seconds_high
        assert layout.cost_usd == pytest.approx(estimate.hourly_usd * layout.seconds / 3600)
    assert mmap.cost_usd < nested.cost_usd < per_cell.cost_usd
    assert any("extrapolated: nested start-up at 30 nodes" in a for a in nested.assumptions)
    assert any("--mmap: create x0.50" in a for a in mmap.assumptions)


def test_a_node_count_split_for_its_log_pays_a_minicluster_and_blobs_per_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A group's log holds one cell here (issue 44, item 1): the nested estimate starts
    and generates as the backend will run it, a MiniCluster per cell, and says why."""
    estimate = _eks30_plan().estimate
    _, whole, _ = layout_estimates(estimate, FAKE)
    monkeypatch.setattr("experiments.estimate.layouts.group_budget", lambda: 1)
    _, split, _ = layout_estimates(estimate, FAKE)
    model = estimate.model
    minicluster = model.run_overhead_s + model.broker_start_s * 30
    assert split.parts["overhead"] - whole.parts["overhead"] == pytest.approx(2 * minicluster)
    assert split.parts["generate"] == pytest.approx(3 * whole.parts["generate"])
    assert any("3 MiniClusters at 30 nodes" in a for a in split.assumptions)
    assert not any("MiniClusters at" in a for a in whole.assumptions)


def test_kary_plan_shows_every_layout_on_a_cluster_and_json_carries_them(tmp_path: Path) -> None:
    args = [
        "plan", "--cluster", "clusters/eks-30.yaml", "--exact-nodes", "30",
        "--min-size", "1", "--max-size", "2", "--iters", "1", "--data-dir", str(tmp_path),
    ]  # fmt: skip
    text = subprocess.run([*KARY, *args], cwd=REPO, capture_output=True, text=True, check=True)
    lines = text.stdout.splitlines()
    start = lines.index("layouts (the same cells; --layout chooses; the 80% interval in brackets):")
    names = [line.split()[0].lstrip("*") for line in lines[start + 1 : start + 4]]
    assert names == ["per-cell", "nested", "nested"]
    assert "nested + --mmap" in lines[start + 3]
    done = subprocess.run([*KARY, *args, "--json"], cwd=REPO, capture_output=True, text=True)
    data = json.loads(done.stdout)
    layouts = {layout["layout"]: layout for layout in data["layouts"]}
    assert set(layouts) == {"per-cell", "nested", "nested + --mmap"}
    assert layouts["per-cell"]["cost_usd"] == data["estimated_cost_usd"]
    for layout in layouts.values():
        assert layout["cost_usd_low"] <= layout["cost_usd"] <= layout["cost_usd_high"]
        assert layout["assumptions"]


def test_a_local_plan_shows_no_layouts_unless_nested_is_asked(tmp_path: Path) -> None:
    base = ["plan", "--backend", "local", "--exact-nodes", "4", "--sizes", "2M"]
    done = subprocess.run(
        [*KARY, *base, "--data-dir", str(tmp_path)], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0 and "layouts" not in done.stdout
    refused = subprocess.run(
        [*KARY, *base, "--layout", "nested", "--data-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        "kary: error: --layout nested runs cells as nested Flux instances: flux or "
        "kubernetes backend, not local"
    )
