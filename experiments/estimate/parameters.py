"""The time model's parameters: seconds for each thing a sweep spends time on.

Which step each parameter prices, and how a cell's steps are laid out, is
experiments/estimate/structure.py; where the values come from is defaults.py
(stated defaults per backend) and fit.py (fitted from parsed history).
"""

from __future__ import annotations

from pydantic import BaseModel

__all__ = ["BLOBS_PER_GB", "FITTED_PARAMETERS", "GIB", "TimeModel"]

GIB = 2**30
BLOBS_PER_GB = 1024  # flux archive stores files as 1 MiB blobs

# The parameters a history can refit: each is the coefficient of one feature
# of one step (structure.py), so a cell's time is linear in them.
FITTED_PARAMETERS = (
    "create_s",
    "create_s_per_gb",
    "distribute_s",
    "extract_s_per_gb",
    "fanout_s_per_gb",
    "hop_s_per_gb",
    "shared_cpu_s_per_gb",
    "verify_s",
    "verify_s_per_gb",
    "verify_s_per_gb_per_rank",
    "delete_s",
    "clean_s",
    "clean_s_per_gb",
    "clean_s_per_rank",
    "generate_s_per_gb",
    "run_overhead_s",
    "broker_start_s",
    "cold_cache_s_per_rank",
)


class TimeModel(BaseModel):
    """Seconds for each thing a sweep spends time on. `source` says where they came from."""

    source: str = "defaults"
    create_s: float = 0.0  # per archive create, whatever its size
    create_s_per_gb: float
    # Distribution, per GB: every receiving rank loads each 1 MiB blob from its
    # parent in turn (extract), a broker serves one copy per child (fan-out),
    # a blob climbs one more level per level of depth (hop), and where every
    # rank shares one machine's cores each rank's copy costs CPU no other rank
    # can overlap (shared_cpu, per rank a wave reaches through the tree).
    extract_s_per_gb: float
    fanout_s_per_gb: float = 0.0
    hop_s_per_gb: float = 0.0
    shared_cpu_s_per_gb: float = 0.0
    link_gbps: float | None = None
    verify_s_per_gb: float
    delete_s: float
    clean_s_per_gb: float
    clean_s: float
    # The clean-up is a `flux exec -r all -x 0 rm ...`: a process on every rank.
    clean_s_per_rank: float = 0.0
    generate_s_per_gb: float
    run_overhead_s: float
    image_pull_s: float
    provision_s: float = 0.0
    teardown_s: float = 0.0
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
    # A box's distribution, fitted from box sweeps across link speeds
    # (box_network.py): seconds = a x link floor + b x fill + c x GB per rank + d.
    # None: the store-and-forward physics above, with the CPU defaults.
    box_terms: tuple[float, float, float, float] | None = None
    calibrated_from: int = 0  # history rows used

    def box_distribute_s(
        self,
        size_bytes: int,
        fanout: int,
        depth: int,
        ranks: int,
        moved_bytes: int | None = None,
    ) -> float | None:
        """A box wave's seconds from the fitted network terms; None without them or links.
        The link floor counts the distinct bytes moved (`moved_bytes`, all of `size_bytes`
        unless given); the per-rank term every byte each rank writes."""
        if self.box_terms is None or not self.link_gbps:
            return None
        moved = size_bytes if moved_bytes is None else moved_bytes
        rate = self.link_gbps * 1e9 / 8
        link_floor, fill = fanout * moved / rate, depth * (GIB / BLOBS_PER_GB) / rate
        a, b, c, d = self.box_terms
        return a * link_floor + b * fill + c * ranks * size_bytes / GIB + d

    def distribute_seconds(
        self, size_bytes: int, moved_bytes: int, fanout: int, depth: int, ranks: int
    ) -> float:
        """One wave's seconds, its fixed start aside: every target rank writes `size_bytes`,
        and `moved_bytes` distinct bytes cross the tree (all of a random blob; none worth
        timing of a deduplicated one, whose one chunk moves once: formats/blobs.py).  The
        terms priced per byte moved (fan-out, hops, the ranks' shared CPU, a link's floor
        and round trips) scale with `moved_bytes`; an extract's write with `size_bytes`."""
        gb, moved = size_bytes / GIB, moved_bytes / GIB
        cpu = moved * ranks * self.shared_cpu_s_per_gb
        round_trips = moved * BLOBS_PER_GB * 2 * self.link_latency_s * depth
        if self.emulated_links:
            # Store and forward per 1 MiB blob: the busiest link sends `fanout`
            # copies of every blob.  A child's next request and its reply (2 x
            # latency) idle that link unless its siblings' copies fill the time.
            # The CPU path (every rank's share of the cores, the relays, a round
            # trip per level) overlaps the links: the slower of the two sets the pace.
            blob = BLOBS_PER_GB * self._blob_s()
            wait = max(0.0, BLOBS_PER_GB * 2 * self.link_latency_s - (fanout - 1) * blob)
            work = max(gb * self.extract_s_per_gb, cpu) + moved * max(depth - 1, 0) * (
                self.hop_s_per_gb
            )
            return max(moved * (fanout * blob + wait), work + round_trips)
        work = (
            gb * self.extract_s_per_gb
            + moved * (fanout * self.fanout_s_per_gb + max(depth - 1, 0) * self.hop_s_per_gb)
            + cpu
        )
        return max(work, moved * self.link_feed_s_per_gb(fanout)) + round_trips

    def distribute_s_per_gb(self, fanout: int, depth: int, ranks: int = 0) -> float:
        """Seconds per GB of one wave whose busiest broker has `fanout` children,
        `depth` levels deep, reaching `ranks` ranks (relays included), every byte moved."""
        return self.distribute_seconds(GIB, GIB, fanout, depth, ranks)

    def link_feed_s_per_gb(self, fanout: int) -> float:
        """The floor a link sets: the busiest broker sends one copy per child."""
        return fanout * 8.0 / self.link_gbps if self.link_gbps else 0.0

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
