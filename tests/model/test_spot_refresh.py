"""`kary prices refresh --spot` against a stubbed EC2 (botocore's Stubber: no network, no
account): the paginated price history, Linux/UNIX in the worker's zone, summarised as a
time-weighted median and p90 over the window and written, dated, into the catalog."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml
from botocore.stub import Stubber
from offline_aws import offline_client
from typer.testing import CliRunner

from experiments.cli import app
from experiments.errors import UserError
from experiments.estimate.prices import load_price_catalog
from experiments.estimate.spot_refresh import refresh_spot_prices, time_weighted_quantile
from experiments.resources import resource_path

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=timezone.utc)
START = NOW - timedelta(days=30)


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    path = tmp_path / "prices.yaml"
    path.write_text(resource_path("clusters", "prices.yaml").read_text())
    return path


def _client() -> Any:
    return offline_client("ec2", "us-east-2")


def _record(when: datetime, usd: str, zone: str = "us-east-2b") -> dict:
    return {
        "AvailabilityZone": zone,
        "InstanceType": "c5a.4xlarge",
        "ProductDescription": "Linux/UNIX",
        "SpotPrice": usd,
        "Timestamp": when,
    }


def _expected(zone: str | None = "us-east-2b", token: str | None = None) -> dict:
    params = {
        "InstanceTypes": ["c5a.4xlarge"],
        "ProductDescriptions": ["Linux/UNIX"],
        "StartTime": START,
        "EndTime": NOW,
    }
    if zone is not None:
        params["AvailabilityZone"] = zone
    if token is not None:
        params["NextToken"] = token
    return params


def test_the_quantiles_weigh_each_price_by_how_long_it_held() -> None:
    day = timedelta(days=1)
    # $0.40 for 1 day, $0.30 for 20 days, $0.35 for 9 days; a change before the window
    # opens sets the price it opens with.
    changes = [
        (START - 5 * day, 0.40),
        (START + 1 * day, 0.30),
        (START + 21 * day, 0.35),
    ]
    assert time_weighted_quantile(changes, START, NOW, 0.5) == 0.30
    assert time_weighted_quantile(changes, START, NOW, 0.9) == 0.35
    assert time_weighted_quantile(changes, START, NOW, 0.99) == 0.40
    # Counted by records instead of time, the median would be $0.35.


def test_refresh_spot_follows_the_pages_and_writes_a_dated_median_and_p90(catalog: Path) -> None:
    day = timedelta(days=1)
    client = _client()
    with Stubber(client) as stub:
        # Newest first, as EC2 answers; two pages joined by NextToken.
        stub.add_response(
            "describe_spot_price_history",
            {
                "SpotPriceHistory": [
                    _record(START + 21 * day, "0.350000"),
                    _record(START + 1 * day, "0.300000"),
                ],
                "NextToken": "page-2",
            },
            _expected(),
        )
        stub.add_response(
            "describe_spot_price_history",
            {"SpotPriceHistory": [_record(START - 5 * day, "0.400000")], "NextToken": ""},
            _expected(token="page-2"),
        )
        written = refresh_spot_prices(
            catalog, "us-east-2", ["c5a.4xlarge"], ["us-east-2b"], 30, client=client, now=NOW
        )
        stub.assert_no_pending_responses()
    assert written == {
        ("us-east-2b", "c5a.4xlarge"): {"usd_per_hour": 0.30, "p90_usd_per_hour": 0.35}
    }
    entry = yaml.safe_load(catalog.read_text())["spot"]["us-east-2"]["c5a.4xlarge"]["us-east-2b"]
    assert entry["point"] == "median" and entry["window"] == "30 days"
    assert entry["as_of"] == "2026-11-26" and "DescribeSpotPriceHistory" in entry["source"]
    # EC2 gives no interruption rate: the region-wide entry's band is kept beside it.
    assert entry["interruption"] == "5-10%"
    # The plan now reads the zone's own entry, not the region-wide one.
    price = load_price_catalog(catalog).spot_price("us-east-2", ["us-east-2b"], "c5a.4xlarge")
    assert (price.where, price.usd_per_hour, price.p90_usd_per_hour) == ("us-east-2b", 0.30, 0.35)


def test_without_a_zone_every_zone_ec2_lists_is_written(catalog: Path) -> None:
    client = _client()
    with Stubber(client) as stub:
        stub.add_response(
            "describe_spot_price_history",
            {
                "SpotPriceHistory": [
                    _record(START, "0.31", "us-east-2a"),
                    _record(START, "0.29", "us-east-2c"),
                ]
            },
            _expected(zone=None),
        )
        written = refresh_spot_prices(
            catalog, "us-east-2", ["c5a.4xlarge"], [], 30, client=client, now=NOW
        )
    assert sorted(written) == [("us-east-2a", "c5a.4xlarge"), ("us-east-2c", "c5a.4xlarge")]


def test_no_history_refused_calls_and_gcp_regions_are_one_line(catalog: Path) -> None:
    client = _client()
    with Stubber(client) as stub:
        stub.add_response("describe_spot_price_history", {"SpotPriceHistory": []}, _expected())
        with pytest.raises(UserError, match="EC2 has no Linux/UNIX spot price for c5a.4xlarge"):
            refresh_spot_prices(
                catalog, "us-east-2", ["c5a.4xlarge"], ["us-east-2b"], 30, client=client, now=NOW
            )
    with Stubber(client) as stub:
        stub.add_client_error("describe_spot_price_history", "UnauthorizedOperation")
        with pytest.raises(UserError, match=r"DescribeSpotPriceHistory refused the request"):
            refresh_spot_prices(
                catalog, "us-east-2", ["c5a.4xlarge"], ["us-east-2b"], 30, client=client, now=NOW
            )
    with pytest.raises(UserError, match="us-central1 is a gcp region: kary refreshes AWS spot"):
        refresh_spot_prices(catalog, "us-central1", ["c2d-standard-32"], client=client)
    with pytest.raises(UserError, match="invalid --days 91"):
        refresh_spot_prices(catalog, "us-east-2", ["c5a.4xlarge"], days=91, client=client)


def test_the_cli_without_credentials_exits_2_with_one_line(
    catalog: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    cluster = resource_path("clusters", "eks-30-spot.yaml")
    result = CliRunner().invoke(
        app, ["prices", "refresh", "--spot", "--cluster", str(cluster), "--catalog", str(catalog)]
    )
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1].startswith("kary: error: no AWS credentials")
