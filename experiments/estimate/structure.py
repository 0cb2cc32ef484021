"""A cell's steps, each the sum of parameters times features: one structure for
predicting a plan and for fitting history.

How Flux moves the data sets the features.  Rank 0 creates the archive (a
fixed cost and a cost per GB: hashing into 1 MiB blobs and writing its
store).  Then every target rank runs `flux archive extract`, which loads the
blobs one at a time from its broker, and a broker that misses asks its parent:
so per GB a wave costs one extract's pace, plus a copy per child of the busiest
broker (fan-out), plus a level per level of depth below the first, plus, where
every rank shares one machine's cores, the CPU of every rank the wave reaches
(targets and the relays above them).  Verify hashes each copy on its target.
The cell as a whole pays its start-up (a MiniCluster or a `flux start`), per
broker, and the cold-cache step per rank before each distribution.

Each step names the parsed event it is timed as, so history rows join the same
steps (fit.py) that a plan sums (predict_cell).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from experiments.estimate.parameters import GIB, TimeModel
from experiments.formats.blobs import DEDUPLICATED
from experiments.formats.events import GENERATE_BLOB, VERIFY_PREFIX, strategy_events
from experiments.model.plan import Cell
from experiments.model.render import strategy_waves
from experiments.model.topology import Tree, build_tree

__all__ = [
    "MOVED_PARAMETERS",
    "PARTS",
    "CellTime",
    "Step",
    "cell_steps",
    "predict_cell",
    "step_seconds",
]

# The parts of a cell's time, in the order a plan shows them.
PARTS = ("overhead", "generate", "create", "distribute", "verify", "delete", "clean")
OVERHEAD = "overhead"
# The parameters priced per distinct byte that crosses the tree: a deduplicated blob
# (one chunk) has none of these features, so its history cannot inform them.
MOVED_PARAMETERS = frozenset({"fanout_s_per_gb", "hop_s_per_gb", "shared_cpu_s_per_gb"})
PING = "ping"  # Cell.experiment of a cell that pings instead of distributing
DIRECT = "direct"  # the strategy where each rank downloads from rank 0 over HTTP


@dataclass(frozen=True)
class Step:
    """One thing a cell spends time on: its part, the event it is timed as
    (None for the overhead, which no event times), and its features."""

    part: str
    event: str | None
    size: int
    features: Mapping[str, float]
    fanout: int = 0
    depth: int = 0
    ranks: int = 0  # a distribution wave: ranks it reaches, relays included
    # A distribution wave: the distinct bytes that cross the tree (None: all of `size`;
    # 0 for a deduplicated blob, see cell_steps).
    moved: int | None = None


@dataclass(frozen=True)
class CellTime:
    cell: Cell
    seconds: float
    parts: dict[str, float] = field(default_factory=dict)


def _reached(tree: Tree, targets: str) -> int:
    """Ranks a wave's blobs pass through below rank 0: its targets and their ancestors."""
    if targets == "all":
        return tree.size - 1
    reached: set[int] = set()
    for rank in _idset(targets):
        while rank > 0 and rank not in reached:
            reached.add(rank)
            rank = tree.parents[rank]
    return len(reached)


def _idset(targets: str) -> list[int]:
    ranks: list[int] = []
    for part in targets.split(","):
        low, _, high = part.partition("-")
        ranks.extend(range(int(low), int(high or low) + 1))
    return ranks


def _target_count(targets: str, nodes: int) -> int:
    """Ranks a wave reaches: `all` (less rank 0, as the template's -x 0) or an idset."""
    return nodes - 1 if targets == "all" else len(_idset(targets))


def cell_steps(cell: Cell, verify: bool, generate: bool = True) -> list[Step]:
    """Every step of `cell`, the overhead first, in the order the template runs them."""
    # A fit asks each cell of history for its steps once per candidate model, and
    # cells of one design differ only in what does not shape them (iteration, knobs,
    # links): fitting the local history for model_holdout.py asked 51,976 times for
    # 27 distinct shapes, and building each one's tree was half its time.
    deduplicated = cell.blob in DEDUPLICATED
    shape = (cell.nodes, cell.topo, cell.sizes, cell.strategies, cell.experiment, deduplicated)
    return list(_shape_steps(*shape, verify, generate))


@lru_cache(maxsize=4096)
def _shape_steps(
    nodes: int,
    topo: str,
    sizes: tuple[int, ...],
    strategies: tuple[str, ...],
    experiment: str,
    deduplicated: bool,
    verify: bool,
    generate: bool,
) -> tuple[Step, ...]:
    """cell_steps of a cell of this shape (Steps are frozen; the tuple is shared)."""
    tree = build_tree(topo, nodes)
    tree_fanout, tree_depth = tree.max_fanout, tree.depth
    # A deduplicated blob (flux-distribute's zeros) is one chunk: it crosses the tree once and
    # each rank writes the whole size.  Its waves have no feature that scales with bytes
    # moved, so zero-blob history informs only the terms that do not (formats/blobs.py).
    distributions = len(sizes) * len(strategies)
    steps = [
        Step(
            OVERHEAD,
            None,
            0,
            {
                "run_overhead_s": 1.0,
                "broker_start_s": float(nodes),
                "cold_cache_s_per_rank": float(nodes * distributions),
            },
        )
    ]
    if experiment == PING:
        # flux ping per rank and pad: a few milliseconds each, no blob; the
        # start-up is the cell's time.
        return tuple(steps)
    for size in sizes:
        gb = size / GIB
        moved_gb = 0.0 if deduplicated else gb
        if generate:
            steps.append(Step("generate", GENERATE_BLOB, size, {"generate_s_per_gb": gb}))
        for strategy in strategies:
            events = strategy_events(strategy)
            steps.append(
                Step("create", events.create, size, {"create_s": 1.0, "create_s_per_gb": gb})
            )
            # `direct`: every rank downloads from rank 0 itself, as a flat tree would.
            fanout, depth = (nodes - 1, 1) if strategy == DIRECT else (tree_fanout, tree_depth)
            for event, targets in strategy_waves(tree, strategy):
                ranks = _reached(tree, targets)
                steps.append(
                    Step(
                        "distribute",
                        event,
                        size,
                        {
                            "distribute_s": 1.0,
                            "extract_s_per_gb": gb,
                            "fanout_s_per_gb": moved_gb * fanout,
                            "hop_s_per_gb": moved_gb * max(depth - 1, 0),
                            "shared_cpu_s_per_gb": moved_gb * ranks,
                        },
                        fanout,
                        depth,
                        ranks,
                        moved=0 if deduplicated else size,
                    )
                )
                if verify:
                    count = _target_count(targets, nodes)
                    features = {
                        "verify_s": 1.0,
                        "verify_s_per_gb": gb,
                        "verify_s_per_gb_per_rank": gb * count,
                    }
                    steps.append(Step("verify", VERIFY_PREFIX + event, size, features))
            steps.append(Step("delete", events.delete, size, {"delete_s": 1.0}))
            clean = {
                "clean_s": 1.0,
                "clean_s_per_gb": gb,
                "clean_s_per_rank": float(nodes - 1),
            }
            steps.append(Step("clean", events.clean, size, clean))
    return tuple(steps)


def step_seconds(step: Step, model: TimeModel) -> float:
    """A step's predicted seconds: linear in the parameters, except distribution,
    which a link can floor and emulated links shape (TimeModel.distribute_s_per_gb)."""
    if step.part == "distribute":
        moved = step.size if step.moved is None else step.moved
        fitted = model.box_distribute_s(step.size, step.fanout, step.depth, step.ranks, moved)
        if fitted is not None:
            return fitted
        seconds = model.distribute_seconds(step.size, moved, step.fanout, step.depth, step.ranks)
        return seconds + model.distribute_wave_s(step.fanout, step.depth)
    return sum(getattr(model, name) * value for name, value in step.features.items())


def predict_cell(cell: Cell, model: TimeModel, verify: bool) -> CellTime:
    parts = dict.fromkeys(PARTS, 0.0)
    for step in cell_steps(cell, verify):
        parts[step.part] += step_seconds(step, model)
    return CellTime(cell, sum(parts.values()), parts)
