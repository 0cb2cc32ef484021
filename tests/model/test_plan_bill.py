"""What a plan says of its money and its designs (issue 36): the hourly bill line by line
(workers, the control plane with its support tier and why, disks), stale prices warned
of, the layout footnote naming the dearer layout by the numbers, and where the designs
came from."""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path

import pytest
from typer.testing import CliRunner

from experiments import plan
from experiments.cli import app
from experiments.estimate.layouts import LayoutEstimate
from experiments.estimate.prices import (
    cluster_hourly_price,
    load_price_catalog,
    stale_prices_line,
)
from experiments.formats.run_record import NESTED, PER_CELL
from experiments.model.cluster_spec import load_cluster_spec
from experiments.model.design_source import design_source
from experiments.model.plan import Cell
from experiments.model.sweep import Sweep
from experiments.plan_view import layout_lines

runner = CliRunner()
CLUSTERS = Path(__file__).resolve().parents[2] / "clusters"
EKS_30 = CLUSTERS / "eks-30.yaml"
GKE_30 = CLUSTERS / "gke-30.yaml"


def _plan(*args: str) -> list[str]:
    result = runner.invoke(app, ["plan", *args])
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def _eks_30_on_1_33(folder: Path) -> Path:
    """eks-30.yaml as it was before it moved to 1.35: Kubernetes 1.33."""
    raw = EKS_30.read_text()
    assert raw.count('version: "1.35"') == 1
    folder.mkdir()
    path = folder / "eks-30.yaml"
    path.write_text(raw.replace('version: "1.35"', 'version: "1.33"'))
    return path


def test_the_hourly_figure_is_broken_down_in_text_and_json(tmp_path: Path) -> None:
    # clusters/prices.yaml: EKS 1.33 left standard support on 2026-07-29, so the control
    # plane's line says which tier it bills and why.
    cluster = _eks_30_on_1_33(tmp_path / "cluster")
    args = ["--cluster", str(cluster), "--exact-nodes", "30", "--data-dir", str(tmp_path)]
    lines = _plan(*args)
    assert "  workers: 30 x c5a.4xlarge at $0.6160/h = $18.48/h, as of 2025-07-01" in lines
    assert (
        "  control plane: $0.60/h, EKS extended support (Kubernetes 1.33 in extended support "
        "since 2026-07-29; standard support is $0.10/h), as of 2026-11-25"
    ) in lines
    assert "  disks: 30 x 200 GiB gp2 at $0.0274/h = $0.82/h, as of 2026-11-26" in lines
    # eksctl's VPC: one NAT gateway by default, and a public IPv4 address per node in its
    # public subnets and for the gateway.
    assert (
        "  NAT gateway: 1 x $0.0450/h (eksctl's default vpc.nat.gateway Single) = $0.045/h, "
        "as of 2026-09-20; plus $0.045 per GB it carries (nodes in public subnets send "
        "nothing through it)"
    ) in lines
    assert (
        "  public IPv4: 31 x $0.0050/h (30 nodes in public subnets + the NAT gateway's "
        "Elastic IP) = $0.155/h, as of 2026-02-24"
    ) in lines
    plan = json.loads(runner.invoke(app, ["plan", *args, "--json"]).stdout)
    bill = plan["bill"]
    assert bill["workers"] == [
        {
            "instance_type": "c5a.4xlarge",
            "count": 30,
            "capacity": "on-demand",
            "usd_per_hour_each": 0.616,
            "usd_per_hour": 18.48,
            "usd_per_hour_high": 18.48,
            "prices_as_of": "2025-07-01",
            "instance_types": ["c5a.4xlarge"],
            "spot": None,
            "on_demand_usd_per_hour_each": None,
        }
    ]
    control = bill["control_plane"]
    assert (control["usd_per_hour"], control["standard_usd_per_hour"]) == (0.60, 0.10)
    assert control["support"] == "extended" and control["kubernetes_version"] == "1.33"
    assert control["as_of"] == "2026-11-25" and "EKS User Guide" in control["source"]
    assert bill["disks"]["as_of"] == "2026-11-26" and "EBS" in bill["disks"]["source"]
    nat, ipv4 = bill["nat_gateway"], bill["public_ipv4"]
    assert (nat["count"], nat["usd_per_hour_each"], nat["as_of"]) == (1, 0.045, "2026-09-20")
    assert "VPC pricing" in nat["source"]
    assert (ipv4["count"], ipv4["usd_per_hour_each"], ipv4["as_of"]) == (31, 0.005, "2026-02-24")
    assert "2024-02-01" in ipv4["source"]
    parts = (
        18.48
        + control["usd_per_hour"]
        + bill["disks"]["usd_per_hour"]
        + nat["usd_per_hour"]
        + ipv4["usd_per_hour"]
    )
    assert plan["hourly_usd"] == pytest.approx(parts, abs=1e-3)
    # All on demand: no spot line, no high end above the point, nothing side by side.
    assert bill["usd_per_hour_high"] == bill["usd_per_hour"] and plan["capacity"] is None
    assert not any(line.startswith("capacity:") for line in lines)


def test_a_control_plane_in_standard_support_says_so() -> None:
    cluster = load_cluster_spec(EKS_30)
    # The last day of 1.35's standard support (clusters/prices.yaml).
    price = cluster_hourly_price(cluster, load_price_catalog(), date(2027, 3, 27))
    assert price.control_plane is not None
    assert price.control_plane.text() == "$0.10/h, EKS standard support for Kubernetes 1.35"


def test_prices_older_than_90_days_are_warned_of_with_how_to_refresh() -> None:
    catalog = load_price_catalog()
    cluster = load_cluster_spec(EKS_30)
    # The catalog prices c5a.4xlarge as of 2025-07-01.
    fresh = cluster_hourly_price(cluster, catalog, date(2025, 9, 29))
    assert stale_prices_line(fresh, catalog, cluster.region) is None
    old = cluster_hourly_price(cluster, catalog, date(2025, 9, 30))
    assert stale_prices_line(old, catalog, cluster.region) == (
        "warning: the c5a.4xlarge price is from 2025-07-01, 91 days old (more than 90): the "
        "bill may be off; `kary prices refresh --region us-east-2 --instance-type c5a.4xlarge` "
        "updates it"
    )
    gke = load_cluster_spec(GKE_30)
    line = stale_prices_line(cluster_hourly_price(gke, catalog), catalog, gke.region)
    assert line is not None and line.endswith(
        "the bill may be off; update " + str(CLUSTERS / "prices.yaml") + " by hand (kary "
        "refreshes AWS prices only)"
    )


def test_the_cost_line_sums_only_what_it_priced(tmp_path: Path) -> None:
    # gke-30's public IPv4 has no price in the catalog: its own line says "not priced",
    # and the sum beside the nodes must not claim to include it.
    lines = _plan("--cluster", str(GKE_30), "--exact-nodes", "30", "--data-dir", str(tmp_path))
    (cost,) = [line for line in lines if line.startswith("cost: ")]
    assert cost.startswith(
        "cost: 30 nodes (c2d-standard-32 workers) + control plane + disks = $44.51/h "
        "(prices as of 2025-07-01; not priced: public IPv4) -> $"
    )
    assert [
        line for line in lines if line.startswith("  public IPv4: 30 (") and "not priced" in line
    ]
    eks = _plan("--cluster", str(EKS_30), "--exact-nodes", "30", "--data-dir", str(tmp_path))
    (eks_cost,) = [line for line in eks if line.startswith("cost: ")]
    assert "+ NAT gateway + public IPv4 = $19.60/h (prices as of 2025-07-01) -> $" in eks_cost


def test_the_plan_shows_the_stale_price_warning(tmp_path: Path) -> None:
    lines = _plan("--cluster", str(EKS_30), "--exact-nodes", "30", "--data-dir", str(tmp_path))
    assert [line for line in lines if line.startswith("warning: the c5a.4xlarge price is from")]


def _layout(name: str, seconds: float, hourly: float = 4.42) -> LayoutEstimate:
    return LayoutEstimate(name, seconds, seconds * 0.8, seconds * 1.2, hourly, {})


def test_the_footnote_names_the_dearer_layout_by_the_numbers() -> None:
    # eks-6: per-cell 13 min 56 s against nested 13 min 59 s: nested is the dearer.
    layouts = [_layout(PER_CELL, 836), _layout(NESTED, 839)]
    assert layout_lines(layouts, NESTED)[-1] == (
        "  (the time and cost above are nested's, the layout the sweep runs, marked *: "
        "13 min 59 s, $1.03; per-cell would take 13 min 56 s, $1.03; nested is the dearer, "
        "and --max-cost and --max-hours hold the sweep to its figure)"
    )
    cheaper = [_layout(PER_CELL, 9900), _layout(NESTED, 8220)]
    assert "; per-cell is the dearer," in layout_lines(cheaper, NESTED)[-1]
    unbilled = [_layout(PER_CELL, 40.5, 0.0), _layout(NESTED, 44.5, 0.0)]
    assert layout_lines(unbilled, NESTED)[-1] == (
        "  (the time and cost above are nested's, the layout the sweep runs, marked *: "
        "44.5 s; per-cell would take 40.5 s; nested is the longer, and --max-cost and "
        "--max-hours hold the sweep to its figure)"
    )
    assert not [line for line in layout_lines(layouts, PER_CELL) if "the sweep runs" in line]


def test_the_headline_prices_the_layout_the_sweep_runs(tmp_path: Path) -> None:
    # eks-30 runs its 16 topologies nested: the cost line is nested's, not per-cell's.
    lines = _plan("--cluster", str(EKS_30), "--exact-nodes", "30", "--data-dir", str(tmp_path))
    (cost,) = [line for line in lines if line.startswith("cost: ")]
    (nested,) = [line for line in lines if line.startswith(" *nested ")]
    (per_cell,) = [line for line in lines if line.startswith("  per-cell ")]
    headline = re.search(r"-> (\$[0-9.,]+ \(\$[0-9.,]+ - \$[0-9.,]+\))$", cost)
    assert headline is not None
    assert nested.endswith(headline[1]) and not per_cell.endswith(headline[1])
    (time,) = [line for line in lines if line.startswith("time: ")]
    assert time.startswith("time: " + nested.split()[1] + " h " + nested.split()[3] + " min")


def _cells(*designs: tuple[int, str]) -> list[Cell]:
    return [Cell(nodes, topo, 0, (1,), ("all",)) for nodes, topo in designs]


def test_the_design_source_is_named(tmp_path: Path) -> None:
    six = _cells((6, "kary:1"), (6, "kary:2"))
    assert design_source(Sweep(exact_nodes=6), six).text() == (
        "designs: 2 topologies at 6 nodes, from the default design file designs/kary-designs.json"
    )
    assert design_source(Sweep(exact_nodes=6, topos=["kary:1"]), six[:1]).text() == (
        "designs: 1 topology at 6 nodes, from --topo"
    )
    mine = tmp_path / "mine.json"
    spread = _cells((4, "kary:1"), (6, "kary:1"), (6, "kary:2"))
    assert design_source(Sweep(max_nodes=6, designs=mine), spread).text() == (
        f"designs: 3 designs (nodes and topology) at 2 node counts, 4-6, from the design file "
        f"{mine}"
    )
    axis = Sweep(exact_nodes=6, matrix={"topo": ["kary:1", "kary:2"]})
    assert design_source(axis, six).text().endswith("from the topo axis")


def test_the_plan_says_its_16_topologies_come_from_the_default_design_file(
    tmp_path: Path,
) -> None:
    args = ["--cluster", str(EKS_30), "--exact-nodes", "30", "--data-dir", str(tmp_path)]
    lines = _plan(*args)
    assert lines[3] == (
        "designs: 16 topologies at 30 nodes, from the default design file designs/kary-designs.json"
    )
    plan = json.loads(runner.invoke(app, ["plan", *args, "--json"]).stdout)
    assert plan["designs"] == {
        "count": 16,
        "nodes": [30],
        "source": "the default design file designs/kary-designs.json",
    }


@pytest.mark.usefixtures("flux_box_here")
def test_the_caps_hold_a_sweep_to_its_layout_where_that_is_dearer(tmp_path: Path) -> None:
    # Here a nested test instance starts no faster than a fresh one (estimate/layouts.py).
    sweep = Sweep(
        exact_nodes=8,
        topos=["kary:1", "kary:2"],
        sizes="16M",
        backend="flux",
        layout=NESTED,
        data_dir=tmp_path,
    )
    planned = plan(sweep)
    nested = next(layout for layout in planned.layouts() if layout.name == NESTED)
    assert nested.seconds > planned.estimate.seconds
    held = planned.held_to()
    assert (held.seconds, held.seconds_high) == (nested.seconds, nested.seconds_high)


def test_a_plan_is_priced_on_source_date_epochs_day_when_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The catalog prices c5a.4xlarge as of 2025-07-01: fresh for 90 days, then warned of.
    args = ("--cluster", str(EKS_30), "--exact-nodes", "30", "--data-dir", str(tmp_path))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1759104000")  # 2025-09-29
    assert not [line for line in _plan(*args) if "days old" in line]
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1759190400")  # 2025-09-30
    assert [line for line in _plan(*args) if "from 2025-07-01, 91 days old" in line]
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "next week")
    result = runner.invoke(app, ["plan", *args])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "kary: error: SOURCE_DATE_EPOCH='next week' is not a Unix time in seconds (e.g. 1795651200)"
    ]
