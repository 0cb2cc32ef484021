"""Assemble the time model and price a plan: backend defaults, cluster, history.

The plan's own model is its backend's defaults (with the cluster's links,
provisioning and image pull).  History (`--history DIR`: parsed directories,
each a sweep) is fitted per environment (fit.py); the fits that match where
the plan runs predict its cells, and interval.py turns their residuals, the
plan's reach beyond them and the terms they leave at defaults into an interval.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from experiments.estimate.coverage import Environment
from experiments.estimate.defaults import default_coverage, default_time_model
from experiments.estimate.prices import load_price_catalog
from experiments.estimate.time_model import Estimate, TimeModel, estimate_plan
from experiments.formats.run_record import ALLOCATION, BOX, TEST_INSTANCE
from experiments.model.cluster_spec import ClusterSpec
from experiments.model.links import LinkSettings
from experiments.model.plan import Cell

__all__ = [
    "PROVISION_SECONDS",
    "estimate_for",
    "fits_for",
    "plan_environment",
    "with_emulated_links",
]

# (create, delete) seconds: eksctl builds CloudFormation stacks for the control
# plane and the node group (15-25 min seen); GKE creates a zonal cluster faster.
PROVISION_SECONDS = {"eks": (1200.0, 600.0), "gke": (420.0, 300.0)}

if TYPE_CHECKING:  # pandas and scipy load only when history is fitted
    from experiments.estimate.fit import FittedEnvironment
    from experiments.estimate.history import Sweep


def plan_environment(
    backend: str, cluster: ClusterSpec | None, place: str | None = None
) -> Environment:
    """Where a plan's cells will run, in the terms history records (history.py)."""
    if backend == "flux":
        if place == ALLOCATION:
            return Environment("flux", ALLOCATION)
        # A box's timings follow its links: its history informs box plans only.
        where = BOX if place == BOX else TEST_INSTANCE
        return Environment("flux", f"{where} on {socket.gethostname()}")
    if backend == "local":
        return Environment("local", "emulator")
    return Environment(backend, cluster.instance_type if cluster else None)


def _plan_model(
    backend: str,
    cluster: ClusterSpec | None,
    catalog_path: Path | None,
    links: LinkSettings | None,
    image: str | None,
    flux_view: str | None,
    place: str | None,
) -> TimeModel:
    link = None
    if cluster is not None:
        link = load_price_catalog(catalog_path).network_gbps.get(cluster.instance_type)
    model = default_time_model(
        backend, link_gbps=link, image=image, flux_view=flux_view, place=place
    )
    if links is not None and (links.bandwidth or links.latency):
        model = with_emulated_links(model, links)
    if cluster is not None:
        create, delete = PROVISION_SECONDS[cluster.provider]
        model = model.model_copy(update={"provision_s": create, "teardown_s": delete})
    return model


def fits_for(
    history: Path | Sequence[Sweep],
    plan_env: Environment,
    plan_model: TimeModel,
    totals: Mapping[str, float] | None = None,
) -> list[FittedEnvironment]:
    """One fit per environment in `history` (a folder of parsed directories, or sweeps).

    Each is pulled toward its own backend's defaults; history that may be the
    plan's environment toward the plan's own model (its cluster's links).
    """
    # pandas and scipy cost ~1 s to import; only a plan with history pays it.
    from experiments.estimate.fit import fit_environment, group_by_environment
    from experiments.estimate.history import load_sweeps

    sweeps = load_sweeps(history, totals) if isinstance(history, Path) else list(history)
    fits = []
    for environment, group in group_by_environment(sweeps).items():
        if plan_env.match(environment) in ("same", "unknown"):
            prior = plan_model
        else:
            place = ALLOCATION if environment.machine == ALLOCATION else None
            prior = default_time_model(environment.backend, place=place)
        fits.append(fit_environment(group, prior))
    return fits


def estimate_for(
    to_run: Sequence[Cell],
    backend: str,
    verify: bool,
    cluster: ClusterSpec | None = None,
    history: Path | Sequence[Sweep] | None = None,
    up: bool = False,
    down: bool = False,
    catalog_path: Path | None = None,
    links: LinkSettings | None = None,
    image: str | None = None,
    flux_view: str | None = None,
    place: str | None = None,
    totals: Mapping[str, float] | None = None,
    plan_env: Environment | None = None,
) -> Estimate:
    """The estimate for the cells to run; `place` is where a flux backend runs (run_record),
    `links` the links shaped where it runs (a box's, or the emulator's).

    `totals` gives known wall times of whole history sweeps (parsed directory
    -> seconds, e.g. flux-distribute's EKS sweep's 9,716 s) where run.json has none.
    `plan_env` overrides where the plan runs (`kary model check` predicts a
    held-out sweep in its own environment).
    """
    from experiments.estimate.interval import choose_candidates

    model = _plan_model(backend, cluster, catalog_path, links, image, flux_view, place)
    environment = plan_env or plan_environment(backend, cluster, place)
    if place == BOX and isinstance(history, Path):
        model = with_box_network(model, history)
    fits = fits_for(history, environment, model, totals) if history is not None else []
    candidates = choose_candidates(environment, model, default_coverage(backend, place), fits)
    catalog = load_price_catalog(catalog_path) if cluster is not None else None
    return estimate_plan(
        to_run,
        model,
        verify,
        candidates,
        environment,
        cluster,
        catalog,
        provision=up,
        teardown=down,
    )


def with_box_network(model: TimeModel, history: Path) -> TimeModel:
    """The model with a box's network terms fitted from the box sweeps under `history`
    (box_network.py); unchanged where it holds too few box distributions to fit."""
    from experiments.estimate.box_network import FEATURES, fit_box_network, load_box_observations
    from experiments.estimate.history import find_parsed_dirs

    observations = [
        o for folder in find_parsed_dirs(history) for o in load_box_observations(folder)
    ]
    if len(observations) < len(FEATURES):
        return model
    fit = fit_box_network(observations)
    speeds = sorted({o.bandwidth * 8 / 1e6 for o in observations})
    source = (
        f"{model.source}; box network terms fitted on {fit.n} box distributions at "
        f"{', '.join(f'{s:g}' for s in speeds)} Mbit/s: {fit.text()}"
    )
    return model.model_copy(update={"box_terms": fit.coefficients, "source": source})


def with_emulated_links(model: TimeModel, links: LinkSettings) -> TimeModel:
    """The model on shaped links (--link-bandwidth / --link-latency)."""
    update: dict[str, float] = {}
    if links.bandwidth:
        update["link_gbps"] = links.bandwidth * 8 / 1e9
    if links.latency:
        update["link_latency_s"] = links.latency
    bandwidth, latency = links.typed("link_bandwidth"), links.typed("link_latency")
    source = f"{model.source}; links {bandwidth or 'unshaped'}, {latency or 'no'} latency"
    return model.model_copy(update={**update, "source": source, "emulated_links": True})
