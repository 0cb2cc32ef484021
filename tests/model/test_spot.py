"""Spot capacity in the plan (issue 34, item 4): cluster files that ask for it, dated spot
prices read from the catalog, spot and on-demand side by side, an interval that holds the
time's spread and the price's (p90), and a --max-cost that checks the spot high end."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from experiments.cli import app
from experiments.errors import UserError
from experiments.estimate.layouts import layout_estimates
from experiments.estimate.plan_estimate import estimate_for
from experiments.estimate.prices import (
    cluster_hourly_price,
    load_price_catalog,
    stale_prices_line,
)
from experiments.model.cluster_spec import ON_DEMAND, SPOT, load_cluster_spec
from experiments.model.plan import ExperimentSpec, plan_experiment
from experiments.plan_view import layout_lines

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
EKS_SPOT = REPO / "clusters" / "eks-30-spot.yaml"
GKE_SPOT = REPO / "clusters" / "gke-30-spot.yaml"
GIB = 2**30


def _eks(tmp_path: Path, groups: str, extra: str = "") -> Path:
    path = tmp_path / "eks.yaml"
    path.write_text(
        "apiVersion: eksctl.io/v1alpha5\nkind: ClusterConfig\n"
        "metadata: {name: c, region: us-east-2, version: '1.35'}\n"
        f"availabilityZones: [us-east-2b, us-east-2c]\n{extra}{groups}"
    )
    return path


def _catalog(tmp_path: Path, spot: dict, regions: dict | None = None) -> Path:
    """The shipped catalog with its spot section replaced (and regions' prices added)."""
    raw = yaml.safe_load((REPO / "clusters" / "prices.yaml").read_text())
    raw["spot"] = spot
    for region, prices in (regions or {}).items():
        raw["regions"][region]["usd_per_hour"].update(prices)
    path = tmp_path / "prices.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _entry(usd: float, p90: float | None, as_of: str = "2026-11-20", **more: object) -> dict:
    return {
        "usd_per_hour": usd,
        "p90_usd_per_hour": p90,
        "point": "median",
        "window": "30 days",
        "as_of": as_of,
        "source": "test",
        **more,
    }


def test_the_spot_cluster_files_ask_for_spot_and_a_version_in_standard_support() -> None:
    eks = load_cluster_spec(EKS_SPOT)
    assert (eks.capacity, eks.instance_type, eks.nodes, eks.zone) == (
        SPOT,
        "c5a.4xlarge",
        30,
        "us-east-2b",
    )
    (workers,) = eks.node_groups
    assert (workers.capacity, workers.types, workers.zones) == (
        SPOT,
        ("c5a.4xlarge",),
        ("us-east-2b",),
    )
    # 1.33 bills EKS's extended rate since 2026-07-29; the spot file's 1.35 is in standard
    # support until 2027-03-27 (clusters/prices.yaml's calendar).
    catalog = load_price_catalog()
    assert eks.kubernetes_version == "1.35"
    assert catalog.control_plane("eks", "1.35", date(2026, 11, 26)).usd_per_hour == 0.10
    assert catalog.control_plane("eks", "1.35", date(2027, 3, 27)).usd_per_hour == 0.10
    assert catalog.control_plane("eks", "1.35", date(2027, 3, 28)).usd_per_hour == 0.60
    gke = load_cluster_spec(GKE_SPOT)
    assert (gke.capacity, gke.node_groups[0].capacity, gke.nat_gateways) == (SPOT, SPOT, 0)
    # The on-demand twins stay on demand.
    assert load_cluster_spec(REPO / "clusters" / "eks-30.yaml").capacity == ON_DEMAND


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        (
            "managedNodeGroups:\n  - {name: w, instanceType: c5a.4xlarge, "
            "instanceTypes: [c5a.4xlarge], desiredCapacity: 2}\n",
            r"only one of instanceType or instanceTypes can be specified "
            r"\(managedNodeGroups\[0\]\)",
        ),
        (
            "nodeGroups:\n  - {name: w, instanceType: c5a.4xlarge, spot: true, "
            "desiredCapacity: 2}\n",
            "spot and instanceTypes are managed node group fields",
        ),
        (
            "managedNodeGroups:\n  - {name: w, instanceTypes: c5a.4xlarge, desiredCapacity: 2}\n",
            "instanceTypes must be a list",
        ),
        (
            "managedNodeGroups:\n  - {name: w, instanceTypes: [c5a.4xlarge], spot: yes-please, "
            "desiredCapacity: 2}\n",
            "spot must be true or false",
        ),
    ],
)
def test_what_eksctl_refuses_of_a_groups_capacity_is_one_line(
    tmp_path: Path, groups: str, message: str
) -> None:
    with pytest.raises(UserError, match=message):
        load_cluster_spec(_eks(tmp_path, groups))


@pytest.mark.parametrize(
    ("vpc", "nats"),
    [
        ("", 1),  # eksctl's default vpc.nat.gateway: Single
        ("vpc: {nat: {gateway: HighlyAvailable}}\n", 2),  # one per zone
        ("vpc: {nat: {gateway: Disable}}\n", 0),
        ("vpc: {id: vpc-0123, subnets: {public: {a: {id: subnet-1}}}}\n", 0),
    ],
)
def test_the_nat_gateways_eksctl_makes_are_counted(tmp_path: Path, vpc: str, nats: int) -> None:
    groups = "managedNodeGroups:\n  - {name: w, instanceType: c5a.4xlarge, desiredCapacity: 4}\n"
    assert load_cluster_spec(_eks(tmp_path, groups, vpc)).nat_gateways == nats


def test_a_group_of_several_types_is_priced_at_the_dearest_on_demand_and_spot(
    tmp_path: Path,
) -> None:
    path = _eks(
        tmp_path,
        "managedNodeGroups:\n  - {name: w, spot: true, instanceTypes: [c5a.4xlarge, "
        "c6a.4xlarge], availabilityZones: [us-east-2b], privateNetworking: true, "
        "desiredCapacity: 10}\n",
    )
    catalog = load_price_catalog(
        _catalog(
            tmp_path,
            {
                "us-east-2": {
                    "c5a.4xlarge": {"us-east-2b": _entry(0.25, 0.27)},
                    "c6a.4xlarge": {"region": _entry(0.31, 0.40)},
                }
            },
        )
    )
    price = cluster_hourly_price(load_cluster_spec(path), catalog, date(2026, 11, 26))
    (worker,) = price.workers
    # c6a's spot price is the dearer (its region-wide entry: us-east-2b has none of its own).
    assert (worker.instance_type, worker.usd_per_hour_each, worker.capacity) == (
        "c6a.4xlarge",
        0.31,
        SPOT,
    )
    assert worker.spot is not None and worker.spot.where == "us-east-2 (region-wide)"
    assert worker.usd_per_hour_high == pytest.approx(10 * 0.40)
    # On demand, c5a at $0.616 and c6a at $0.612: the group is priced at c5a's.
    assert price.on_demand is not None
    (on_demand,) = price.on_demand.workers
    assert (on_demand.instance_type, on_demand.usd_per_hour_each) == ("c5a.4xlarge", 0.616)
    # Private nodes hold no public IPv4: only the NAT gateway's Elastic IP bills.
    ipv4 = next(line for line in price.extras if line.item == "public_ipv4")
    assert (ipv4.count, ipv4.why) == (1, "0 nodes in public subnets + the NAT gateway's Elastic IP")
    assert worker.text().startswith(
        "10 x c6a.4xlarge spot (the dearest of c5a.4xlarge, c6a.4xlarge) at $0.3100/h = $3.10/h "
        "(us-east-2 (region-wide) median of 30 days to 2026-11-20; p90 $0.4000/h)"
    )


def test_a_spot_price_the_catalog_lacks_says_how_to_add_it(tmp_path: Path) -> None:
    catalog = load_price_catalog(_catalog(tmp_path, {}))
    with pytest.raises(UserError, match=r"kary prices refresh --spot --region us-east-2"):
        cluster_hourly_price(load_cluster_spec(EKS_SPOT), catalog)


def test_a_bad_spot_entry_is_one_line(tmp_path: Path) -> None:
    spot = {"us-east-2": {"c5a.4xlarge": {"region": {"usd_per_hour": 0.3}}}}
    with pytest.raises(UserError, match="spot.us-east-2.c5a.4xlarge.region lacks as_of, source"):
        load_price_catalog(_catalog(tmp_path, spot))


def test_old_or_undated_spot_prices_are_warned_of_like_on_demand_ones(tmp_path: Path) -> None:
    cluster = load_cluster_spec(EKS_SPOT)
    fresh = {"us-east-2": {"c5a.4xlarge": {"us-east-2b": _entry(0.3, 0.33, "2026-11-01")}}}
    catalog = load_price_catalog(_catalog(tmp_path, fresh))
    price = cluster_hourly_price(cluster, catalog, date(2026, 11, 26))
    # The spot price is 25 days old; the on-demand one shown beside it is from 2025-07-01.
    assert stale_prices_line(price, catalog, "us-east-2") == (
        "warning: the c5a.4xlarge price is from 2025-07-01, 513 days old (more than 90): the "
        "bill may be off; `kary prices refresh --region us-east-2 --instance-type c5a.4xlarge` "
        "updates it"
    )
    old = {"us-east-2": {"c5a.4xlarge": {"us-east-2b": _entry(0.3, 0.33, "undated")}}}
    catalog = load_price_catalog(_catalog(tmp_path, old))
    line = stale_prices_line(cluster_hourly_price(cluster, catalog), catalog, "us-east-2")
    assert line is not None and line.startswith("warning: the c5a.4xlarge spot price is undated")
    assert "`kary prices refresh --spot --region us-east-2 --instance-type c5a.4xlarge`" in line


def _spot_estimate(tmp_path: Path, p90: float | None):  # type: ignore[no-untyped-def]
    spot = {"us-east-2": {"c5a.4xlarge": {"us-east-2b": _entry(0.30, p90)}}}
    plan = plan_experiment(
        ExperimentSpec(exact_nodes=30, topos=["kary:2"], sizes=[GIB], data_dir=tmp_path)
    )
    return estimate_for(
        plan.cells,
        "kubernetes",
        verify=False,
        cluster=load_cluster_spec(EKS_SPOT),
        catalog_path=_catalog(tmp_path, spot),
    )


def test_the_interval_holds_the_times_spread_and_the_spot_prices(tmp_path: Path) -> None:
    estimate = _spot_estimate(tmp_path, p90=0.36)
    bill = estimate.bill
    assert bill is not None and bill.on_demand is not None
    # Spot workers at the median, the rest as on demand: control plane (1.35: standard),
    # disks, the NAT gateway and 31 public IPv4 addresses.
    rest = 0.10 + 30 * 200 * 0.10 / 730 + 0.045 + 31 * 0.005
    assert estimate.hourly_usd == pytest.approx(30 * 0.30 + rest)
    assert bill.on_demand.usd_per_hour == pytest.approx(30 * 0.616 + rest)
    # The low end: the time's low end at the median; the high end: the time's at the p90.
    assert estimate.cost_usd_low == pytest.approx(estimate.hourly_usd * estimate.seconds_low / 3600)
    assert estimate.cost_usd_high == pytest.approx(
        (30 * 0.36 + rest) * estimate.seconds_high / 3600
    )
    # Without a p90 the high end takes the on-demand price, which spot never passes.
    bare = _spot_estimate(tmp_path, p90=None)
    assert bare.cost_usd_high == pytest.approx(
        bill.on_demand.usd_per_hour * bare.seconds_high / 3600
    )


def test_each_layout_is_shown_on_spot_and_on_demand(tmp_path: Path) -> None:
    estimate = _spot_estimate(tmp_path, p90=0.36)
    layouts = layout_estimates(estimate)
    lines = layout_lines(layouts, "nested")
    assert lines[0].endswith("; spot, its high end at the p90 spot price, and the same on demand):")
    nested = next(layout for layout in layouts if layout.name == "nested")
    on_demand = nested.on_demand_costs()
    assert on_demand is not None
    row = next(line for line in lines if line.startswith(" *nested"))
    assert row.endswith(
        f"  spot ${nested.cost_usd:.2f} (${nested.cost_usd_low:.2f} - ${nested.cost_usd_high:.2f})"
        f"  on demand ${on_demand[0]:.2f} (${on_demand[1]:.2f} - ${on_demand[2]:.2f})"
    )
    assert nested.record()["on_demand"]["cost_usd"] == round(on_demand[0], 2)


def _plan(tmp_path: Path, *extra: str) -> list[str]:
    args = ["plan", "--cluster", str(EKS_SPOT), "--exact-nodes", "30", "--topo", "kary:2"]
    result = runner.invoke(app, [*args, "--sizes", "1G", "--data-dir", str(tmp_path), *extra])
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def test_the_plan_shows_spot_and_on_demand_side_by_side_with_every_line_of_the_bill(
    tmp_path: Path,
) -> None:
    lines = _plan(tmp_path)
    cost = next(line for line in lines if line.startswith("cost: "))
    assert cost.startswith(
        "cost: 30 nodes (c5a.4xlarge spot workers) + control plane + disks + NAT gateway + "
        "public IPv4 = $10.18/h (prices as of 2025-06-28) -> $"
    )
    capacity = next(line for line in lines if line.startswith("capacity: "))
    assert " at $10.18/h ($19.60/h at the high end) · on demand $" in capacity
    assert capacity.endswith(" at $19.60/h")
    # The catalog's dated spot price, from the Spot Instance Advisor, with its band.
    assert (
        "  workers: 30 x c5a.4xlarge spot at $0.3018/h = $9.05/h (us-east-2 (region-wide) "
        "mean of 30 days to 2025-06-28; no p90 in the catalog: the high end takes on-demand "
        "$0.6160/h, interruptions 5-10%); on demand $0.6160/h = $18.48/h"
    ) in lines
    assert (
        "  control plane: $0.10/h, EKS standard support for Kubernetes 1.35, as of 2026-11-25"
        in (lines)
    )
    assert any(line.startswith("  NAT gateway: 1 x $0.0450/h") for line in lines)
    assert any(line.startswith("  public IPv4: 31 x $0.0050/h") for line in lines)
    plan = json.loads(runner.invoke(app, ["plan", *_args_json(tmp_path)]).stdout)
    (worker,) = plan["bill"]["workers"]
    assert (worker["capacity"], worker["usd_per_hour_each"]) == ("spot", 0.3018)
    assert (
        worker["spot"]["as_of"] == "2025-06-28"
        and "Spot Instance Advisor" in (worker["spot"]["source"])
    )
    assert worker["spot"]["interruption"] == "5-10%"
    assert plan["capacity"]["spot"]["cost_usd"] == plan["estimated_cost_usd"]
    assert plan["capacity"]["on_demand"]["usd_per_hour"] == pytest.approx(19.6019, abs=1e-4)
    assert plan["bill"]["on_demand_usd_per_hour"] == pytest.approx(19.6019, abs=1e-4)


def _args_json(tmp_path: Path) -> list[str]:
    return [
        *("--cluster", str(EKS_SPOT), "--exact-nodes", "30", "--topo", "kary:2"),
        *("--sizes", "1G", "--data-dir", str(tmp_path), "--json"),
    ]


def test_max_cost_checks_the_spot_high_end_and_says_what_on_demand_would_cost(
    tmp_path: Path,
) -> None:
    plan = json.loads(runner.invoke(app, ["plan", *_args_json(tmp_path)]).stdout)
    # The cap holds the sweep to the dearer of the plan and the layout it runs (nested),
    # plus its smoke cell: each at its high end, spot at the p90 (on demand: no p90).
    nested = next(layout for layout in plan["layouts"] if layout["layout"] == "nested")
    high = max(plan["estimated_cost_usd_high"], nested["cost_usd_high"])
    high += plan["smoke"]["estimated_cost_usd_high"]
    # A cap above the spot point estimate but below its high end is refused.
    cap = plan["estimated_cost_usd"] + 0.01
    args = [*_args_json(tmp_path)[:-1], "--max-cost", f"{cap:.2f}"]
    result = runner.invoke(app, ["plan", *args])
    assert result.exit_code == 2
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith(f"kary: error: the plan is estimated at ${high:,.2f} at most (")
    assert (
        f"+ the smoke cell's $1.92), more than --max-cost ${cap:,.2f}: run fewer cells or raise "
        "--max-cost; on demand the same plan would be $"
    ) in message
    assert message.endswith("at $19.60/h")
