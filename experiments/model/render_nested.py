"""The nested layout's MiniCluster: one per node count, each cell a nested instance in it.

Derived from a cell's MiniCluster as the backend would send it (so a user's
template, image, flux view, node selector, tolerations and kary's labels all
carry over), with four changes:

- no `spec.flux.topology`: the MiniCluster's own instance takes the operator's
  default; each cell sets its topology on the nested instance it runs in;
- the launcher command runs the nested driver (templates/nested_driver.sh.j2)
  instead of one entrypoint;
- the container's environment loses the switch that has a cell's instance skip
  flux-core's job cleanup at its stop (initial_exit.py): this instance's jobs
  are the cells, and its stop must cancel them;
- `commands.pre` unpacks the driver and every cell's own entrypoint from a
  tar.gz in base64: the entrypoints are near-identical, so 16 cells of 30 nodes
  x 10 sizes (409 KB as text) pack into about 9 KB, far under the 1 MiB a
  ConfigMap (where the operator puts these commands) may hold.  The image
  needs bash, base64, tar and gzip (Ubuntu's base image has them).
"""

from __future__ import annotations

import copy
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from experiments.errors import UserError
from experiments.formats.blobs import DEFAULT_BLOB, check_blob, kept_blob_name
from experiments.formats.nested_bundle import FEED_CELLS, FEED_KEY, bundle, feed_text
from experiments.formats.nested_frame import FRAME_PREFIX
from experiments.initial_exit import EXIT_NAME, NO_JOB_CLEANUP, NO_JOB_CLEANUP_ENV
from experiments.model.disk import EVICTION_FREE_PERCENT
from experiments.model.render import (
    MINCRIT_MIN_FLUX,
    NESTED_DRIVER_TEMPLATE,
    template_environment,
)
from experiments.resources import resource_dir
from experiments.version import __version__

__all__ = [
    "DRIVER_NAME",
    "Feed",
    "NestedCell",
    "NestedMiniCluster",
    "render_batch",
    "render_nested",
]

DRIVER_NAME = "driver.sh"
DRIVER_TEMPLATE = NESTED_DRIVER_TEMPLATE
# How long a cell's nested job may wait to start (flux job wait-event -t): a job
# on an idle instance starts in about a second; one that needs a rank that is
# down or drained never does, and --time-limit only counts once it runs.
START_TIMEOUT_S = 120
# Room left on rank 0's disk beyond a cell's blobs and content store: the
# content store's sqlite overhead and WAL, the logs (1 GiB).
DISK_MARGIN_BYTES = 1 << 30
# The feed (Feed): where its ConfigMap is mounted, how often the driver looks, and how
# long it waits for a batch before it gives up on kary (a race decides in well under a
# second and the kubelet refreshes a ConfigMap within about a minute).
FEED_PATH = "/kary-feed"
FEED_POLL_S = 2.0
FEED_IDLE_S = 900
# How long an updated feed takes to reach the driver: the kubelet refreshes a ConfigMap
# volume at the pod's periodic sync (syncFrequency, 1 min by default, plus its cache's
# delay; Kubernetes docs, "Mounted ConfigMaps are updated automatically").  Expected (a
# plan prices each fed block with it) and the bound kary waits before it calls a fed
# cell unstarted; the kubelet's defaults, not measured (no real cluster here).
FEED_EXPECTED_S = 60
FEED_DELAY_S = 120
# Where a cell's script is called in the driver: safe inside single quotes.
_SAFE = re.compile(r"^[A-Za-z0-9_.:/+=,@-]+$")


@dataclass(frozen=True)
class NestedCell:
    """A cell as the driver runs it: its id, topology, time limit and entrypoint."""

    cell_id: str
    topo: str
    limit_s: int
    entrypoint_sh: str
    # Its sizes in bytes: the driver checks rank 0's free disk against them.
    sizes: tuple[int, ...] = ()
    # What its blobs hold (formats/blobs.py): the name its kept blobs have on rank 0.
    blob: str = DEFAULT_BLOB


@dataclass(frozen=True)
class Feed:
    """Where a held group's driver reads the cells kary feeds it later (a race's next
    blocks): ConfigMap `name`, which the kubelet projects into rank 0's pod at `path`
    and refreshes when kary updates it (its sync period, a minute by default, bounds
    the delay).  The driver looks every `poll_s` and, when no batch came for `idle_s`
    (kary gone), finishes, so the pods end."""

    name: str
    path: str = FEED_PATH
    idle_s: int = FEED_IDLE_S
    poll_s: float = FEED_POLL_S


@dataclass(frozen=True)
class NestedMiniCluster:
    """The manifest to create, the driver in it, and the cells it runs, in order."""

    body: dict[str, Any]
    driver_sh: str
    cell_ids: tuple[str, ...]

    @property
    def yaml(self) -> str:
        return yaml.dump(self.body, Dumper=_BlockDumper, sort_keys=False)


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings (the pre commands) as `|` blocks, as the template writes them."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _text)


def render_nested(
    base: Mapping[str, Any],
    nodes: int,
    cells: Sequence[NestedCell],
    start_timeout_s: int = START_TIMEOUT_S,
    disk_margin_bytes: int = DISK_MARGIN_BYTES,
    eviction_free_percent: int = EVICTION_FREE_PERCENT,
    feed: Feed | None = None,
) -> NestedMiniCluster:
    """The nested MiniCluster of `nodes` pods running `cells`, from a cell's MiniCluster
    `base` (left as it is; see the module doc); with `feed`, its driver then runs the
    batches kary feeds it (`render_batch`) until none comes for `feed.idle_s`."""
    if not cells:
        raise UserError("a nested MiniCluster needs at least one cell")
    body = copy.deepcopy(dict(base))
    if body.get("kind") != "MiniCluster":
        raise UserError("the rendered minicluster.yaml is not a MiniCluster")
    container = (body.get("spec", {}).get("containers") or [None])[0]
    command = str((container or {}).get("command") or "").split()
    if len(command) != 2 or command[0] != "/bin/bash" or not posixpath.isabs(command[1]):
        raise UserError(
            "the nested layout needs the MiniCluster template's command to be "
            f"`/bin/bash /ABSOLUTE/PATH`, not {(container or {}).get('command')!r}"
        )
    folder = posixpath.dirname(command[1])
    files, calls = _cell_files(cells)
    parent = posixpath.dirname(folder)
    driver = _driver(
        nodes,
        calls,
        {
            "blob_cache": posixpath.join(parent, "kary-blobs"),
            "nested_state": posixpath.join(parent, "kary-nested"),
            "start_s": int(start_timeout_s),
            "disk_margin": int(disk_margin_bytes),
            "eviction_percent": int(eviction_free_percent),
            "kept_blob_name": kept_blob_name,
            "feed": feed,
            "feed_key": FEED_KEY,
            "feed_cells": FEED_CELLS,
        },
    )
    files[DRIVER_NAME] = driver
    spec = body["spec"]
    spec["size"] = nodes
    spec.get("flux", {}).pop("topology", None)
    container["command"] = f"/bin/bash {posixpath.join(folder, DRIVER_NAME)}"
    environment = {
        key: value
        for key, value in (container.get("environment") or {}).items()
        if key not in NO_JOB_CLEANUP_ENV
    }
    if environment:
        container["environment"] = environment
    else:
        container.pop("environment", None)
    if feed is not None:
        # The operator names the pod's volume by configMapName and its mount by this
        # key (controllers/flux/volumes.go, containers.go): the two must be the same.
        volumes = container.setdefault("volumes", {}) or {}
        volumes[feed.name] = {
            "configMapName": feed.name,
            "path": feed.path,
            "items": {FEED_KEY: FEED_KEY},
            "readOnly": True,
        }
        container["volumes"] = volumes
    commands = container.setdefault("commands", {})
    commands["pre"] = (
        f"mkdir -p {folder}\n"
        f"base64 -d <<'KARY_BUNDLE_EOF' | tar -xzf - -C {folder}\n"
        f"{bundle(files)}\n"
        "KARY_BUNDLE_EOF\n"
    )
    labels = body.setdefault("metadata", {}).setdefault("labels", {})
    labels.pop("kary/cell", None)
    labels.update({"kary/layout": "nested", "kary/nodes": str(nodes)})
    return NestedMiniCluster(body, driver, tuple(c.cell_id for c in cells))


def render_batch(cells: Sequence[NestedCell], number: int) -> str:
    """The feed's text (formats/nested_bundle) for batch `number` of `cells`: the driver
    unpacks it into `feed-NUMBER/` beside itself and runs its cells as its own."""
    if not cells or number < 1:
        raise UserError("a batch of the feed is numbered from 1 and has at least one cell")
    files, calls = _cell_files(cells, f"feed-{int(number)}/")
    files = {name.split("/", 1)[1]: text for name, text in files.items()}
    return feed_text(number, {FEED_CELLS: "".join(calls), **files})


def _cell_files(cells: Sequence[NestedCell], folder: str = "") -> tuple[dict[str, str], list[str]]:
    """Each cell's entrypoint as `FOLDERcell-N.sh`, and the driver's line that runs it."""
    files: dict[str, str] = {}
    calls = []
    for index, cell in enumerate(cells):
        for value in (cell.cell_id, cell.topo):
            if not _SAFE.match(value):
                raise UserError(f"cell {value!r}: the nested driver cannot quote it")
        name = f"{folder}cell-{index}.sh"
        files[name] = cell.entrypoint_sh
        sizes = "".join(f" {int(size)}" for size in cell.sizes)
        calls.append(
            f"kary_nested_cell '{cell.cell_id}' '{cell.topo}' {int(cell.limit_s)} '{name}' "
            f"'{check_blob(cell.blob)}'{sizes}\n"
        )
    return files, calls


def _driver(nodes: int, calls: list[str], settings: dict[str, Any]) -> str:
    return (
        template_environment(resource_dir("templates"))
        .get_template(DRIVER_TEMPLATE)
        .render(
            nodes=nodes,
            calls=calls,
            prefix=FRAME_PREFIX,
            exit_name=EXIT_NAME,
            no_job_cleanup=NO_JOB_CLEANUP,
            mincrit_flux=".".join(map(str, MINCRIT_MIN_FLUX)),
            **settings,
            kary_version=__version__,
        )
    )
