"""Render one cell into what will run: `minicluster.yaml` and `entrypoint.sh`.

jinja2 with StrictUndefined, so a missing variable fails here rather than as
an empty string inside a shell script on a cluster.  Everything rendered has
been validated first (topology grammar, names, sizes, paths).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from experiments.errors import UserError
from experiments.formats.blobs import DEFAULT_BLOB, check_blob, kept_blob_name
from experiments.formats.cell_layout import NO_KNOBS, Knobs, format_size
from experiments.formats.events import (
    EXPERIMENTS,
    GENERATE_BLOB,
    PING_SERVICES,
    STRATEGIES,
    ping_event,
    strategy_events,
    verify_event,
)
from experiments.formats.kary_line import (
    VOID_BACKING_STORE,
    VOID_BLOB,
    VOID_CACHE_SIZE,
    VOID_COLD_CACHE,
    VOID_NO_ARCHIVE,
)
from experiments.initial_exit import NO_JOB_CLEANUP_ENV
from experiments.model.topology import Tree, build_tree, compress_idset
from experiments.model.validate import (
    dns1123_name,
    image_ref,
    label_value,
    pinned_digest,
    safe_path,
)
from experiments.resources import resource_dir
from experiments.version import __version__

__all__ = [
    "DEFAULT_IMAGE",
    "DIRECT_PORT",
    "FLUX_VIEW_NOBLE",
    "IMAGES",
    "MAX_PING_PAD",
    "MINCRIT_MIN_FLUX",
    "SEED_IMAGE",
    "STRATEGIES",
    "ImageInfo",
    "RenderOptions",
    "Rendered",
    "check_image_runs",
    "check_ping_pads",
    "flux_view_for",
    "image_flux_version",
    "image_info",
    "image_provenance",
    "images_pulled",
    "render_cell",
    "strategy_waves",
    "template_environment",
    "template_hash",
]

# The Flux Operator's flux view for Ubuntu 24.04 (linux/amd64), the CRD's default
# for spec.flux.container.image: an init container copies flux-core and flux-sched,
# built with spack, into the application container.
FLUX_VIEW_NOBLE = "ghcr.io/converged-computing/flux-view-ubuntu:tag-noble"
# Ubuntu 24.04, pinned to one build by digest, with Flux from the view: the
# entrypoint needs bash, coreutils (sha256sum, head, od, stat) and awk (mawk),
# all in the base image; openssl, when on PATH, only makes blobs and sums faster.
DEFAULT_IMAGE = (
    "ubuntu:noble@sha256:561618e2c15bf2397621dd04f96926663a3b5616c189cf7e38db7e82f5c538ea"
)
# flux-distribute's image: Flux 0.66.0 with 55 GB of blobs baked in that kary
# does not use (it makes its blobs at run time).
SEED_IMAGE = "ghcr.io/converged-computing/container-chonks:topology-flux-0.66.0"
# The direct strategy's HTTP port on rank 0 where ranks are separate hosts (a
# MiniCluster's pods declare it); where they share one host it is a free port.
DIRECT_PORT = 8060
# flux ping's --pad is an int: flux-core refuses 2G and more.
MAX_PING_PAD = 2**31 - 1
# flux archive create's default chunk (its --chunksize), as flux-core 0.88 sets it.
ARCHIVE_CHUNK = 2**20
MINICLUSTER_TEMPLATE = "minicluster.yaml.j2"
ENTRYPOINT_TEMPLATE = "entrypoint.sh.j2"
# The nested layout's driver (experiments.model.render_nested): it decides the content
# store's journal mode, the start bound and the disk check of every nested cell.  It is
# always kary's own (render_nested reads it from the installed templates, never --template).
NESTED_DRIVER_TEMPLATE = "nested_driver.sh.j2"


@dataclass(frozen=True)
class ImageInfo:
    """What a node pulls for one image, where the figure comes from, and where Flux is."""

    pull_bytes: int  # compressed transfer size, linux/amd64
    source: str
    flux_view: str | None = None  # the operator's view this image needs; None: it has Flux
    measured: bool = True  # False: pull_bytes is an estimate
    flux_core: tuple[int, int, int] | None = None  # the image's own flux-core, when known


# Images kary knows, keyed by reference without digest.  cost.py prices the
# image pull from pull_bytes; an image not listed gets a stated assumption.
IMAGES: dict[str, ImageInfo] = {
    "ubuntu:noble": ImageInfo(
        29_751_109,
        "docker-library/repo-info, repos/ubuntu/remote/noble.md: linux/amd64 compressed "
        "transfer size of the build DEFAULT_IMAGE pins (2026-07-31)",
        flux_view=FLUX_VIEW_NOBLE,
    ),
    FLUX_VIEW_NOBLE: ImageInfo(
        500_000_000,
        "estimate, not measured: ubuntu:noble (30 MB) plus flux-core, flux-sched, "
        "flux-security and their runtime dependencies from spack, stripped "
        "(converged-computing/flux-views, ubuntu/Dockerfile)",
        measured=False,
    ),
    SEED_IMAGE: ImageInfo(
        55_000_000_000,
        "issue 15: Flux 0.66.0 plus ten zero-filled files of 1-10 GB (55 GB); "
        "flux-distribute's README measured a 20-minute first pull",
        flux_core=(0, 66, 0),
    ),
}

# flux-core before this has no `mincrit` tbon.topo: brokers given it fail to start.
MINCRIT_MIN_FLUX = (0, 75, 0)
# A Flux version in an image's tag: `...:topology-flux-0.66.0`, `fluxrm/flux-core:noble-v0.66.0`.
_FLUX_TAG = re.compile(r"(?:flux[-_]?|-v|^v?)(?P<v>[0-9]+\.[0-9]+(?:\.[0-9]+)?)(?![0-9.])")


def image_flux_version(image: str) -> tuple[int, int, int] | None:
    """The flux-core an image carries, when kary can tell (its catalog, else its tag)."""
    info = image_info(image)
    if info is not None and info.flux_core is not None:
        return info.flux_core
    if info is not None and info.flux_view is not None:
        return None  # Flux comes from the operator's view, not from the image
    name, _, tag = image.split("@", 1)[0].rpartition(":")
    repository = name.rsplit("/", 1)[-1].lower()
    # flux-sched's tags carry flux-sched's version, not flux-core's.
    if not name or "/" in tag or "flux" not in name.lower() + tag or "sched" in repository:
        return None
    match = _FLUX_TAG.search(tag)
    if match is None:
        return None
    parts = [int(p) for p in match.group("v").split(".")] + [0]
    return (parts[0], parts[1], parts[2])


def check_image_runs(image: str, topos: list[str]) -> None:
    """A UserError when the image's Flux is known to be too old for a topology in `topos`."""
    if not any(topo.split(":", 1)[0] == "mincrit" for topo in topos):
        return
    found = image_flux_version(image)
    if found is not None and found < MINCRIT_MIN_FLUX:
        have = ".".join(map(str, found))
        need = ".".join(map(str, MINCRIT_MIN_FLUX[:2]))
        raise UserError(
            f"--topo mincrit needs flux-core {need} or later, but --image {image} has Flux "
            f"{have}: choose an image with newer Flux or drop mincrit"
        )


def image_info(image: str) -> ImageInfo | None:
    """The catalog entry for an image reference, pinned by digest or not."""
    return IMAGES.get(image) or IMAGES.get(image.split("@", 1)[0])


@dataclass(frozen=True)
class RenderOptions:
    """Everything about a cell's rendering that is not the cell's identity."""

    name: str = "flux-sample"
    namespace: str = "default"
    image: str = DEFAULT_IMAGE
    # The operator's flux view to take Flux from; None: the catalog's choice for
    # the image, and for an image it does not know, none (the image has Flux).
    flux_view: str | None = None
    pull_always: bool = False
    verify: bool = True
    scratch: str = "/tmp/kary"
    extract_dir: str = "/tmp/kary-extract"
    sleep_seconds: int = 0
    labels: dict[str, str] = field(default_factory=dict)
    # Where the pods go (a --cluster file's worker group): spec.pod.nodeSelector and
    # spec.pod.tolerations, each {key, operator, value?, effect}.
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: tuple[dict[str, str], ...] = ()
    # The container's resources.requests (model/pod_resources.py); empty: none.
    requests: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Rendered:
    minicluster_yaml: str
    entrypoint_sh: str
    template_hash: str

    def write(self, out_dir: Path) -> list[Path]:
        from experiments.files import write_atomic

        paths = [out_dir / "minicluster.yaml", out_dir / "entrypoint.sh"]
        write_atomic(paths[0], self.minicluster_yaml)
        write_atomic(paths[1], self.entrypoint_sh)
        paths[1].chmod(0o755)
        return paths


def flux_view_for(image: str, flux_view: str | None = None) -> str | None:
    """The flux view a MiniCluster running `image` uses, or None when the image has Flux."""
    if flux_view is not None:
        return flux_view
    info = image_info(image)
    return info.flux_view if info else None


def images_pulled(image: str, flux_view: str | None = None) -> list[str]:
    """Every image a node pulls to run `image`: the image, then its flux view if any."""
    view = flux_view_for(image, flux_view)
    return [image, view] if view else [image]


def archive_chunks(size: int, chunksize: int | None) -> int:
    """The chunks `flux archive create` cuts a file of `size` bytes into: 1 MiB each by
    default, --chunksize N each, one for --chunksize 0 (flux-core's "unlimited")."""
    chunk = ARCHIVE_CHUNK if chunksize is None else chunksize
    return 1 if chunk == 0 else max(1, -(-size // chunk))


def image_provenance(options: RenderOptions) -> dict[str, str | None]:
    """For run.json: the image as rendered, its digest when pinned, and the flux view."""
    return {
        "image": options.image,
        "image_digest": pinned_digest(options.image),
        "flux_view": flux_view_for(options.image, options.flux_view),
    }


@lru_cache(maxsize=16)
def template_environment(template_dir: Path) -> jinja2.Environment:
    """One environment per template folder, kept: it keeps each template compiled, which
    was most of rendering a cell (27 ms of CPU a cell on a 2-core VM, 2026-11-29, two
    compiles each time).  Jinja checks a template file's mtime on every get_template
    and compiles it again when it changed, so an edited --template is still read."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def template_hash(template_dir: Path | None = None) -> str:
    """sha256 over every template a cell runs: which benchmark produced a raw cell.

    The MiniCluster and the entrypoint come from `template_dir` (--template); the
    nested driver is kary's own, read where render_nested reads it.
    """
    own = resource_dir("templates")
    folder = template_dir or own
    digest = hashlib.sha256()
    for name, where in (
        (MINICLUSTER_TEMPLATE, folder),
        (ENTRYPOINT_TEMPLATE, folder),
        (NESTED_DRIVER_TEMPLATE, own),
    ):
        digest.update(name.encode() + b"\0" + (where / name).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def strategy_waves(tree: Tree, strategy: str) -> list[tuple[str, str]]:
    """(event, target idset) per distribution wave of one strategy.

    `leaves` is the deepest level and `middle` the level halfway down, as in the
    seed's experiments; `all` is every rank but 0, and so is `direct` (each
    downloads from rank 0 itself, whatever the tree).  Event names come from
    experiments.formats.events; which ranks each wave reaches is decided here.
    """
    if strategy not in STRATEGIES:
        raise UserError(f"unknown strategy {strategy!r}: choose from {', '.join(STRATEGIES)}")
    events = strategy_events(strategy)
    levels = tree.levels()
    leaves = compress_idset(levels[tree.depth])
    if strategy in ("all", "direct"):
        return [(events.distribute_event(), "all")]
    if strategy == "leaves":
        return [(events.distribute_event(), leaves)]
    if strategy == "middle":
        if tree.depth < 2:
            raise UserError(
                f"strategy middle needs a tree at least 2 levels deep; "
                f"{tree.topology} on {tree.size} nodes has depth {tree.depth}"
            )
        middle = compress_idset(levels[tree.depth // 2])
        return [(events.distribute_event(0), middle), (events.distribute_event(1), leaves)]
    raise AssertionError(f"strategy {strategy!r} has events but no waves in render.py")


def check_ping_pads(sizes: list[int]) -> None:
    """flux ping's --pad takes less than 2G; a UserError names a size it would refuse."""
    for size in sizes:
        if size > MAX_PING_PAD:
            raise UserError(
                f"size {format_size(size)} is too large for the ping experiment: "
                "flux ping pads less than 2G"
            )


def _strategy_context(tree: Tree, strategy: str) -> dict[str, Any]:
    waves = strategy_waves(tree, strategy)  # refuses an unknown strategy
    events = strategy_events(strategy)
    return {
        "strategy": strategy,
        "direct": strategy == "direct",
        "archive": f"kary-{strategy}",
        "create_event": events.create,
        "delete_event": events.delete,
        "clean_event": events.clean,
        "waves": [
            {"event": event, "verify_event": verify_event(event), "targets": targets}
            for event, targets in waves
        ],
    }


def render_cell(
    nodes: int,
    topo: str,
    sizes: list[int],
    strategies: list[str],
    cell_id: str,
    options: RenderOptions | None = None,
    template_dir: Path | None = None,
    knobs: Knobs = NO_KNOBS,
    experiment: str = "distribute",
    blob: str = DEFAULT_BLOB,
) -> Rendered:
    """Render the MiniCluster and the benchmark entrypoint for one cell.

    `knobs` are the cell's Flux knobs; the entrypoint passes only those set,
    so a cell without knobs runs Flux's defaults.  `blob` is what each size's
    blob holds (formats/blobs.py).  `experiment` "ping" renders
    the ping experiment instead of the strategies: `flux ping` from rank 0 to
    every rank with an empty payload and with each of `sizes`.
    """
    options = options or RenderOptions()
    if experiment not in EXPERIMENTS:
        raise UserError(f"unknown experiment {experiment!r}: choose from {', '.join(EXPERIMENTS)}")
    if nodes < 2:
        raise UserError(f"a distribution needs at least 2 nodes, got {nodes}")
    if not sizes:
        raise UserError("no sizes to run")
    pads: list[int] = []
    if experiment == "ping":
        check_ping_pads(sizes)
        pads, strategies = [0, *sizes], []
    direct = "direct" in strategies
    dns1123_name(options.name)
    dns1123_name(options.namespace, "--namespace")
    image_ref(options.image)
    flux_view = flux_view_for(options.image, options.flux_view)
    if flux_view is not None:
        image_ref(flux_view, "--flux-view")
    for path in (options.scratch, options.extract_dir):
        safe_path(path, "scratch path")
    for value in options.labels.values():
        label_value(value)
    tree = build_tree(topo, nodes)
    folder = template_dir or resource_dir("templates")
    env = template_environment(folder)
    context = {
        "kary_version": __version__,
        "cell_id": cell_id,
        "nodes": nodes,
        "topo": str(tree.topology),
        "sizes": [
            {"label": format_size(s), "bytes": s, "chunks": archive_chunks(s, knobs.chunksize)}
            for s in sizes
        ],
        "generate_event": GENERATE_BLOB,
        # Why a step is void, in the words `kary parse` shows.
        "void": {
            "cold_cache": VOID_COLD_CACHE,
            "cache_size": VOID_CACHE_SIZE,
            "backing_store": VOID_BACKING_STORE,
            "blob": VOID_BLOB,
            "no_archive": VOID_NO_ARCHIVE,
        },
        "strategies": [_strategy_context(tree, s) for s in strategies],
        "verify": options.verify,
        "blob": check_blob(blob),
        "kept_blob_name": kept_blob_name,
        "chunksize": knobs.chunksize,
        "mmap": bool(knobs.mmap),
        "purge_target_size": knobs.purge_target_size,
        "knob_labels": {name: label for name, label in knobs.labels().items() if label},
        "scratch": options.scratch,
        "extract_dir": options.extract_dir,
        "sleep_seconds": options.sleep_seconds,
        "experiment": experiment,
        "direct": direct,
        "direct_port": DIRECT_PORT,
        "ping_prefix": ping_event(""),
        "ping_services": PING_SERVICES,
        # The ping experiment's payloads: none (flux-distribute's size 0), then each size.
        "pads": [{"label": format_size(p) if p else "0", "bytes": p} for p in pads],
    }
    try:
        entrypoint = env.get_template(ENTRYPOINT_TEMPLATE).render(context)
        entrypoint_path = f"{options.scratch}-entrypoint/entrypoint.sh"
        minicluster = env.get_template(MINICLUSTER_TEMPLATE).render(
            name=options.name,
            namespace=options.namespace,
            labels={"app.kubernetes.io/managed-by": "kary", **options.labels},
            nodes=nodes,
            topo=str(tree.topology),
            image=options.image,
            flux_view=flux_view,
            pull_always=options.pull_always,
            entrypoint=entrypoint,
            entrypoint_dir=str(Path(entrypoint_path).parent),
            entrypoint_path=entrypoint_path,
            environment=NO_JOB_CLEANUP_ENV,
            direct_port=DIRECT_PORT if direct else None,
            node_selector=options.node_selector,
            tolerations=options.tolerations,
            requests=options.requests,
        )
    except jinja2.TemplateNotFound as err:
        raise UserError(f"template {err.name} not found in {folder}") from None
    except jinja2.UndefinedError as err:
        raise UserError(f"template in {folder} uses an undefined variable: {err.message}") from None
    return Rendered(minicluster, entrypoint, template_hash(folder))
