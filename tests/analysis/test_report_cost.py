"""The report's cost prices what ran at the capacity it ran on (issue 34): an on-demand node
at the list price, a spot node at the catalog's dated spot price for its zone's region, a
mixed cell node by node, and a node of unknown capacity (or spot price) on demand, said to
be an upper bound rather than guessed."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
import yaml
from analysis_samples import kary_log, run_record, write_cell

from analysis import load_parsed, parse_tree
from analysis.page import facts as page_facts
from analysis.page.builder import _overview
from analysis.page.cost import Cell, NodeSplit, cost_text, node_split
from analysis.page.facts import collect_facts
from experiments.estimate.prices import PriceCatalog, load_price_catalog

TYPE = "c5a.4xlarge"
LIST = "2.00 node-h on demand at $0.616/h (list price as of 2026-11-01)"
SPOT_B = "30-day median as of 2026-11-20, us-east-2b, source: EC2 spot price history"
NOT_INCLUDED = "provisioning and control plane not included"


def _entry(usd: float, where: str) -> dict[str, Any]:
    return {
        "usd_per_hour": usd,
        "p90_usd_per_hour": None,
        "point": "median",
        "window": "30 days",
        "as_of": "2026-11-20",
        "source": f"EC2 spot price history{where}",
    }


def _catalog(tmp_path: Path, spot_regions: tuple[str, ...] = ("us-east-2",)) -> PriceCatalog:
    """c5a.4xlarge at $0.616/h on demand in two regions; spot at $0.29/h in us-east-2b and
    $0.30/h region-wide in each of `spot_regions`."""
    listed = {"provider": "aws", "as_of": "2026-11-01", "usd_per_hour": {TYPE: 0.616}}
    spot: dict[str, Any] = {
        region: {TYPE: {"region": _entry(0.30, f" ({region}, region-wide)")}}
        for region in spot_regions
    }
    if "us-east-2" in spot:
        spot["us-east-2"][TYPE]["us-east-2b"] = _entry(0.29, "")
    raw = {"regions": {"us-east-1": listed, "us-east-2": listed}, "spot": spot}
    path = tmp_path / "prices.yaml"
    path.write_text(yaml.safe_dump(raw))
    return load_price_catalog(path)


def _ranks(*capacities: str, zone: str | None = "us-east-2b") -> list[dict[str, Any]]:
    return [
        {
            "rank": rank,
            "node": f"node-{rank}",
            "capacity": capacity,
            "instance_type": TYPE,
            "instance_id": f"i-{rank:017x}",
            "zone": zone,
        }
        for rank, capacity in enumerate(capacities)
    ]


def _parsed_cost(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    catalog: PriceCatalog,
    *cells: dict[str, Any],
    nodes: int = 2,
) -> str | None:
    """The report's cost of kubernetes cells of `nodes` nodes, each an hour long, with
    `cells`' facts in their run.json."""
    raw = tmp_path / "raw"
    for it, facts in enumerate(cells):
        record = run_record(
            nodes,
            "kary:1",
            it,
            backend="kubernetes",
            cluster="eks-c",
            instance_type=TYPE,
            started="2026-11-21T10:00:00+00:00",
            finished="2026-11-21T11:00:00+00:00",
            **facts,
        )
        write_cell(raw, f"{nodes}/kary-1/{it}", kary_log(nodes, "kary:1", it), record)
    parse_tree(raw, tmp_path / "parsed", plots=False)
    monkeypatch.setattr(page_facts, "_catalog", lambda: catalog)
    return collect_facts(load_parsed(tmp_path / "parsed")).cost


def test_a_spot_cell_is_priced_at_its_zones_spot_median(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spot = {"capacity": "spot", "rank_nodes": _ranks("spot", "spot"), "zones": ["us-east-2b"]}
    cost = _parsed_cost(tmp_path, monkeypatch, _catalog(tmp_path), spot)
    # 2 nodes x 1 h x $0.29 (us-east-2b's median, not the region-wide $0.30 nor list $0.616)
    assert cost == (
        f"≈ $0.58: cells' wall time × {TYPE}: 2.00 node-h spot at $0.29/h ({SPOT_B}); "
        f"{NOT_INCLUDED}"
    )
    with (tmp_path / "parsed" / "runs.csv").open() as table:
        (run,) = csv.DictReader(table)
    assert run["zones"] == "us-east-2b"


def test_an_on_demand_cell_is_priced_at_the_list_price(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_demand = {"capacity": "on-demand", "rank_nodes": _ranks("on-demand", "on-demand")}
    cost = _parsed_cost(tmp_path, monkeypatch, _catalog(tmp_path), on_demand)
    assert cost == f"≈ $1.23: cells' wall time × {TYPE}: {LIST}; {NOT_INCLUDED}"  # 2 x $0.616


def test_a_mixed_cell_is_priced_node_by_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ranks = _ranks("spot", "on-demand", "spot", "on-demand")
    mixed = {"capacity": "mixed", "rank_nodes": ranks, "zones": ["us-east-2b"]}
    cost = _parsed_cost(tmp_path, monkeypatch, _catalog(tmp_path), mixed, nodes=4)
    # 2 on-demand nodes x $0.616 + 2 spot nodes x $0.29 = $1.812 for the hour
    assert cost == (
        f"≈ $1.81: cells' wall time × {TYPE}: {LIST} and 2.00 node-h spot at $0.29/h "
        f"({SPOT_B}); {NOT_INCLUDED}"
    )


def test_unknown_capacity_is_said_and_priced_as_the_upper_bound_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spot = {"capacity": "spot", "rank_nodes": _ranks("spot", "spot"), "zones": ["us-east-2b"]}
    cost = _parsed_cost(tmp_path, monkeypatch, _catalog(tmp_path), spot, {})
    # $0.58 spot + 2 node-h of a cell that recorded no capacity at $0.616 = $1.812
    assert cost == (
        f"≤ $1.81: cells' wall time × {TYPE}: 2.00 node-h spot at $0.29/h ({SPOT_B}) and "
        "2.00 node-h of unrecorded capacity at $0.616/h (the on-demand list price as of "
        "2026-11-01); an upper bound, as nodes of unrecorded capacity (1 of 2 cells) are "
        f"priced on demand, which spot never passes; {NOT_INCLUDED}"
    )
    facts = collect_facts(load_parsed(tmp_path / "parsed"))
    cards = {card["label"]: card for card in _overview(facts)}
    assert cards["cost"]["value"] == "≤ $1.81"


def _cell(capacity: str = "spot", zones: str = "", hours: float = 1.0, nodes: int = 2) -> Cell:
    return Cell(hours * 3600, nodes, TYPE, capacity, "", zones)


def test_with_no_zone_the_one_region_pricing_the_type_on_spot_is_used(tmp_path: Path) -> None:
    cost = cost_text([_cell()], _catalog(tmp_path))
    assert cost is not None
    assert cost.startswith(
        f"≈ $0.60: cells' wall time × {TYPE}: 2.00 node-h spot at $0.3/h (30-day median as of "
        "2026-11-20, us-east-2 (region-wide), source: EC2 spot price history (us-east-2, "
        "region-wide))"
    )


def test_with_no_zone_and_two_spot_regions_the_spot_price_is_unknown(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, spot_regions=("us-east-1", "us-east-2"))
    assert cost_text([_cell()], catalog) == (
        f"≤ $1.23: cells' wall time × {TYPE}: 2.00 node-h spot at $0.616/h (the on-demand list "
        "price as of 2026-11-01: spot price unknown, no zone recorded, and the catalog has "
        f"{TYPE} spot prices in us-east-1 and us-east-2); an upper bound, as spot nodes of "
        f"unknown spot price (the one cell) are priced on demand, which spot never passes; "
        f"{NOT_INCLUDED}"
    )
    # A zone settles it: us-east-1a is priced at us-east-1's region-wide spot price.
    cost = cost_text([_cell(zones="us-east-1a", hours=2)], catalog)
    assert cost is not None and cost.startswith(f"≈ $1.20: cells' wall time × {TYPE}: 4.00 ")


def test_a_zone_in_no_catalog_region_has_no_spot_price(tmp_path: Path) -> None:
    cost = cost_text([_cell(zones="eu-west-1a")], _catalog(tmp_path))
    assert cost is not None
    assert cost.startswith("≤ $1.23: ")
    assert "spot price unknown, zone eu-west-1a is in no region of the catalog" in cost


def test_a_cells_nodes_split_by_capacity() -> None:
    ranks = "a:spot:i-1, b:on-demand, c:unknown"
    assert node_split(Cell(60, 4, TYPE, "mixed", ranks)) == NodeSplit(1, 1, 2)
    assert node_split(Cell(60, 4, TYPE, "spot")) == NodeSplit(0, 4, 0)
    assert node_split(Cell(60, 4, TYPE, "mixed")) == NodeSplit(0, 0, 4)
    assert node_split(Cell(60, 4, TYPE)) == NodeSplit(0, 0, 4)
