"""The disk a sweep needs on each pod's node, and the check against a cluster file's disks.

Where the bytes go (templates/entrypoint.sh.j2, nested_driver.sh.j2), on rank 0:

- **blob cache** (nested layout only): KARY_BLOB_CACHE keeps every size's blob
  for the later cells of the node count, so it ends holding the sum of the
  distinct sizes of the group.
- **scratch**: the blob a cell works on.  Per cell it is the largest size (the
  script removes each blob before the next size).  Nested, it is a hard link to
  the cached blob (`ln`, same file system: /tmp of the same container), so it
  adds nothing beyond the cache.
- **content store**: each `flux archive create` copies the blob into rank 0's
  content store, and `flux archive remove` drops only the name, not the blobs,
  so a cell's store grows by every size it archives until its instance ends.
  Content is addressed by hash: two strategies archiving the same blob store it
  once, so a size counts once per cell.  `direct` archives nothing; `--mmap`
  maps the blob instead of copying it (flux archive create --mmap).
- **flux view**: the operator's init container copies the view's tree from its
  image into the pod's flux-view emptyDir, and the main container copies its
  software tree again into /opt/software (flux-operator 0d75cef8,
  pkg/flux/view.go: `cp -R ${view}/* $viewroot/view; cp -R /opt/software
  $viewroot/`; pkg/flux/templates/components.sh, wait-view: `cp -R
  ${viewbase}/software /opt/software`): two copies on the node's disk beside
  the image itself (FLUX_VIEW_TREE_BYTES).
- **images** the node pulls, and **the node's own** use of its disk (OS, kubelet
  and containerd state, system pods' images, logs).
- **the kubelet's eviction reserve**: the kubelet evicts pods once its disk's
  free share falls under its hard thresholds, which depend on who configured
  the kubelet (`eviction_threshold`).  The kubelet's own defaults are
  nodefs.available<10% and imagefs.available<15% (Kubernetes docs,
  "Node-pressure Eviction"); on one file system (images, the containers'
  writable layers and the pods' emptyDirs together, as on the workers kary's
  cluster files make) the imagefs 15% binds first.  EKS's AL2023 nodes are
  configured by nodeadm, which sets evictionHard to memory.available<100Mi,
  nodefs.available<10% and nodefs.inodesFree<5% with no imagefs signal
  (amazon-eks-ami, nodeadm/internal/kubelet/config.go), and a kubelet given an
  evictionHard map zeroes the signals it leaves out: there nodefs's 10% binds,
  a 200 GB disk evicting at about 20 GB free.  GKE's cannot be read without a
  node: the kubelet's defaults are assumed, and said to be.  The rest must fit
  in the disk less that share (the nested driver keeps the same share free
  before each cell).

Every other rank holds one extracted size at a time (the clean step removes
it; its content cache is in memory), plus the same margin.  Nested, rank 0's
peak is the group's cache plus its biggest cell's content store; per cell, the
biggest cell's store plus its largest blob.  A cell that times out can leave its
store behind (issue 32, finding 5): not counted here, the disk the cluster
files ask for leaves room for one.  Sizes are in bytes; "GB" in what is shown is
2**30 bytes, as GCE and EBS count a disk's size.

On this machine (the emulator, a test instance, a box, an allocation of this
machine alone) every rank is a process or a namespace extracting into a folder
of its own on the one disk that holds the scratch folder (TMPDIR), so the need
is rank 0's holdings plus every other rank's largest size at once: 30 ranks of
a 10 GB cell hold about 300 GB (`local_disk_need`, `check_local_disk`).
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from experiments.errors import UserError
from experiments.formats.run_record import NESTED, PER_CELL
from experiments.model.cluster_spec import EKS_NODEGROUP_LABEL, ClusterSpec
from experiments.model.places import FreeDisk
from experiments.model.plan import Cell
from experiments.model.render import DEFAULT_IMAGE, flux_view_for, image_info, images_pulled

__all__ = [
    "CLOSE_SHARE",
    "EVICTION_BY_PROVIDER",
    "EVICTION_FREE_PERCENT",
    "FLUX_VIEW_COPIES",
    "FLUX_VIEW_TREE_BYTES",
    "KUBELET_DEFAULT_EVICTION",
    "SYSTEM_BYTES",
    "DiskNeed",
    "EvictionThreshold",
    "LocalDiskNeed",
    "check_disk",
    "check_local_disk",
    "disk_line",
    "disk_need",
    "eviction_threshold",
    "format_gb",
    "local_disk_need",
]

GIB = 2**30
# The node's own use of its boot disk beside the pods: an assumption, not a
# measurement (the OS partitions, kubelet and containerd state, the system
# pods' images, logs: a few GB each on GKE's COS and EKS's AL2023 nodes).
SYSTEM_BYTES = 10 * GIB
# The kubelet's default hard eviction thresholds (Kubernetes docs, "Node-pressure
# Eviction"): nodefs.available<10%, imagefs.available<15%.  On one file system (as
# on the workers kary's cluster files make) the stricter binds: 15% (module doc).
NODEFS_EVICTION_PERCENT = 10
IMAGEFS_EVICTION_PERCENT = 15
EVICTION_FREE_PERCENT = max(NODEFS_EVICTION_PERCENT, IMAGEFS_EVICTION_PERCENT)


@dataclass(frozen=True)
class EvictionThreshold:
    """The share of a node's disk its kubelet keeps free, and where that figure is from."""

    percent: int
    source: str
    short: str  # what the plan's disk line says of it
    assumed: bool = False  # not read from the provider's own configuration


KUBELET_DEFAULT_EVICTION = EvictionThreshold(
    EVICTION_FREE_PERCENT,
    "the kubelet's defaults, nodefs.available<10% and imagefs.available<15%, on one file "
    "system (Kubernetes docs, Node-pressure Eviction)",
    "the kubelet's default imagefs.available<15%",
    assumed=True,
)
EVICTION_BY_PROVIDER = {
    "eks": EvictionThreshold(
        NODEFS_EVICTION_PERCENT,
        "EKS AL2023's nodeadm: evictionHard memory.available<100Mi, nodefs.available<10%, "
        "nodefs.inodesFree<5%, no imagefs signal (amazon-eks-ami, "
        "nodeadm/internal/kubelet/config.go)",
        "EKS nodeadm's nodefs.available<10%",
    ),
    "gke": dataclasses.replace(
        KUBELET_DEFAULT_EVICTION,
        source="GKE's own thresholds cannot be read without a node: the kubelet's defaults, "
        "nodefs.available<10% and imagefs.available<15%, assumed",
        short="the kubelet's default imagefs.available<15%, assumed for GKE",
    ),
}


def eviction_threshold(provider: str | None) -> EvictionThreshold:
    """What a node of `provider` (eks, gke; None: unknown) keeps free of its disk."""
    return EVICTION_BY_PROVIDER.get(provider or "", KUBELET_DEFAULT_EVICTION)


# The flux view's tree as the operator copies it (module doc): an estimate, not a
# measurement: three times the view image's estimated 500 MB compressed pull
# (render.IMAGES), gzip's usual ratio on binaries and shared libraries.
FLUX_VIEW_TREE_BYTES = 1_500_000_000
# Copies of it on the node: the flux-view emptyDir, and /opt/software in the container.
FLUX_VIEW_COPIES = 2
# An image kary's catalog does not list: estimate/defaults.py's UNKNOWN_IMAGE_BYTES.
_UNKNOWN_IMAGE_BYTES = 2_000_000_000
# Strategies that put the blob in the content store: all but `direct` (HTTP).
_NO_ARCHIVE = {"direct"}
# A local sweep that takes this share of the free disk or more is warned of: the
# need counts the blobs only, and Flux's own files, the logs, the raw tree and
# whatever else runs here write to the same disk.
CLOSE_SHARE = 0.8


def format_bytes(size: int) -> str:
    """Bytes to three significant digits in the largest binary unit it fills: `64 MiB`,
    `1.5 GiB`, `126 GiB` (not rounded up to whole GiB, where 64 MiB read `1 GB`)."""
    value, unit = float(size), "B"
    for name in ("KiB", "MiB", "GiB", "TiB"):
        if value < 1024:
            break
        value, unit = value / 1024, name
    digits = 0 if value >= 100 or unit == "B" else 1 if value >= 10 else 2
    text = f"{value:.{digits}f}"
    return f"{text.rstrip('0').rstrip('.') if digits else text} {unit}"


def format_gb(size: int) -> str:
    """Bytes as whole GiB, rounded up: the unit a cluster file's disk is in."""
    return f"{math.ceil(size / GIB)} GiB"


@dataclass(frozen=True)
class DiskNeed:
    """Bytes a sweep needs on a node at its peak, by part (see the module doc)."""

    layout: str
    blob_cache: int
    scratch: int
    content_store: int
    images: int
    system: int
    eviction_reserve: int  # rank 0's share the kubelet keeps free
    view: int  # the operator's copies of the flux view on the node
    other_ranks: int  # each other rank's whole need, its margin included
    peak: str  # where rank 0's peak is: "the 30-node group", "cell 30/kary-16/0"
    eviction: EvictionThreshold = KUBELET_DEFAULT_EVICTION

    @property
    def margin(self) -> int:
        return self.view + self.images + self.system + self.eviction_reserve

    @property
    def pod_writes(self) -> int:
        """What rank 0's pod itself writes (its emptyDirs and writable layer: the blobs,
        the content store, the view's copies): the kubelet's measure of its
        ephemeral-storage use, so what the pod requests (pod_resources.py)."""
        return self.blob_cache + self.scratch + self.content_store + self.view

    @property
    def rank0(self) -> int:
        return self.blob_cache + self.scratch + self.content_store + self.margin

    def parts(self) -> dict[str, int]:
        return {
            "blob cache": self.blob_cache,
            "scratch": self.scratch,
            "content store": self.content_store,
            "flux view copies": self.view,
            "images": self.images,
            "the node's own": self.system,
            "the kubelet's eviction reserve": self.eviction_reserve,
        }

    def text(self) -> str:
        """`146 GB on rank 0 (nested, the 30-node group: blob cache 55 GB + ... + the
        kubelet's eviction reserve 22 GB, 15% of 146 GB)`."""
        parts = " + ".join(f"{name} {format_gb(size)}" for name, size in self.parts().items())
        whole = format_gb(self.rank0)
        return (
            f"{whole} on rank 0 ({self.layout}, {self.peak}: {parts}, "
            f"{self.eviction.percent}% of {whole}: {self.eviction.short})"
        )


def _image_bytes(image: str | None) -> int:
    """What the images a node pulls for `image` take on its disk: their pull size once."""
    return sum(
        info.pull_bytes if (info := image_info(ref)) is not None else _UNKNOWN_IMAGE_BYTES
        for ref in images_pulled(image or DEFAULT_IMAGE)
    )


def _view_bytes(image: str | None) -> int:
    """What the operator's copies of the flux view take on a node: none for an image
    that has Flux itself (render.flux_view_for)."""
    return FLUX_VIEW_COPIES * FLUX_VIEW_TREE_BYTES if flux_view_for(image or DEFAULT_IMAGE) else 0


def _sizes(cell: Cell) -> set[int]:
    return set() if cell.experiment == "ping" else set(cell.sizes)


def _archived(cell: Cell) -> int:
    """What a cell leaves in its content store: each size once if any strategy archives it."""
    if cell.knobs.mmap or not set(cell.strategies) - _NO_ARCHIVE:
        return 0
    return sum(_sizes(cell))


def _with_margin(payload: int, images: int, free_percent: int) -> tuple[int, int]:
    """(whole need, eviction reserve): payload + images (the view's copies among them)
    + system must fit below the kubelet's threshold, in (100 - free_percent)% of the
    disk."""
    used = payload + images + SYSTEM_BYTES
    whole = math.ceil(used / (1 - free_percent / 100))
    return whole, whole - used


@dataclass(frozen=True)
class _Peak:
    """What one cell (per cell) or one node count's cells (nested) hold at once."""

    where: str  # "the 30-node group", "cell 30/kary-16/0"
    nodes: int
    blob_cache: int
    scratch: int
    content_store: int
    largest: int  # the largest size a rank extracts

    @property
    def rank0_payload(self) -> int:
        return self.blob_cache + self.scratch + self.content_store


def _peaks(cells: Sequence[Cell], layout: str) -> list[_Peak]:
    """Rank 0's holdings per cell (per-cell) or per node count (nested), in order."""
    if layout not in (NESTED, PER_CELL):
        raise UserError(f"unknown layout {layout!r}: choose {NESTED} or {PER_CELL}")
    if layout == PER_CELL:
        return [
            _Peak(
                f"cell {cell.id}",
                cell.nodes,
                0,
                max(_sizes(cell), default=0),
                _archived(cell),
                max(_sizes(cell), default=0),
            )
            for cell in cells
        ]
    groups: dict[int, list[Cell]] = defaultdict(list)
    for cell in cells:
        groups[cell.nodes].append(cell)
    peaks = []
    for nodes, group in sorted(groups.items()):
        sizes = set().union(*(_sizes(c) for c in group))
        # Nested, the scratch blob is a hard link to the cached one: it adds nothing.
        store = max(_archived(c) for c in group)
        peaks.append(
            _Peak(f"the {nodes}-node group", nodes, sum(sizes), 0, store, max(sizes, default=0))
        )
    return peaks


def disk_need(
    cells: Sequence[Cell], layout: str, image: str | None = None, provider: str | None = None
) -> DiskNeed:
    """The disk `cells` need per node in `layout` (nested or per-cell), at rank 0's peak,
    on a node of `provider` (its kubelet's eviction threshold)."""
    peaks = _peaks(cells, layout)
    images = _image_bytes(image)
    view = _view_bytes(image)
    peak = max(peaks, key=lambda p: p.rank0_payload, default=None)
    cache, scratch, store = (
        (peak.blob_cache, peak.scratch, peak.content_store) if peak else (0, 0, 0)
    )
    eviction = eviction_threshold(provider)
    _, reserve = _with_margin(cache + scratch + store, images + view, eviction.percent)
    largest = max((p.largest for p in peaks), default=0)
    other, _ = _with_margin(largest, images + view, eviction.percent)
    return DiskNeed(
        layout=layout,
        blob_cache=cache,
        scratch=scratch,
        content_store=store,
        images=images,
        system=SYSTEM_BYTES,
        eviction_reserve=reserve,
        view=view,
        other_ranks=other,
        peak=peak.where if peak else "no cells",
        eviction=eviction,
    )


@dataclass(frozen=True)
class LocalDiskNeed:
    """Bytes a sweep run on this machine holds on its one disk at once: every rank is a
    process or a namespace here, each extracting into a folder of its own."""

    rank0: int  # blob cache + scratch + content store, as on a cluster's rank 0
    other_ranks: int  # how many other ranks, each holding one extracted size
    per_other_rank: int
    peak: str

    @property
    def total(self) -> int:
        return self.rank0 + self.other_ranks * self.per_other_rank

    def text(self) -> str:
        """`310 GiB at its peak (cell 30/kary-16/0: rank 0 20 GiB + 29 other ranks x 10 GiB)`:
        each figure to three digits in its own binary unit, so the sum reads right."""
        return (
            f"{format_bytes(self.total)} at its peak ({self.peak}: rank 0 "
            f"{format_bytes(self.rank0)} + {self.other_ranks} other ranks x "
            f"{format_bytes(self.per_other_rank)})"
        )


def local_disk_need(cells: Sequence[Cell], layout: str) -> LocalDiskNeed:
    """What `cells` hold at once on this machine's disk in `layout`: rank 0's holdings (as
    on a cluster, without a node's margin) plus every other rank's largest size."""
    peak = max(
        _peaks(cells, layout),
        key=lambda p: p.rank0_payload + (p.nodes - 1) * p.largest,
        default=None,
    )
    if peak is None:
        return LocalDiskNeed(0, 0, 0, "no cells")
    return LocalDiskNeed(peak.rank0_payload, peak.nodes - 1, peak.largest, peak.where)


def check_local_disk(need: LocalDiskNeed, free: FreeDisk) -> str | None:
    """A one-line UserError when `need` passes the disk's free bytes; a warning when it
    takes CLOSE_SHARE of them or more; None when it fits with room."""
    where = f"the disk of {free.path}"
    if need.total > free.free_bytes:
        raise UserError(
            f"the sweep extracts {need.text()} onto {where}, which has "
            f"{format_bytes(free.free_bytes)} free: plan fewer nodes or smaller sizes, or set "
            "TMPDIR to a short folder on a bigger disk"
        )
    if need.total >= CLOSE_SHARE * free.free_bytes:
        share = need.total / max(free.free_bytes, 1)
        return (
            f"warning: the sweep extracts {need.text()} onto {where}, {share:.0%} of its "
            f"{format_gb(free.free_bytes)} free (anything else writing there can fill it)"
        )
    return None


def _how_to_set(cluster: ClusterSpec, gb: int) -> str:
    if cluster.provider == "gke":
        return f"set diskSize: {gb} (GB) or more in {cluster.path}"
    group = cluster.node_selector.get(EKS_NODEGROUP_LABEL, "the workers'")
    return f"set volumeSize: {gb} (GiB) or more on node group {group!r} in {cluster.path}"


def check_disk(cluster: ClusterSpec, need: DiskNeed, alternatives: Iterable[DiskNeed] = ()) -> None:
    """A one-line UserError when `need` does not fit each worker's disk in `cluster`:
    need vs have, and how to fix it (the cluster file's option; a layout that fits)."""
    have = cluster.worker_disk
    if need.rank0 <= have.bytes:
        return
    gb = math.ceil(need.rank0 / GIB)
    fits = [a for a in alternatives if a.layout != need.layout and a.rank0 <= have.bytes]
    also = "".join(f", or --layout {a.layout} (needs {format_gb(a.rank0)})" for a in fits)
    raise UserError(
        f"the sweep needs {need.text()}, but {cluster.path} gives each worker "
        f"{have.text}: {_how_to_set(cluster, gb)}{also}, or plan fewer or smaller sizes"
    )


def disk_line(
    cluster: ClusterSpec | None, cells: Sequence[Cell], layout: str, image: str | None = None
) -> str | None:
    """The plan's line on disk: what rank 0 and the other ranks need, and what each worker
    has; None off a cluster file (a plan that does not fit was refused before)."""
    if cluster is None or layout not in (NESTED, PER_CELL):
        return None
    need = disk_need(cells, layout, image, cluster.provider)
    return (
        f"disk: {need.text()}; {format_gb(need.other_ranks)} on every other rank; "
        f"each worker has {cluster.worker_disk.text}"
    )
