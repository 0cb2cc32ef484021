"""Time model + prices -> what a plan will cost in seconds and dollars.

estimate = hourly(nodes x instance price + control plane) x
           (provision + image pull + sum over cells of predicted run time + teardown)

A cell's time is what really takes time on a cluster: the MiniCluster coming up
(pod scheduling, Flux start, log collection, delete), blob generation, and per
size and strategy the archive create, each distribution wave, the optional
verify, the archive delete and the clean-up.  Distribution per GB is the slower
of a broker's own extract rate and what its link can feed its children
(fan-out x size / bandwidth), plus a per-level pipeline cost.  Defaults come from
the seed's EKS sweep; `calibrate` refits them from parsed history.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel

from experiments.estimate.prices import PriceCatalog, cluster_hourly_price, load_price_catalog
from experiments.formats.run_record import ALLOCATION
from experiments.model.cluster_spec import ClusterSpec
from experiments.model.plan import Cell
from experiments.model.render import DEFAULT_IMAGE, image_info, images_pulled, strategy_waves
from experiments.model.topology import build_tree

__all__ = [
    "PULL_BYTES_PER_S",
    "UNKNOWN_IMAGE_BYTES",
    "CellTime",
    "Estimate",
    "ImagePull",
    "TimeModel",
    "default_time_model",
    "estimate_plan",
    "image_pull",
    "predict_cell",
]

GIB = 2**30
BLOBS_PER_GB = 1024  # flux archive stores files as 1 MiB blobs

# What a node pulls per second, unpacking included.  The one pull kary has a
# figure for is the seed image's: 55 GB in 20 minutes (issue 15, from
# flux-distribute's README), 46 MB/s.  Its zero-filled layers compress to
# almost nothing, so that rate is bound by writing 55 GB out; applied to the
# compressed size of an ordinary image it errs long, which is the safe side.
# Every node pulls at once, so a cluster's pull takes one node's pull time.
PULL_BYTES_PER_S = 55e9 / 1200
# An image the catalog (experiments/model/render.py IMAGES) does not know is taken to
# be this big: a Flux image with build tools and MPI, as flux-core's own are.
UNKNOWN_IMAGE_BYTES = 2_000_000_000


class TimeModel(BaseModel):
    """Seconds for each thing a sweep spends time on. `source` says where they came from."""

    source: str = "defaults"
    create_s_per_gb: float
    extract_s_per_gb: float
    hop_s_per_gb: float = 0.0
    link_gbps: float | None = None
    verify_s_per_gb: float
    delete_s: float
    clean_s_per_gb: float
    clean_s: float
    generate_s_per_gb: float
    run_overhead_s: float
    image_pull_s: float
    provision_s: float = 0.0
    teardown_s: float = 0.0
    # Where every rank shares one machine's cores (the emulator, a `flux start
    # --test-size` instance) each copy a rank receives costs CPU time that no
    # other rank can overlap: distribution takes at least (nodes - 1) x GB x this.
    shared_cpu_s_per_gb: float = 0.0
    # One-way latency per TBON hop.  flux archive extract loads one 1 MiB blob at
    # a time, so every blob costs a round trip per level it climbs.
    link_latency_s: float = 0.0
    broker_start_s: float = 0.0  # per broker, on top of run_overhead_s
    verify_s: float = 0.0  # per verify step: the fixed cost of a `flux exec` to every target
    # Shared cores again: each target hashes its own copy, so verify also costs
    # this per GB and target rank.
    verify_s_per_gb_per_rank: float = 0.0
    distribute_s: float = 0.0  # per distribution wave: a `flux exec` to every target
    # Per size, strategy and rank: the template drops every rank's content cache
    # and counts what is left (two `flux exec` to all ranks) before it distributes.
    cold_cache_s_per_rank: float = 0.0
    # The emulator's shaped links (--link-bandwidth / --link-latency): store and
    # forward per 1 MiB blob, a broker's one link carrying a copy to each child.
    emulated_links: bool = False
    calibrated_from: int = 0  # history rows used
    # Measured seconds per GB for designs the history holds, keyed "nodes/topo".
    design_s_per_gb: dict[str, float] = {}

    def distribute_s_per_gb(self, fanout: int, depth: int, nodes: int = 1) -> float:
        cpu = max(nodes - 1, 0) * self.shared_cpu_s_per_gb
        round_trips = BLOBS_PER_GB * 2 * self.link_latency_s * depth
        if self.emulated_links:
            # Store and forward per 1 MiB blob: the busiest link sends `fanout`
            # copies of every blob.  A child's next request and its reply (2 x
            # latency) idle that link unless its siblings' copies fill the time.
            # The CPU path (every rank's share of the cores, the relays, a round
            # trip per level) overlaps the links: the slower of the two sets the pace.
            blob = BLOBS_PER_GB * self._blob_s()
            wait = max(0.0, BLOBS_PER_GB * 2 * self.link_latency_s - (fanout - 1) * blob)
            work = max(self.extract_s_per_gb, cpu) + max(depth - 1, 0) * self.hop_s_per_gb
            return max(fanout * blob + wait, work + round_trips)
        feed = fanout * 8.0 / self.link_gbps if self.link_gbps else 0.0
        return (
            max(self.extract_s_per_gb, feed, cpu)
            + max(depth - 1, 0) * self.hop_s_per_gb
            + round_trips
        )

    def distribute_wave_s(self, fanout: int, depth: int) -> float:
        """Seconds per distribution wave whatever its size: its `flux exec`, and on
        emulated links the pipeline's fill (the first blob's request climbs every
        level; below the root each level adds one blob's copies to its children)."""
        if not self.emulated_links:
            return self.distribute_s
        fill = max(depth - 1, 0) * fanout * self._blob_s() + depth * 2 * self.link_latency_s
        return self.distribute_s + fill

    def _blob_s(self) -> float:
        """Seconds one 1 MiB blob takes on one emulated link (0: unshaped)."""
        return GIB / BLOBS_PER_GB * 8 / (self.link_gbps * 1e9) if self.link_gbps else 0.0


@dataclass(frozen=True)
class ImagePull:
    """Seconds for a node to pull what an image needs, and how they were reckoned."""

    seconds: float
    note: str


def image_pull(image: str = DEFAULT_IMAGE, flux_view: str | None = None) -> ImagePull:
    """The pull of `image` and its flux view, from the catalog's sizes (or the assumption)."""
    parts, total = [], 0
    for ref in images_pulled(image, flux_view):
        info = image_info(ref)
        if info is None:
            size, how = UNKNOWN_IMAGE_BYTES, ", not in the catalog: assumed"
        else:
            size, how = info.pull_bytes, "" if info.measured else ", estimated"
        name, at, digest = ref.partition("@")
        parts.append(f"{name}{at}{digest[:19]} {size / 1e9:.2f} GB{how}")
        total += size
    seconds = total / PULL_BYTES_PER_S
    note = (
        f"image pull {seconds:.0f} s = {total / 1e9:.2f} GB at "
        f"{PULL_BYTES_PER_S / 1e6:.0f} MB/s ({'; '.join(parts)})"
    )
    return ImagePull(seconds, note)


def default_time_model(
    backend: str,
    link_gbps: float | None = None,
    image: str | None = None,
    flux_view: str | None = None,
    place: str | None = None,
) -> TimeModel:
    """Defaults by backend, for flux by `place` (test-instance or allocation).

    On a cluster the image pull follows `image` (see image_pull).

    Cloud numbers are medians of the seed's EKS 6-node sweep on c5a.4xlarge
    (create 9.5 s/GB, extract 2.4 s/GB, clean 0.2 s/GB, delete 0.03 s) and its
    wall time: 9,716 s less 8,283 s of timed steps over 12 runs is 119 s a run,
    taken as 100 s per MiniCluster; the image pull, once per cluster, is priced
    from the image's size instead (image_pull).
    Local numbers: see `_local_time_model`.
    """
    if backend == "flux":
        return _flux_time_model(link_gbps, in_allocation=place == ALLOCATION)
    if backend == "local":
        return _local_time_model()
    pull = image_pull(image or DEFAULT_IMAGE, flux_view)
    return TimeModel(
        source=f"cloud defaults (seed EKS 6-node sweep, c5a.4xlarge); {pull.note}",
        create_s_per_gb=9.5,
        extract_s_per_gb=2.45,
        hop_s_per_gb=0.0,
        link_gbps=link_gbps,
        verify_s_per_gb=2.0,
        delete_s=0.03,
        clean_s_per_gb=0.21,
        clean_s=0.05,
        # openssl AES-CTR into the page cache; the 0.3 GB/s measured on a
        # 2-core sandbox is disk-bound and too slow for a c5a/c2d node.
        generate_s_per_gb=1.0,
        run_overhead_s=100.0,
        image_pull_s=pull.seconds,
    )


def _local_time_model() -> TimeModel:
    """The emulator on a 2-core machine shared with other work.

    Every broker and client shares the same cores, so CPU costs are per rank:
    distribution 4.5 s per GB per receiving rank (and 5 s per GB per level below
    the first: relays on the path), 0.35 s per wave to start its `flux exec`;
    verify 0.8 s per GB per target plus 0.1 s; the cold-cache step before each
    distribution 0.12 s per rank.  Shaped links (--link-bandwidth) come on top
    as TimeModel.distribute_s_per_gb describes.  Fitted to
    benchmarks/local_links_bench.py runs (7 nodes kary:1/2/6, 16 nodes kary:2;
    8M+64M; 200Mbit and 1Gbit, with and without 1 ms; n=3 per cell) at load
    average 4-7, where every cell landed within 0.71-1.33 of its prediction.
    Other work slows the CPU-bound cells: at load 10-15 the 16-node cells took
    1.6-1.8x their prediction, link-bound ones stayed within 1.0-1.2x.
    """
    return TimeModel(
        source="local defaults (emulator on 2 cores)",
        create_s_per_gb=4.5,
        extract_s_per_gb=10.0,
        shared_cpu_s_per_gb=4.5,
        hop_s_per_gb=5.0,
        distribute_s=0.35,
        verify_s_per_gb=0.0,
        verify_s_per_gb_per_rank=0.8,
        verify_s=0.1,
        cold_cache_s_per_rank=0.12,
        delete_s=0.05,
        clean_s_per_gb=0.0,
        clean_s=0.08,
        generate_s_per_gb=1.9,
        run_overhead_s=0.5,
        image_pull_s=0.0,
    )


def _flux_time_model(link_gbps: float | None, in_allocation: bool) -> TimeModel:
    """Real flux-core 0.88: a test instance on this machine, or nested in an allocation.

    Test instance: measured with `make demo` (30 brokers, kary:16, 16M and 64M,
    verify on) on an otherwise idle 2-core machine: 23.4 s wall, of which
    distribute 2.06 s (16M) and 9.52 s (64M), i.e. 4.5-5.3 s per GB per
    receiving rank, as every broker shares the same two cores (benchmarks/
    fidelity.py, 8 and 16 brokers at 64M and 256M: 4.3-5.0); create 0.37 s and
    1.33 s (about 21 s/GB: hashing and content-sqlite on one core); verify
    0.43 s and 1.18 s; clean 0.18-0.26 s; and 7.9 s outside the steps, mostly
    30 brokers starting and stopping (4 brokers: 2.7 s).  Under a load of 5-10
    from other work the same job took 37.8 s.  In an allocation every broker
    has its own node: per-GB numbers are the cloud's, the nested instance
    starts in seconds.
    """
    if in_allocation:
        # The cloud's per-GB rates; no MiniCluster or image, a nested instance instead.
        return default_time_model("kubernetes", link_gbps).model_copy(
            update={
                "source": "flux allocation defaults (cloud per-GB rates, nested instance start-up)",
                "verify_s": 0.5,
                "run_overhead_s": 5.0,
                "broker_start_s": 0.1,
                "image_pull_s": 0.0,
            }
        )
    return TimeModel(
        source="flux test-instance defaults (flux-core 0.88 on 2 cores, main job 30/kary:16)",
        create_s_per_gb=21.0,
        extract_s_per_gb=0.0,
        shared_cpu_s_per_gb=5.0,
        verify_s_per_gb=15.0,
        verify_s=0.2,
        delete_s=0.01,
        clean_s_per_gb=0.0,
        clean_s=0.2,
        generate_s_per_gb=1.0,
        run_overhead_s=1.2,
        broker_start_s=0.22,
        image_pull_s=0.0,
    )


@dataclass(frozen=True)
class CellTime:
    cell: Cell
    seconds: float
    parts: dict[str, float] = field(default_factory=dict)


def predict_cell(cell: Cell, model: TimeModel, verify: bool) -> CellTime:
    tree = build_tree(cell.topo, cell.nodes)
    parts = {
        "overhead": model.run_overhead_s + model.broker_start_s * cell.nodes,
        "generate": 0.0,
        "create": 0.0,
        "distribute": 0.0,
        "verify": 0.0,
        "delete": 0.0,
        "clean": 0.0,
    }
    # Feeding its children is what bounds a broker; the busiest one sets the pace.
    measured = model.design_s_per_gb.get(f"{cell.nodes}/{cell.topo}")
    rate = (
        measured
        if measured is not None
        else model.distribute_s_per_gb(tree.max_fanout, tree.depth, cell.nodes)
    )
    per_wave = model.distribute_wave_s(tree.max_fanout, tree.depth)
    for size in cell.sizes:
        gb = size / GIB
        parts["generate"] += gb * model.generate_s_per_gb
        for strategy in cell.strategies:
            waves = strategy_waves(tree, strategy)
            parts["overhead"] += model.cold_cache_s_per_rank * cell.nodes
            parts["create"] += gb * model.create_s_per_gb
            parts["distribute"] += (gb * rate + per_wave) * len(waves)
            if verify:
                parts["verify"] += (gb * model.verify_s_per_gb + model.verify_s) * len(waves)
                targets = sum(_target_count(t, cell.nodes) for _, t in waves)
                parts["verify"] += gb * model.verify_s_per_gb_per_rank * targets
            parts["delete"] += model.delete_s
            parts["clean"] += model.clean_s + gb * model.clean_s_per_gb
    return CellTime(cell, sum(parts.values()), parts)


def _target_count(targets: str, nodes: int) -> int:
    """Ranks a wave reaches: `all` (less rank 0, as the template's -x 0) or an idset."""
    if targets == "all":
        return nodes - 1
    count = 0
    for part in targets.split(","):
        low, _, high = part.partition("-")
        count += int(high or low) - int(low) + 1
    return count


@dataclass(frozen=True)
class Estimate:
    cells: list[CellTime]
    seconds: float
    parts: dict[str, float]
    hourly_usd: float
    cost_usd: float
    instance_type: str | None
    nodes_billed: int
    price_as_of: str | None
    model: TimeModel


def estimate_plan(
    to_run: Sequence[Cell],
    model: TimeModel,
    verify: bool,
    cluster: ClusterSpec | None = None,
    catalog: PriceCatalog | None = None,
    provision: bool = False,
    teardown: bool = False,
) -> Estimate:
    """Seconds and dollars for the cells still to run (done cells cost nothing)."""
    cells = [predict_cell(c, model, verify) for c in to_run]
    parts: dict[str, float] = {}
    for cell_time in cells:
        for key, value in cell_time.parts.items():
            parts[key] = parts.get(key, 0.0) + value
    if cells:
        parts["image pull"] = model.image_pull_s
    if provision:
        parts["provision"] = model.provision_s
    if teardown:
        parts["teardown"] = model.teardown_s
    seconds = sum(parts.values())
    hourly, as_of, billed = 0.0, None, 0
    if cluster is not None:
        price = cluster_hourly_price(cluster, catalog or load_price_catalog())
        hourly, as_of, billed = price.usd_per_hour, price.as_of, price.nodes_billed
    return Estimate(
        cells=cells,
        seconds=seconds,
        parts=parts,
        hourly_usd=hourly,
        cost_usd=hourly * seconds / 3600.0,
        instance_type=cluster.instance_type if cluster else None,
        nodes_billed=billed,
        price_as_of=as_of,
        model=model,
    )
