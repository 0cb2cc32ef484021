"""The nested layout's MiniCluster: one per node count, each cell a nested instance in it.

Derived from a cell's MiniCluster as the backend would send it (so a user's
template, image, flux view, node selector, tolerations and kary's labels all
carry over), with three changes:

- no `spec.flux.topology`: the MiniCluster's own instance takes the operator's
  default; each cell sets its topology on the nested instance it runs in;
- the launcher command runs the nested driver (templates/nested_driver.sh.j2)
  instead of one entrypoint;
- `commands.pre` unpacks the driver and every cell's own entrypoint from a
  tar.gz in base64: the entrypoints are near-identical, so 16 cells of 30 nodes
  x 10 sizes (409 KB as text) pack into about 9 KB, far under the 1 MiB a
  ConfigMap (where the operator puts these commands) may hold.  The image
  needs bash, base64, tar and gzip (Ubuntu's base image has them).
"""

from __future__ import annotations

import base64
import copy
import gzip
import io
import posixpath
import re
import tarfile
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from experiments.errors import UserError
from experiments.formats.blobs import DEFAULT_BLOB, check_blob, kept_blob_name
from experiments.formats.nested_frame import FRAME_PREFIX
from experiments.model.disk import EVICTION_FREE_PERCENT
from experiments.model.render import (
    MINCRIT_MIN_FLUX,
    NESTED_DRIVER_TEMPLATE,
    template_environment,
)
from experiments.resources import resource_dir
from experiments.version import __version__

__all__ = ["DRIVER_NAME", "NestedCell", "NestedMiniCluster", "render_nested"]

DRIVER_NAME = "driver.sh"
DRIVER_TEMPLATE = NESTED_DRIVER_TEMPLATE
# How long a cell's nested job may wait to start (flux job wait-event -t): a job
# on an idle instance starts in about a second; one that needs a rank that is
# down or drained never does, and --time-limit only counts once it runs.
START_TIMEOUT_S = 120
# Room left on rank 0's disk beyond a cell's blobs and content store: the
# content store's sqlite overhead and WAL, the logs (1 GiB).
DISK_MARGIN_BYTES = 1 << 30
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
) -> NestedMiniCluster:
    """The nested MiniCluster of `nodes` pods running `cells`, from a cell's MiniCluster
    `base` (left as it is; see the module doc)."""
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
    files: dict[str, str] = {}
    driver_cells = []
    for index, cell in enumerate(cells):
        for value in (cell.cell_id, cell.topo):
            if not _SAFE.match(value):
                raise UserError(f"cell {value!r}: the nested driver cannot quote it")
        name = f"cell-{index}.sh"
        files[name] = cell.entrypoint_sh
        driver_cells.append(
            {
                "id": cell.cell_id,
                "topo": cell.topo,
                "limit_s": cell.limit_s,
                "file": name,
                "sizes": [int(size) for size in cell.sizes],
                "blob": check_blob(cell.blob),
            }
        )
    parent = posixpath.dirname(folder)
    driver = _driver(
        nodes,
        driver_cells,
        {
            "blob_cache": posixpath.join(parent, "kary-blobs"),
            "nested_state": posixpath.join(parent, "kary-nested"),
            "start_s": int(start_timeout_s),
            "disk_margin": int(disk_margin_bytes),
            "eviction_percent": int(eviction_free_percent),
            "kept_blob_name": kept_blob_name,
        },
    )
    files[DRIVER_NAME] = driver
    spec = body["spec"]
    spec["size"] = nodes
    spec.get("flux", {}).pop("topology", None)
    container["command"] = f"/bin/bash {posixpath.join(folder, DRIVER_NAME)}"
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


def bundle(files: Mapping[str, str]) -> str:
    """The files as a tar.gz in base64, 76 characters a line; the same bytes every time."""
    raw = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as zipped,
        tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o755, 0
            tar.addfile(info, io.BytesIO(data))
    return "\n".join(textwrap.wrap(base64.b64encode(raw.getvalue()).decode(), 76))


def _driver(nodes: int, cells: list[dict[str, Any]], settings: dict[str, Any]) -> str:
    return (
        template_environment(resource_dir("templates"))
        .get_template(DRIVER_TEMPLATE)
        .render(
            nodes=nodes,
            cells=cells,
            prefix=FRAME_PREFIX,
            mincrit_flux=".".join(map(str, MINCRIT_MIN_FLUX)),
            **settings,
            kary_version=__version__,
        )
    )
