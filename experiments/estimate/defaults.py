"""The time model's stated defaults per backend, and the runs each default stands for.

A default is what a plan uses where no history says otherwise; its coverage
(the runs it was measured on) tells the interval how far a plan reaches beyond
it.  Every number here names its measurement.
"""

from __future__ import annotations

from dataclasses import dataclass

from experiments.estimate.coverage import Coverage, Environment
from experiments.estimate.parameters import GIB, TimeModel
from experiments.formats.run_record import ALLOCATION
from experiments.model.render import DEFAULT_IMAGE, image_info, images_pulled

__all__ = [
    "PULL_BYTES_PER_S",
    "UNKNOWN_IMAGE_BYTES",
    "ImagePull",
    "default_coverage",
    "default_time_model",
    "image_pull",
    "pending_bound",
]

MIB = 2**20

# What a node pulls per second, unpacking included.  The one pull kary has a
# figure for is flux-distribute image's: 55 GB in 20 minutes (issue 15, from
# flux-distribute's README), 46 MB/s.  Its zero-filled layers compress to
# almost nothing, so that rate is bound by writing 55 GB out; applied to the
# compressed size of an ordinary image it errs long, which is the safe side.
# Every node pulls at once, so a cluster's pull takes one node's pull time.
PULL_BYTES_PER_S = 55e9 / 1200
# An image the catalog (experiments/model/render.py IMAGES) does not know is taken to
# be this big: a Flux image with build tools and MPI, as flux-core's own are.
UNKNOWN_IMAGE_BYTES = 2_000_000_000


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


# How long a cell's pods may stay Pending (from the MiniCluster's creation) before
# the cell fails: what any pod may take to be scheduled and started (a node
# scaling up, the operator's init containers), the 600 s kary always allowed,
# plus the image pull at twice its estimate: the pull rate is one measurement
# (flux-distribute's), and a node pulling slower than it must not fail a cell that
# would have started.  A pod is Pending until every container's image is on the
# node, so a 20-minute pull (flux-distribute's image) under a fixed 600 s bound failed
# every first cell.  `kary run --pending-timeout SECONDS` replaces the bound.
SCHEDULE_S = 600.0
PULL_MARGIN = 2.0


def pending_bound(image_pull_s: float) -> float:
    """Seconds a cell's pods may stay Pending, given the plan's image pull estimate."""
    return SCHEDULE_S + PULL_MARGIN * image_pull_s


def default_time_model(
    backend: str,
    link_gbps: float | None = None,
    image: str | None = None,
    flux_view: str | None = None,
    place: str | None = None,
) -> TimeModel:
    """Defaults by backend, for flux by `place` (test-instance or allocation).

    On a cluster the image pull follows `image` (see image_pull).

    Cloud numbers are medians of flux-distribute's EKS 6-node sweep on c5a.4xlarge
    (create 9.5 s/GB, extract 2.4 s/GB, clean 0.2 s/GB, delete 0.03 s) and its
    wall time.  That sweep's blobs were zeros (formats/blobs.py): one chunk moved,
    so its extract is each rank's write of the file, not data moving through the
    tree, and it says nothing of the network: the terms priced per byte moved
    (fan-out, hops) are stated as 0 and the link's floor (the instance's
    bandwidth, `link_gbps`) is the only network cost a random-blob plan pays
    until random-blob history refits them.  Its
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
        source=(
            "cloud defaults: create, extract (each rank's writes), clean from "
            "flux-distribute's EKS 6-node sweep (c5a.4xlarge; zero blobs, one chunk moved); "
            "the network only as the "
            f"instance's link floor, no random-blob history; {pull.note}"
        ),
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
    (The fit took the larger of 10 s/GB and the per-rank CPU; with 4 or more
    ranks the CPU is the larger, so the additive structure keeps it alone.)
    """
    return TimeModel(
        source="local defaults (emulator on 2 cores)",
        create_s_per_gb=4.5,
        extract_s_per_gb=0.0,
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


def default_coverage(backend: str, place: str | None = None) -> Coverage:
    """The runs each backend's defaults were measured on (see the functions above).

    Their spread is assumed, from how far those runs scattered: the cloud
    defaults reproduce flux-distribute's EKS sweep, one sweep (0.15); the flux test
    instance landed within 0.8-1.03 of unseen cells idle and 1.6x under load
    (0.3); the emulator within 0.71-1.33 (0.25); an allocation's are the
    cloud's rates on another machine (0.4).
    """
    if backend == "flux" and place != ALLOCATION:
        return Coverage(
            what="defaults from flux-core 0.88 test instances on 2 cores (make demo, fidelity.py)",
            environment=Environment("flux", None),  # any 2-core machine
            nodes=(4, 30),
            sizes=(16 * MIB, 256 * MIB),
            fanouts=(1, 16),
            depths=(1, 15),
            sweep_spread=0.3,
            cell_spread=0.15,
            spread_from="assumed: the defaults' runs landed within 0.8-1.6x",
        )
    if backend == "local":
        return Coverage(
            what="defaults from the emulator on 2 cores (local_links_bench.py)",
            environment=Environment("local", "emulator"),
            nodes=(7, 16),
            sizes=(8 * MIB, 64 * MIB),
            fanouts=(1, 6),
            depths=(1, 6),
            sweep_spread=0.25,
            cell_spread=0.15,
            spread_from="assumed: the defaults' runs landed within 0.71-1.33x",
        )
    return Coverage(
        what=(
            "defaults from flux-distribute's EKS 6-node sweep (c5a.4xlarge; its zero blobs timed "
            "each rank's writes, so the network is the link floor alone)"
        ),
        environment=Environment(
            "flux" if backend == "flux" else "kubernetes",
            ALLOCATION if backend == "flux" else "c5a.4xlarge",
        ),
        nodes=(6, 6),
        sizes=(GIB, 10 * GIB),
        fanouts=(1, 3),
        depths=(2, 5),
        sweep_spread=0.4 if backend == "flux" else 0.15,
        cell_spread=0.1,
        spread_from="assumed: one sweep behind the defaults",
    )
