"""Refresh AWS on-demand prices in the catalog from the AWS Price List API.

The Price List API answers only in a few regions (us-east-1 among them) but
prices every region: the region asked about goes in as a `regionCode` filter.
Each PriceList entry is a JSON *string*; the on-demand $/h sits under
terms.OnDemand.*.priceDimensions.*.pricePerUnit.USD.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any

import yaml
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from experiments.errors import UserError
from experiments.files import load_yaml, write_atomic

__all__ = [
    "PRICING_ENDPOINT_REGION",
    "aws_call_error",
    "fetch_on_demand_price",
    "read_catalog",
    "refresh_catalog",
    "write_catalog",
]

PRICING_ENDPOINT_REGION = "us-east-1"


def _filters(region: str, instance_type: str) -> list[dict[str, str]]:
    wanted = {
        "instanceType": instance_type,
        "regionCode": region,
        "operatingSystem": "Linux",
        "tenancy": "Shared",
        "preInstalledSw": "NA",
        "capacitystatus": "Used",
    }
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in wanted.items()]


def _on_demand_usd(product: dict[str, Any]) -> float | None:
    for term in product.get("terms", {}).get("OnDemand", {}).values():
        for dimension in term.get("priceDimensions", {}).values():
            if dimension.get("unit") in ("Hrs", "Hours"):
                usd = dimension.get("pricePerUnit", {}).get("USD")
                if usd is not None and float(usd) > 0:
                    return float(usd)
    return None


@contextmanager
def aws_call_error(what: str) -> Iterator[None]:
    """Turn a failed AWS call (no credentials, refused, unreachable) into one UserError."""
    try:
        yield
    except NoCredentialsError:
        raise UserError(
            "no AWS credentials: configure them (aws configure, AWS_PROFILE) to refresh prices"
        ) from None
    except ClientError as err:
        code = err.response.get("Error", {}).get("Code", "error")
        raise UserError(f"{what} refused the request ({code})") from None
    except BotoCoreError as err:
        raise UserError(f"{what} call failed: {err}") from None


def fetch_on_demand_price(client: Any, region: str, instance_type: str) -> float:
    """The on-demand Linux $/h of one instance type in one region."""
    with aws_call_error("AWS Price List API"):
        response = client.get_products(
            ServiceCode="AmazonEC2", Filters=_filters(region, instance_type), MaxResults=10
        )
    prices = [
        price
        for entry in response.get("PriceList", [])
        if (price := _on_demand_usd(json.loads(entry) if isinstance(entry, str) else entry))
    ]
    if not prices:
        raise UserError(
            f"the AWS Price List API has no on-demand Linux price for {instance_type} in {region}"
        )
    # Several SKUs can match (e.g. licence variants); the plain one is the cheapest.
    return min(prices)


def refresh_catalog(
    catalog_path: Path, region: str, instance_types: list[str], client: Any = None
) -> dict[str, float]:
    """Update (or add) `region` in the catalog with fresh prices; returns what was written."""
    if client is None:
        import boto3

        client = boto3.client("pricing", region_name=PRICING_ENDPOINT_REGION)
    text, catalog = read_catalog(catalog_path)
    if not instance_types:
        existing = catalog.get("regions", {}).get(region, {}).get("usd_per_hour", {})
        instance_types = sorted(existing)
        if not instance_types:
            raise UserError(f"no instance types known for {region}: pass --instance-type")
    fresh = {t: fetch_on_demand_price(client, region, t) for t in instance_types}
    entry = catalog.setdefault("regions", {}).setdefault(region, {})
    entry["provider"] = "aws"
    entry["as_of"] = date.today().isoformat()
    entry["source"] = "AWS Price List API (get_products, on-demand Linux, shared tenancy)"
    entry["usd_per_hour"] = {**dict(entry.get("usd_per_hour") or {}), **fresh}
    write_catalog(catalog_path, text, catalog)
    return fresh


def read_catalog(catalog_path: Path) -> tuple[str, dict[str, Any]]:
    """The catalog's text and its parsed mapping, or a UserError."""
    try:
        text = Path(catalog_path).read_text()
        catalog = load_yaml(text) or {}
    except (OSError, yaml.YAMLError) as err:
        raise UserError(f"price catalog {catalog_path} is not readable YAML: {err}") from None
    return text, catalog


def write_catalog(catalog_path: Path, text: str, catalog: dict[str, Any]) -> None:
    """Write `catalog` back, keeping the file's comments at its top: they say what it is."""
    header = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
    header = header if text.startswith("#") else ""
    write_atomic(Path(catalog_path), header + yaml.safe_dump(catalog, sort_keys=False))
