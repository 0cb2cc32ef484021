"""How far above its links' floor a distribution runs: what a plan whose network term
is a link floor adds at its interval's high end.

A cloud plan without random-blob history prices the network as the instance's link
floor (TimeModel.link_feed_s_per_gb: the busiest broker sends one copy per child at
the instance's nominal rate).  A floor is a lower bound, not an estimate: no real
distribution runs at it.  kary's own box runs (real flux-core 0.88 over shaped links,
docs/box.md; the samples in benchmarks/results/box-topologies-n{8,12,16,20}.json)
measured how far above: over the 21 (nodes, links, topology) cells kary did not judge
CPU-bound, each median of n=4 runs took 1.05 to 1.80 times its floor (the flat trees
closest, the chain furthest; the CPU-bound cells, 1.33 to 2.96, say as much about a
2-core machine's cores as about links).  So a step whose time is its floor keeps the
floor as its low end and takes FLOOR_RATIO_HIGH times it at its high end.  A box is
not a cloud: these are the only measurements of the ratio kary has, an assumption
for a cloud, and the plan says so (tests/estimate/test_floor_ratio.py re-derives the
figures from the committed samples).
"""

from __future__ import annotations

from experiments.estimate.parameters import TimeModel
from experiments.estimate.structure import Step

__all__ = [
    "FLOOR_RATIO_CELLS",
    "FLOOR_RATIO_HIGH",
    "FLOOR_RATIO_LOW",
    "floor_assumption_text",
    "link_floor_seconds",
]

# Medians over their links' floor in the box runs not CPU-bound (see the module doc).
FLOOR_RATIO_LOW = 1.05
FLOOR_RATIO_HIGH = 1.80
FLOOR_RATIO_CELLS = 21  # (nodes, links, topology) cells behind the two figures, n=4 each


def link_floor_seconds(step: Step, model: TimeModel) -> float:
    """The seconds of a distribution step that are its link floor: all of its transfer
    when the floor sets its pace (the model prices it as TimeModel.distribute_seconds
    does on plain links), else 0 (not a distribution, no link rate, a deduplicated
    blob, emulated links or a box fit, which price the links their own way)."""
    if step.part != "distribute" or not model.link_gbps:
        return 0.0
    if model.emulated_links or model.box_terms is not None:
        return 0.0
    moved = step.size if step.moved is None else step.moved
    floor = moved / 2**30 * model.link_feed_s_per_gb(step.fanout)
    unfloored = model.model_copy(update={"link_gbps": None})
    work = unfloored.distribute_seconds(step.size, moved, step.fanout, step.depth, step.ranks)
    return floor if floor > 0 and floor >= work else 0.0


def floor_assumption_text(gbps: float | None) -> str:
    """The plan's words for the network term (an `assumed:` line)."""
    rate = f" ({gbps:g} Gbit/s)" if gbps else ""
    return (
        f"network at the instance's link floor{rate}, a lower bound: the high end takes "
        f"{FLOOR_RATIO_HIGH:.2f}x it, the most kary's box runs took over their floor "
        f"({FLOOR_RATIO_LOW:.2f}-{FLOOR_RATIO_HIGH:.2f}x over {FLOOR_RATIO_CELLS} cells not "
        "CPU-bound, n=4 each; docs/box.md)"
    )
