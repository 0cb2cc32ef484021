"""`kary prices refresh` against a stubbed AWS Price List API (no network, no account)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from botocore.stub import Stubber
from offline_aws import offline_client
from typer.testing import CliRunner

from experiments.cli import app
from experiments.errors import UserError
from experiments.estimate.price_refresh import refresh_catalog
from experiments.resources import resource_path


def _product(usd: str, unit: str = "Hrs") -> str:
    return json.dumps(
        {
            "product": {"attributes": {"instanceType": "c5a.4xlarge"}},
            "terms": {
                "OnDemand": {
                    "T1": {"priceDimensions": {"D1": {"unit": unit, "pricePerUnit": {"USD": usd}}}}
                }
            },
        }
    )


def _client() -> Any:
    return offline_client("pricing", "us-east-1")


def _expected(instance_type: str, region: str) -> dict:
    return {
        "ServiceCode": "AmazonEC2",
        "MaxResults": 10,
        "Filters": [
            {"Type": "TERM_MATCH", "Field": "instanceType", "Value": instance_type},
            {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region},
            {"Type": "TERM_MATCH", "Field": "operatingSystem", "Value": "Linux"},
            {"Type": "TERM_MATCH", "Field": "tenancy", "Value": "Shared"},
            {"Type": "TERM_MATCH", "Field": "preInstalledSw", "Value": "NA"},
            {"Type": "TERM_MATCH", "Field": "capacitystatus", "Value": "Used"},
        ],
    }


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    path = tmp_path / "prices.yaml"
    path.write_text(resource_path("clusters", "prices.yaml").read_text())
    return path


def test_refresh_writes_the_cheapest_on_demand_price_and_dates_it(catalog: Path) -> None:
    client = _client()
    with Stubber(client) as stub:
        stub.add_response(
            "get_products",
            {
                "PriceList": [_product("0.7000"), _product("0.6160"), _product("0.0", "Quantity")],
                "FormatVersion": "aws_v1",
            },
            _expected("c5a.4xlarge", "eu-west-1"),
        )
        fresh = refresh_catalog(catalog, "eu-west-1", ["c5a.4xlarge"], client=client)
        stub.assert_no_pending_responses()
    assert fresh == {"c5a.4xlarge": 0.616}
    written = yaml.safe_load(catalog.read_text())
    region = written["regions"]["eu-west-1"]
    assert region["usd_per_hour"] == {"c5a.4xlarge": 0.616}
    assert "Price List API" in region["source"] and region["as_of"]
    assert catalog.read_text().startswith("# On-demand list prices")
    # Other regions are kept as they were.
    assert written["regions"]["us-east-2"]["usd_per_hour"]["c5a.4xlarge"] == 0.616


def test_refresh_without_types_reprices_what_the_region_lists(catalog: Path) -> None:
    listed = sorted(yaml.safe_load(catalog.read_text())["regions"]["us-central1"]["usd_per_hour"])
    client = _client()
    with Stubber(client) as stub:
        for instance_type in listed:
            stub.add_response(
                "get_products",
                {"PriceList": [_product("1.5")]},
                _expected(instance_type, "us-central1"),
            )
        fresh = refresh_catalog(catalog, "us-central1", [], client=client)
    assert sorted(fresh) == listed


def test_no_price_found_is_a_user_error(catalog: Path) -> None:
    client = _client()
    with Stubber(client) as stub:
        stub.add_response("get_products", {"PriceList": []}, _expected("z9.huge", "us-east-2"))
        with pytest.raises(UserError, match="no on-demand Linux price for z9.huge"):
            refresh_catalog(catalog, "us-east-2", ["z9.huge"], client=client)


def test_access_denied_is_a_user_error(catalog: Path) -> None:
    client = _client()
    with Stubber(client) as stub:
        stub.add_client_error("get_products", service_error_code="AccessDeniedException")
        with pytest.raises(UserError, match="refused the request"):
            refresh_catalog(catalog, "us-east-2", ["c5a.4xlarge"], client=client)


def test_cli_without_credentials_exits_2_with_one_line(catalog: Path) -> None:
    result = CliRunner().invoke(
        app, ["prices", "refresh", "--catalog", str(catalog), "--instance-type", "c5a.4xlarge"]
    )
    assert result.exit_code == 2
    assert result.stderr == (
        "kary: error: no AWS credentials: configure them (aws configure, AWS_PROFILE) "
        "to refresh prices\n"
    )
