"""One hourly price: the plan's estimate, `kary cluster` and the report agree on a cluster."""

from __future__ import annotations

import json
from datetime import date, datetime, timezone
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from analysis.page.facts import collect_facts
from analysis.tables.parsed_dir import Parsed
from experiments.cli import app
from experiments.clusters import hourly_cost
from experiments.errors import UserError
from experiments.estimate.prices import (
    PriceCatalog,
    cluster_hourly_price,
    hourly_price,
    load_price_catalog,
)
from experiments.formats.parsed import EVENT_COLUMNS, RUN_COLUMNS
from experiments.model.cluster_spec import ClusterSpec, load_cluster_spec
from experiments.resources import resource_path

CLUSTERS = [
    "eks-6.yaml",
    "eks-30.yaml",
    "eks-30-spot.yaml",
    "eks-256.yaml",
    "eks-p5-efa.yaml",
    "gke-30.yaml",
    "gke-30-spot.yaml",
]


def _cluster(name: str) -> ClusterSpec:
    return load_cluster_spec(resource_path("clusters", name))


def _control_plane(cluster: ClusterSpec) -> float:
    """The control plane's $/h today, for the cluster file's Kubernetes version."""
    today = datetime.now(timezone.utc).date()
    return load_price_catalog().control_plane_price(
        cluster.provider, cluster.kubernetes_version, today
    )[0]


def _disks(cluster: ClusterSpec) -> float:
    """The nodes' boot disks' $/h: GB x the catalog's $/GB-month / 730 h, per node."""
    catalog = load_price_catalog()
    return sum(
        g.count
        * cluster.disk_of(g.disk).gb
        * catalog.disk_price(cluster.region, cluster.disk_of(g.disk).type)
        / 730
        for g in cluster.node_groups
    )


def _network(cluster: ClusterSpec) -> float:
    """eksctl's VPC beside the nodes: its NAT gateway ($0.045/h) and one public IPv4 address
    ($0.005/h) per node in a public subnet and for the gateway.  GKE's external IPs are not
    priced (the catalog has no dated figure for them) and GKE makes no NAT gateway."""
    if cluster.provider != "eks":
        return 0.0
    public = sum(g.count for g in cluster.node_groups if g.public_ip)
    return 0.045 * cluster.nat_gateways + 0.005 * (public + cluster.nat_gateways)


def _nodes(cluster: ClusterSpec) -> float:
    """Each group at its capacity: on demand, or a spot group at the catalog's spot price."""
    catalog = load_price_catalog()
    return sum(
        (
            catalog.spot_price(
                cluster.region, g.zones or (cluster.zone,), g.instance_type
            ).usd_per_hour
            if g.capacity == "spot"
            else catalog.instance_price(cluster.region, g.instance_type)[0]
        )
        * g.count
        for g in cluster.node_groups
    )


def _plan_hourly(cluster: ClusterSpec) -> float:
    """What `kary plan --json` says the cluster bills per hour."""
    args = ["plan", "--cluster", str(cluster.path), "--exact-nodes", "4", "--topo", "kary:2"]
    result = CliRunner().invoke(app, [*args, "--sizes", "1M", "--iters", "1", "--json"])
    assert result.exit_code == 0, result.output
    return float(json.loads(result.stdout)["hourly_usd"])


def _report_cost(cluster: ClusterSpec, hours: int) -> str | None:
    """The report's cost of one cell that ran `hours` on all of the cluster's nodes, at
    the cluster's capacity in its zone."""
    run = dict.fromkeys(RUN_COLUMNS, "")
    run.update(
        uid="kary-2-6", topology="kary-2", iteration=0, nodes=cluster.nodes, topo="kary:2",
        source="6/kary-2/0", state="succeeded", backend="kubernetes", cluster=cluster.name,
        instance_type=cluster.instance_type, capacity=cluster.capacity, zones=cluster.zone,
        steps_ok=0, steps_failed=0, pings_ok=0,
        pings_failed=0, started="2026-01-01T00:00:00+00:00",
        finished=(pd.Timestamp("2026-01-01T00:00:00+00:00") + pd.Timedelta(hours=hours))
        .isoformat(),
    )  # fmt: skip
    events = pd.DataFrame(columns=EVENT_COLUMNS)
    parsed = Parsed(events, pd.DataFrame(), pd.DataFrame([run]), pd.DataFrame(), meta={})
    return collect_facts(parsed).cost


@pytest.mark.parametrize("name", CLUSTERS)
def test_the_plan_and_the_cluster_commands_bill_a_cluster_alike(name: str) -> None:
    cluster = _cluster(name)
    by_hand = _nodes(cluster) + _control_plane(cluster) + _disks(cluster) + _network(cluster)
    assert _plan_hourly(cluster) == pytest.approx(by_hand, abs=1e-4)  # the JSON rounds
    assert hourly_cost(cluster).usd_per_hour == pytest.approx(by_hand)


@pytest.mark.parametrize(
    "name", ["eks-6.yaml", "eks-30.yaml", "eks-30-spot.yaml", "gke-30.yaml", "gke-30-spot.yaml"]
)
def test_the_report_prices_node_hours_as_the_plan_does(name: str) -> None:
    cluster = _cluster(name)
    control = _control_plane(cluster)
    # The report leaves the control plane, the disks and the network out (run.json
    # records no disk).
    nodes_per_hour = _plan_hourly(cluster) - control - _disks(cluster) - _network(cluster)
    cost = _report_cost(cluster, hours=100)
    assert cost is not None
    assert cost.startswith(f"≈ ${100 * nodes_per_hour:,.2f}: cells' wall time × ")
    assert cost.endswith("provisioning and control plane not included")


def _catalog(tmp_path: Path, regions: dict[str, dict[str, float]]) -> PriceCatalog:
    return PriceCatalog(
        path=tmp_path / "prices.yaml",
        control_plane_usd_per_hour={"eks": 0.25},
        network_gbps={},
        regions={r: {"as_of": "2025-01-01", "usd_per_hour": p} for r, p in regions.items()},
    )


def test_hourly_price_adds_groups_and_the_named_control_plane(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, {"r1": {"a": 1.5, "b": 2.0}})
    price = hourly_price(catalog, [("a", 2), ("b", 1)], "r1", "eks")
    assert (price.usd_per_hour, price.nodes_billed, price.as_of) == (5.25, 3, "2025-01-01")
    assert price.detail == "2 x a at $1.5000/h + 1 x b at $2.0000/h + control plane $0.25/h"
    assert hourly_price(catalog, [("a", 2)], "r1").usd_per_hour == 3.0
    # A provider the catalog does not list pays what EKS and GKE pay.
    assert hourly_price(catalog, [("a", 1)], "r1", "other").usd_per_hour == 1.6


def test_without_a_region_only_a_price_every_region_agrees_on_is_used(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, {"r1": {"a": 1.0, "b": 2.0}, "r2": {"a": 1.0, "b": 3.0}})
    assert hourly_price(catalog, [("a", 4)], None).usd_per_hour == 4.0
    with pytest.raises(UserError, match="b .*its regions' prices differ"):
        hourly_price(catalog, [("b", 1)], None)
    with pytest.raises(UserError, match="c .*no region lists it"):
        hourly_price(catalog, [("c", 1)], None)


def test_the_control_plane_bills_the_extended_rate_past_standard_support(
    tmp_path: Path,
) -> None:
    # eks-30.yaml as it was before it moved to 1.35: Kubernetes 1.33.
    raw = resource_path("clusters", "eks-30.yaml").read_text()
    assert raw.count('version: "1.35"') == 1
    (tmp_path / "eks-30.yaml").write_text(raw.replace('version: "1.35"', 'version: "1.33"'))
    eks_30 = load_cluster_spec(tmp_path / "eks-30.yaml")
    assert eks_30.kubernetes_version == "1.33"
    catalog = load_price_catalog()
    # clusters/prices.yaml: EKS 1.33's standard support ended 2026-07-29.
    before = hourly_price(catalog, [], "us-east-2", "eks", "1.33", date(2026, 7, 29))
    after = hourly_price(catalog, [], "us-east-2", "eks", "1.33", date(2026, 7, 30))
    assert (before.usd_per_hour, before.detail) == (0.10, "control plane $0.10/h")
    assert after.usd_per_hour == 0.60
    assert after.detail == (
        "control plane $0.60/h (Kubernetes 1.33 in extended support since 2026-07-29)"
    )
    on_day = load_price_catalog().control_plane_price
    # A version newer than the calendar is standard; one older than it, extended.
    assert on_day("eks", "1.99", date(2026, 11, 25))[0] == 0.10
    assert on_day("eks", "1.20", date(2026, 11, 25))[0] == 0.60
    # No version (the provider's default) or no calendar for the provider: standard.
    assert on_day("eks", None, date(2026, 11, 25))[0] == 0.10
    assert on_day("gke", "1.20", date(2026, 11, 25))[0] == 0.10
    # The whole cluster, through the one sum the plan and `kary cluster` use.
    nodes = 30 * catalog.instance_price("us-east-2", "c5a.4xlarge")[0]
    disks = 30 * 200 * 0.10 / 730  # eks-30.yaml: 200 GB gp2 each, $0.10 per GB-month
    # eksctl's NAT gateway ($0.045/h) and 31 public IPv4 addresses ($0.005/h): 30 nodes'
    # and the gateway's.
    network = 0.045 + 31 * 0.005
    assert cluster_hourly_price(eks_30, catalog, date(2026, 11, 25)).usd_per_hour == (
        pytest.approx(nodes + 0.60 + disks + network)
    )
    # eks-30.yaml itself asks for 1.35, in standard support that day: $0.50/h less.
    assert cluster_hourly_price(
        _cluster("eks-30.yaml"), catalog, date(2026, 11, 25)
    ).usd_per_hour == pytest.approx(nodes + 0.10 + disks + network)


def test_an_unquoted_yaml_version_is_read_as_written(tmp_path: Path) -> None:
    raw = resource_path("clusters", "eks-6.yaml").read_text()
    assert raw.count('"1.35"') == 1
    raw = raw.replace('"1.35"', "1.30")
    (tmp_path / "eks.yaml").write_text(raw)
    assert load_cluster_spec(tmp_path / "eks.yaml").kubernetes_version == "1.30"


def test_a_bad_support_calendar_is_one_line(tmp_path: Path) -> None:
    text = resource_path("clusters", "prices.yaml").read_text()
    (tmp_path / "prices.yaml").write_text(text.replace('"2026-07-29"', '"July 29"'))
    with pytest.raises(UserError, match="kubernetes_support needs, per provider"):
        load_price_catalog(tmp_path / "prices.yaml")
