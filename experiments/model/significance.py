"""Can a study's iterations name a fastest design at all?  The report's test, asked in advance.

The report calls a design the clear winner of a (strategy, nodes, size) group
when the Mann-Whitney U test, two-sided, of its timings against each other
design's gives p < ALPHA, with at least MIN_RUNS runs a side
(analysis/page/results.py over analysis/tables/stats.py).  Each pair is its own
test at ALPHA, with no correction for how many designs there are, so the number
of designs decides only whether there is a comparison; the runs a side decide
how small p can be.  With n runs a side the exact test's smallest p is
2 / C(2n, n), every run of one side faster than every run of the other: 0.1 at
n = 3, 0.029 at n = 4.  A study whose iterations cannot get below ALPHA can
never name a winner, whatever the timings; `kary plan` and `kary run` say so
before it runs, and how many iterations could.

The report's constants are not imported (analysis loads pandas, which a plan
does not need): tests/model/test_significance.py holds these to them,
computing the smallest p with the report's own rank_test.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from experiments.formats.blobs import DEDUPLICATED
from experiments.model.plan import Cell

__all__ = [
    "ALPHA",
    "MIN_RUNS",
    "TEST_NAME",
    "iterations_needed",
    "significance_warning",
    "smallest_p",
    "zero_blobs_warning",
]

# analysis.tables.stats' ALPHA, MIN_RUNS and TEST_NAME (the test holds them equal).
ALPHA = 0.05
MIN_RUNS = 3
TEST_NAME = "Mann-Whitney U, two-sided"


def smallest_p(runs: int) -> float:
    """The smallest p the report's test can give with `runs` timings on each side."""
    if runs < 1:
        return 1.0
    return min(1.0, 2 / math.comb(2 * runs, runs))


def iterations_needed() -> int:
    """The fewest runs a side with which the report can name a winner (p < ALPHA possible)."""
    runs = MIN_RUNS
    while smallest_p(runs) >= ALPHA:
        runs += 1
    return runs


def significance_warning(cells: Sequence[Cell]) -> str | None:
    """A warning when the plan's designs are compared with too few iterations for any
    p < ALPHA; None when they can be, or nothing is compared.

    Designs are compared within a node count and a blob kind (a plan's cells share
    their links; the report never ranks zeros against random): a topology, with its
    Flux knobs where they vary.  Runs a side are each design's cells.
    """
    runs: dict[tuple[int, str], dict[tuple[str, object], int]] = defaultdict(
        lambda: defaultdict(int)
    )
    for cell in cells:
        if cell.experiment != "distribute":
            continue  # ping cells are tabled by depth, not ranked
        runs[(cell.nodes, cell.blob)][(cell.topo, cell.knobs)] += 1
    compared = {nodes: designs for nodes, designs in runs.items() if len(designs) > 1}
    if not compared:
        return None
    fewest = min(min(designs.values()) for designs in compared.values())
    if fewest >= MIN_RUNS and smallest_p(fewest) < ALPHA:
        return None
    most = max(len(designs) for designs in compared.values())
    knobs_vary = any(len({knobs for _, knobs in designs}) > 1 for designs in compared.values())
    what = f"{most} designs" if knobs_vary else f"{most} topologies"
    if len({len(designs) for designs in compared.values()}) > 1:
        what = f"up to {what}"
    nodes = {count for count, _ in compared}
    where = f"at {next(iter(nodes))} nodes" if len(nodes) == 1 else "at a node count"
    need = iterations_needed()
    iterations, side = (
        ("1 iteration", "1 run") if fewest == 1 else (f"{fewest} iterations", f"{fewest} runs")
    )
    return (
        f"warning: with {iterations} the report cannot tell the {what} {where} apart: its "
        f"test ({TEST_NAME}, p < {ALPHA:g} against every other) gives at best "
        f"p = {smallest_p(fewest):.2g} with {side} a side; --iters {need} could "
        f"(at best p = {smallest_p(need):.2g})"
    )


def zero_blobs_warning(cells: Sequence[Cell]) -> str | None:
    """A warning when the plan compares topologies on deduplicated blobs (zeros): such a
    blob is one distinct chunk, so rank 0's link carries almost none of it and the
    topologies are predicted (and measure) alike; None otherwise."""
    topologies: dict[tuple[int, str], set[str]] = defaultdict(set)
    for cell in cells:
        if cell.experiment == "distribute" and cell.blob in DEDUPLICATED:
            topologies[(cell.nodes, cell.blob)].add(cell.topo)
    compared = sorted((key, topos) for key, topos in topologies.items() if len(topos) > 1)
    if not compared:
        return None
    (nodes, blob), topos = compared[0]
    return (
        f"warning: {blob} blobs cannot rank fan-outs: each is one distinct chunk, so the "
        f"{len(topos)} topologies at {nodes} nodes move almost no data and are predicted "
        "alike; --blob random ranks them (docs/formats.md, blobs)"
    )
