"""The box place: a cell's brokers on this machine, each in a network namespace of its own.

The brokers are bootstrapped from a generated config file (a host per rank and
a CURVE certificate from `flux keygen`) and talk TCP over links `tc` shapes
(experiments/box).  The box's init runs under the session guard like a test
instance, as PID 1 of its own PID, mount and network namespaces, so the kernel
takes every broker, link and qdisc with it when it ends.  Chosen by
``--place box`` and whenever links are shaped.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from experiments.backends.base import RunResult
from experiments.backends.flux.site import FluxSite, flux_env, run_flux
from experiments.backends.flux.test_instance import run_guarded
from experiments.box.launch import box_spec, built_qdiscs, read_link_bytes
from experiments.box.layout import BoxLayout
from experiments.box.privileges import box_prefix_for
from experiments.box.reap import reap_dead_boxes
from experiments.estimate.bottleneck import box_bottlenecks
from experiments.estimate.link_floor import faster_warning, floor_checks
from experiments.model.links import LinkSettings
from experiments.model.plan import Cell

__all__ = ["prepare_box", "run_in_box"]


def prepare_box(links: LinkSettings, scratch: Path) -> list[str]:
    """The `unshare ...` prefix that starts a box here (UserError if this machine cannot
    build one); first removes what dead kary runs left under `scratch`."""
    prefix = box_prefix_for(links)
    reaped = reap_dead_boxes(scratch)
    if reaped:
        print(f"kary: {reaped.text()}", file=sys.stderr)
    return prefix


def run_in_box(
    site: FluxSite,
    cell: Cell,
    links: LinkSettings,
    prefix: list[str],
    layout: BoxLayout,
    folder: Path,
    entrypoint: Path,
    timeout: float | None,
) -> RunResult:
    """Build the cell's box in `folder`, run the entrypoint on rank 0, and record the links."""
    env = flux_env(os.environ, drop_uri=True)
    env["KARY_RANK_ROOT"] = str(folder / "ranks")
    # The direct baseline's server listens on rank 0's address, which every rank reaches.
    env["KARY_DIRECT_HOST"] = layout.address(0)
    cert = folder / "curve.cert"
    run_flux([site.flux, "keygen", str(cert)], env, "flux keygen")
    config = folder / "broker.toml"
    config.write_text(layout.broker_config(str(cert)))
    spec = box_spec(layout, links, folder, site.flux, config, entrypoint, env)
    spec.write(folder / "box.json")
    command = [*prefix, sys.executable, "-m", "experiments.box.init", str(folder / "box.json")]
    bottlenecks = box_bottlenecks(cell, links)
    result = run_guarded(site, cell, command, env, folder, timeout)
    link_bytes = read_link_bytes(folder)
    record: dict[str, Any] = {
        "run_id": layout.run_id,
        "cpu_bound": any(b["cpu_bound"] for b in bottlenecks),
        "bottleneck": bottlenecks,
        "links": links.record(),
        # What the kernel built, as `tc` listed it at the end (the probe found it could).
        "link_queue": {"asked": links.queue, "qdiscs": built_qdiscs(link_bytes)}
        if links.rate_shaped
        else None,
        "addresses": layout.address_plan(),
        "link_bytes": link_bytes,
        "rootless": "--user" in prefix,
    }
    # Each timed distribution against its links' floor: a time faster than the links can
    # carry says the measurement is wrong (a warm cache, a link not shaped), not the links.
    checks = floor_checks(cell, links, result.log)
    record["distributions"] = checks
    record["faster_than_floor"] = [c for c in checks if c["faster_than_floor"]]
    warning = faster_warning(cell.id, checks)
    if warning:
        print(warning, file=sys.stderr)
    result.provenance["box"] = record
    return result
