"""Assemble the time model and price a plan: backend defaults, cluster, history."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from experiments.errors import UserError
from experiments.estimate.prices import load_price_catalog
from experiments.estimate.time_model import (
    Estimate,
    TimeModel,
    default_time_model,
    estimate_plan,
)
from experiments.model.cluster_spec import ClusterSpec
from experiments.model.plan import Cell

__all__ = ["PROVISION_SECONDS", "estimate_for", "time_model_for", "with_emulated_links"]

# (create, delete) seconds: eksctl builds CloudFormation stacks for the control
# plane and the node group (15-25 min seen); GKE creates a zonal cluster faster.
PROVISION_SECONDS = {"eks": (1200.0, 600.0), "gke": (420.0, 300.0)}


def time_model_for(
    backend: str,
    cluster: ClusterSpec | None,
    history: Path | None,
    catalog_path: Path | None = None,
    link_bandwidth: str | None = None,
    link_latency: str | None = None,
    image: str | None = None,
    flux_view: str | None = None,
    place: str | None = None,
) -> TimeModel:
    """The time model for a backend; on a cluster its image pull follows `image`."""
    link = None
    if cluster is not None:
        link = load_price_catalog(catalog_path).network_gbps.get(cluster.instance_type)
    model = default_time_model(
        backend, link_gbps=link, image=image, flux_view=flux_view, place=place
    )
    if link_bandwidth or link_latency:
        model = with_emulated_links(model, link_bandwidth, link_latency)
    if cluster is not None:
        create, delete = PROVISION_SECONDS[cluster.provider]
        model = model.model_copy(update={"provision_s": create, "teardown_s": delete})
    if history is not None:
        # pandas costs ~1 s to import; only a plan calibrated on history pays it.
        from experiments.estimate.calibration import calibrate

        model = calibrate(model, history)
    return model


def estimate_for(
    to_run: Sequence[Cell],
    backend: str,
    verify: bool,
    cluster: ClusterSpec | None = None,
    history: Path | None = None,
    up: bool = False,
    down: bool = False,
    catalog_path: Path | None = None,
    link_bandwidth: str | None = None,
    link_latency: str | None = None,
    image: str | None = None,
    flux_view: str | None = None,
    place: str | None = None,
) -> Estimate:
    """The estimate for the cells to run; `place` is where a flux backend runs (run_record)."""
    model = time_model_for(
        backend,
        cluster,
        history,
        catalog_path,
        link_bandwidth,
        link_latency,
        image,
        flux_view,
        place,
    )
    catalog = load_price_catalog(catalog_path) if cluster is not None else None
    return estimate_plan(to_run, model, verify, cluster, catalog, provision=up, teardown=down)


def with_emulated_links(
    model: TimeModel, link_bandwidth: str | None, link_latency: str | None
) -> TimeModel:
    """The model on the emulator's shaped links (--link-bandwidth / --link-latency)."""
    from experiments.emulator.units import parse_bandwidth, parse_latency

    update: dict[str, float] = {}
    try:
        if link_bandwidth:
            update["link_gbps"] = parse_bandwidth(link_bandwidth) * 8 / 1e9
        if link_latency:
            update["link_latency_s"] = parse_latency(link_latency)
    except ValueError as err:
        raise UserError(str(err)) from None
    source = f"{model.source}; links {link_bandwidth or 'unshaped'}, {link_latency or 'no'} latency"
    return model.model_copy(update={**update, "source": source, "emulated_links": True})
