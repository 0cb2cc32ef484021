"""A cloud plan's network term is a link floor, a lower bound (issue 42, item 8): its
interval keeps the floor as the low end and takes the most kary's box runs measured
over their floor at the high end, and says so; a spot plan prices the cells that
interruptions would run again."""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import box_topologies  # noqa: E402

from experiments.cli import app  # noqa: E402
from experiments.estimate.floor_ratio import (  # noqa: E402
    FLOOR_RATIO_CELLS,
    FLOOR_RATIO_HIGH,
    FLOOR_RATIO_LOW,
    link_floor_seconds,
)
from experiments.estimate.plan_estimate import estimate_for  # noqa: E402
from experiments.estimate.spot_reruns import MONTH_HOURS, parse_band  # noqa: E402
from experiments.estimate.structure import cell_steps  # noqa: E402
from experiments.model.cluster_spec import load_cluster_spec  # noqa: E402
from experiments.model.plan import ExperimentSpec, plan_experiment  # noqa: E402
from experiments.model.units import parse_size  # noqa: E402

runner = CliRunner()
GIB = 2**30
EKS_30 = REPO / "clusters" / "eks-30.yaml"
EKS_SPOT = REPO / "clusters" / "eks-30-spot.yaml"


def test_the_floor_ratios_are_those_of_the_committed_box_runs() -> None:
    """Median over link floor of every box cell kary did not judge CPU-bound, from the
    samples docs/box.md's tables are made from."""
    ratios = []
    for path in sorted((REPO / "benchmarks" / "results").glob("box-topologies-n*.json")):
        data = json.loads(path.read_text())
        size = parse_size(data["size"])
        for speed in data["speeds"]:
            cpu_bound = box_topologies._cpu_bound(data, speed)
            for topo, times in data["box"][speed].items():
                if times and topo not in cpu_bound:
                    floor = box_topologies.floor(topo, data["nodes"], size, speed).seconds
                    ratios.append(statistics.median(times) / floor)
    assert len(ratios) == FLOOR_RATIO_CELLS
    assert (round(min(ratios), 2), round(max(ratios), 2)) == (FLOOR_RATIO_LOW, FLOOR_RATIO_HIGH)


def _flat_estimate(tmp_path: Path, cluster: Path = EKS_30):  # type: ignore[no-untyped-def]
    """30 nodes, the flat tree, 10 GB: rank 0's link sends 29 copies, the floor is most
    of the cell."""
    plan = plan_experiment(
        ExperimentSpec(exact_nodes=30, topos=["kary:0"], sizes=[10 * GIB], data_dir=tmp_path)
    )
    return estimate_for(plan.cells, "kubernetes", verify=False, cluster=load_cluster_spec(cluster))


def test_a_link_floor_is_the_low_end_and_the_box_ratio_the_high_end(tmp_path: Path) -> None:
    estimate = _flat_estimate(tmp_path)
    (cell,) = estimate.cells
    floor = sum(link_floor_seconds(s, estimate.model) for s in cell_steps(cell.cell, False))
    # 10 GB x 29 copies at 10 Gbit/s: the floor, and the distribution it sets.
    assert floor == pytest.approx(10 * 29 * 8 / 10, rel=1e-6)
    assert estimate.parts["distribute"] >= floor
    # No run beats its floor, and the most a box run took over its floor is at the high end.
    assert estimate.seconds_low >= floor
    assert estimate.seconds_high >= estimate.seconds + (FLOOR_RATIO_HIGH - 1) * floor
    (assumed,) = [a for a in estimate.assumptions if a.term == "link floor"]
    assert assumed.share == pytest.approx(floor / cell.seconds)  # of the cells, as the rest
    assert "link floor (10 Gbit/s), a lower bound: the high end takes 1.80x it" in assumed.detail


def test_the_plan_says_its_network_term_is_a_lower_bound(tmp_path: Path) -> None:
    args = ["plan", "--cluster", str(EKS_30), "--exact-nodes", "30", "--topo", "kary:0"]
    result = runner.invoke(app, [*args, "--sizes", "10G", "--data-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.stdout.splitlines() if "link floor (10 Gbit/s)" in x]
    assert line.startswith("assumed: network at the instance's link floor (10 Gbit/s), a lower ")


def test_interruption_bands_are_read_as_the_advisor_writes_them() -> None:
    assert parse_band("5-10%") == (0.05, 0.10)
    assert parse_band("<5%") == (0.0, 0.05)
    assert parse_band(">20%") is None and parse_band("often") is None


def test_a_spot_plan_prices_the_cells_interruptions_would_run_again(tmp_path: Path) -> None:
    spot = _flat_estimate(tmp_path, EKS_SPOT)
    on_demand = _flat_estimate(tmp_path / "od", EKS_30)
    reruns = spot.spot_reruns
    assert reruns is not None and on_demand.spot_reruns is None
    (cell,) = spot.cells
    # The catalog's band for c5a.4xlarge in us-east-2 is 5-10% a month; its middle for the
    # point: the chance any of the 30 nodes goes during the cell, times the cell again.
    hours = cell.seconds / 3600
    expected = (1 - math.exp(-0.075 * 30 * hours / MONTH_HOURS)) * cell.seconds
    assert reruns.seconds == pytest.approx(expected)
    assert reruns.seconds_low < reruns.seconds < reruns.seconds_high
    # In the time and the cost: the spot plan is the on-demand one's time plus its re-runs.
    assert spot.parts["spot re-runs"] == reruns.seconds
    assert spot.seconds == pytest.approx(on_demand.seconds + reruns.seconds)
    assert spot.seconds_high == pytest.approx(on_demand.seconds_high + reruns.seconds_high)


def test_the_spot_bill_shows_its_re_runs_and_on_demand_has_none(tmp_path: Path) -> None:
    args = ["plan", "--exact-nodes", "30", "--topo", "kary:2", "--sizes", "1G"]
    spot = runner.invoke(app, [*args, "--cluster", str(EKS_SPOT), "--data-dir", str(tmp_path)])
    assert spot.exit_code == 0, spot.output
    (line,) = [x for x in spot.stdout.splitlines() if x.startswith("  spot re-runs: ")]
    assert line.startswith("  spot re-runs: 5-10% of instances reclaimed a month (the Spot")
    assert "of cells re-run = $" in line
    plain = runner.invoke(app, [*args, "--cluster", str(EKS_30), "--data-dir", str(tmp_path)])
    assert plain.exit_code == 0, plain.output
    assert "spot re-runs" not in plain.stdout


def test_the_readme_says_the_spot_plans_network_term_is_a_lower_bound() -> None:
    readme = (REPO / "README.md").read_text()
    section = readme.split("## What flux-distribute's study costs", 1)[1].split("\n## ", 1)[0]
    prose = section.split("<!-- /figure plan-spot -->", 1)[1]
    assert "network term is a lower bound" in " ".join(prose.split())
    assert f"{FLOOR_RATIO_HIGH:.2f} times" in prose
