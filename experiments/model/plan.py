"""Experiment spec -> run cells, with deterministic ids and raw-tree paths.

A cell is one (nodes, topology, links, Flux knobs, iteration): one MiniCluster,
one log.  The plan is pure: it lists every cell of the spec.  Which of them still
have to run is the raw tree's business (experiments/execution/ledger.py).

Nodes and topologies come from the spec's axes (a sweep file's matrix and
zip, experiments/model/axes.py) where it has them, else from the flags:
--exact-nodes / --max-nodes with --topo or a design file.  Knobs come from the
axes, else from the flags (--chunksize, --mmap, --purge-target-size).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from experiments.errors import UserError
from experiments.formats.blobs import DEFAULT_BLOB
from experiments.formats.cell_layout import NO_KNOBS, Knobs, cell_dir, cell_id, topology_dirname
from experiments.formats.events import EXPERIMENTS
from experiments.model.axes import knobs_of, points
from experiments.model.cell_filter import CellFilter
from experiments.model.designs import Design, load_designs
from experiments.model.render import STRATEGIES, check_ping_pads, strategy_waves
from experiments.model.topology import build_tree, parse_topology
from experiments.model.validate import dns1123_name, node_count

__all__ = [
    "DEFAULT_SIZES",
    "PING_SIZES",
    "Cell",
    "ExperimentSpec",
    "Plan",
    "plan_experiment",
]

GIB = 2**30
MIB = 2**20
# Small sizes keep a local run to seconds; the cloud default is flux-distribute's 1-10 GB.
DEFAULT_SIZES: dict[str, list[int]] = {
    "local": [16 * MIB, 64 * MIB],
    "flux": [16 * MIB, 64 * MIB],
    "kubernetes": [g * GIB for g in range(1, 11)],
}
# The ping experiment's payloads (flux ping --pad; every cell pings with none
# too): flux-distribute pinged 200M to 1000M on its clusters.
PING_SIZES: dict[str, list[int]] = {
    "local": [MIB, 16 * MIB],
    "flux": [MIB, 16 * MIB],
    "kubernetes": [m * MIB for m in range(200, 1001, 200)],
}


@dataclass(frozen=True)
class Cell:
    """One run: a MiniCluster of `nodes` brokers under `topo` with Flux `knobs`, iteration
    `iteration`.  `experiment` "ping" pings every rank (per size) instead of
    distributing; such a cell has no strategies."""

    nodes: int
    topo: str
    iteration: int
    sizes: tuple[int, ...]
    strategies: tuple[str, ...]
    knobs: Knobs = NO_KNOBS
    experiment: str = "distribute"
    # Shaped links' directory (cell_layout.network_dirname); None on unshaped links.
    network: str | None = None
    # What each size's blob holds (formats/blobs.py).
    blob: str = DEFAULT_BLOB

    @property
    def topo_dir(self) -> str:
        return topology_dirname(self.topo)

    @property
    def id(self) -> str:
        """`30/kary-16/0`: the cell's path below the raw root, and its name everywhere."""
        return cell_id(self.nodes, self.topo, self.iteration, self.knobs, self.network, self.blob)

    def raw_dir(self, data_dir: Path) -> Path:
        return cell_dir(data_dir, self.id)


class ExperimentSpec(BaseModel):
    """What to run, from flags or a YAML file. Validated before anything else happens."""

    model_config = ConfigDict(extra="forbid")

    designs_file: Path | None = None
    exact_nodes: int | None = None
    max_nodes: int | None = None
    topos: list[str] = Field(default_factory=list)
    iters: int = Field(default=1, ge=1, le=1000)
    sizes: list[int] | None = None
    min_size_gb: int | None = Field(default=None, ge=1)
    max_size_gb: int | None = Field(default=None, ge=1)
    strategies: list[str] = Field(default_factory=lambda: ["all"])
    experiment: str = "distribute"
    data_dir: Path = Path("data/raw")
    name: str = "flux-sample"
    backend: str = "local"
    order: Literal["given", "random"] = "given"
    seed: int | None = None
    # A sweep file's axes (experiments/model/axes.py): every combination of the
    # matrix's, with every row of the zip's.
    matrix: dict[str, list[Any]] = Field(default_factory=dict)
    zip: dict[str, list[Any]] = Field(default_factory=dict)
    # The knobs of every cell, where no axis sets them; None leaves Flux's default.
    chunksize: int | None = None
    mmap: bool | None = None
    purge_target_size: int | None = None
    # Every cell's shaped links, as its directory names them (None: unshaped).
    network: str | None = None
    # Every cell's blob kind where no axis sets it.
    blob: str = DEFAULT_BLOB
    # The sweep file the spec came from, recorded in each cell's run.json.
    sweep_file: str | None = None
    sweep_sha256: str | None = None

    @field_validator("strategies")
    @classmethod
    def _known_strategies(cls, value: list[str]) -> list[str]:
        for strategy in value:
            if strategy not in STRATEGIES:
                raise UserError(
                    f"unknown strategy {strategy!r}: choose from {', '.join(STRATEGIES)}"
                )
        if not value or len(set(value)) != len(value):
            raise UserError("--strategy: give each strategy once")
        return value

    @field_validator("experiment")
    @classmethod
    def _known_experiment(cls, value: str) -> str:
        if value not in EXPERIMENTS:
            raise UserError(f"unknown experiment {value!r}: choose from {', '.join(EXPERIMENTS)}")
        return value

    def resolved_sizes(self) -> list[int]:
        if self.experiment == "ping":
            sizes = self.sizes or PING_SIZES.get(self.backend, PING_SIZES["kubernetes"])
            check_ping_pads(list(sizes))
            return list(sizes)
        if self.sizes:
            return list(self.sizes)
        if self.min_size_gb is not None or self.max_size_gb is not None:
            low = self.min_size_gb or 1
            high = self.max_size_gb or low
            if low > high:
                raise UserError(f"--min-size {low} is larger than --max-size {high}")
            return [g * GIB for g in range(low, high + 1)]
        return list(DEFAULT_SIZES.get(self.backend, DEFAULT_SIZES["kubernetes"]))


@dataclass(frozen=True)
class Plan:
    """Every cell of a spec, in run order, and the sizes each runs."""

    spec: ExperimentSpec
    cells: list[Cell]
    sizes: list[int]

    @property
    def max_nodes(self) -> int:
        return max((c.nodes for c in self.cells), default=0)

    def only(self, chosen: CellFilter | None) -> Plan:
        """The plan with only the cells `chosen` selects; a filter that selects none is an error."""
        if chosen is None:
            return self
        cells = [
            c for c in self.cells if chosen.matches(c.nodes, c.topo, c.iteration, c.knobs, c.blob)
        ]
        if not cells:
            raise UserError(f"--only {chosen.text} selects none of the {len(self.cells)} cells")
        return Plan(self.spec, cells, self.sizes)

    def record_fields(self, cell: Cell) -> dict[str, Any]:
        """What run.json says of a cell beyond its nodes, topology and iteration:
        its knobs, and the sweep file it was planned from."""
        return {
            **cell.knobs.values(),
            **({"experiment": cell.experiment} if cell.experiment != "distribute" else {}),
            "sweep_file": self.spec.sweep_file,
            "sweep_sha256": self.spec.sweep_sha256,
        }


def _points(spec: ExperimentSpec) -> list[tuple[Design, Knobs, str]]:
    """Every (design, knobs, blob kind) of the spec, in order, each once."""
    default = Knobs(spec.chunksize, spec.mmap, spec.purge_target_size)
    found: dict[tuple[Design, Knobs, str], None] = {}
    for point in points(spec.matrix, spec.zip):
        knobs = knobs_of(point, default)
        blob = point.get("blob", spec.blob)
        for design in _point_designs(spec, point):
            found.setdefault((design, knobs, blob))
    return list(found)


def _point_designs(spec: ExperimentSpec, point: dict[str, Any]) -> list[Design]:
    """The designs of one point: its nodes and topology, or the flags' for what it lacks."""
    if "nodes" in point and (spec.exact_nodes is not None or spec.max_nodes is not None):
        raise UserError("nodes is an axis: drop --exact-nodes / --max-nodes, or the axis")
    if "topo" in point and spec.topos:
        raise UserError("topo is an axis: drop --topo, or the axis")
    if "nodes" in point and "topo" in point:
        return [Design(point["nodes"], point["topo"])]
    if "nodes" in point:
        return _designs(spec.model_copy(update={"exact_nodes": point["nodes"]}))
    if "topo" in point:
        if spec.exact_nodes is None:
            raise UserError("topo is an axis: give nodes too (an axis, or --exact-nodes N)")
        return _designs(spec.model_copy(update={"topos": [point["topo"]]}))
    return _designs(spec)


def _designs(spec: ExperimentSpec) -> list[Design]:
    if spec.exact_nodes is not None and spec.max_nodes is not None:
        raise UserError("give --exact-nodes or --max-nodes, not both")
    if spec.designs_file is not None and spec.designs_file.is_dir():
        raise UserError(
            f"--designs names a design file (a JSON list); {spec.designs_file} is a folder: "
            "the raw tree kary run writes is --data-dir"
        )
    if spec.topos:
        if spec.designs_file is not None:
            raise UserError("--topo gives the topologies and --designs a design file: drop one")
        if spec.exact_nodes is None:
            raise UserError("an explicit --topo needs --exact-nodes N")
        nodes = node_count(spec.exact_nodes, "--exact-nodes")
        topos = [str(parse_topology(t)) for t in spec.topos]
        if len(set(topos)) != len(topos):
            raise UserError("--topo: a topology is listed twice")
        return [Design(nodes, t) for t in topos]
    if spec.exact_nodes is None and spec.max_nodes is None:
        raise UserError("say which designs to run: --exact-nodes N or --max-nodes N (or --topo T)")
    if spec.designs_file is None:
        from experiments.resources import resource_path

        designs_file = resource_path("designs", "kary-designs.json")
    else:
        designs_file = spec.designs_file
    designs = load_designs(designs_file)
    if spec.exact_nodes is not None:
        node_count(spec.exact_nodes, "--exact-nodes")
        chosen = [d for d in designs if d.nodes == spec.exact_nodes]
    else:
        node_count(spec.max_nodes or 0, "--max-nodes")
        chosen = [d for d in designs if d.nodes <= (spec.max_nodes or 0)]
    if not chosen:
        which = spec.exact_nodes if spec.exact_nodes is not None else f"<= {spec.max_nodes}"
        raise UserError(
            f"no designs for {which} nodes in {designs_file}; use --topo or another --designs"
        )
    return chosen


def _check_runnable(design: Design, strategies: list[str]) -> None:
    if design.nodes < 2:
        raise UserError(f"a distribution needs at least 2 nodes, got {design.nodes}")
    tree = build_tree(design.topo, design.nodes)
    for strategy in strategies:
        strategy_waves(tree, strategy)


def _check_distinct_trees(designs: list[Design]) -> None:
    """Two topologies that build one tree at a node count measure the same thing twice
    (kary:9 at 8 nodes is kary:7: every rank a child of rank 0); refuse the second."""
    seen: dict[tuple[int, tuple[int, ...]], str] = {}
    for design in dict.fromkeys(designs):
        key = (design.nodes, build_tree(design.topo, design.nodes).parents)
        if key in seen and seen[key] != design.topo:
            raise UserError(
                f"{design.topo} at {design.nodes} nodes builds the same tree as {seen[key]}: "
                "it would time one tree twice under two names; drop one"
            )
        seen.setdefault(key, design.topo)


def plan_experiment(spec: ExperimentSpec) -> Plan:
    """Every cell of the spec, in run order; refuses a spec that cannot run."""
    dns1123_name(spec.name)
    designs = _points(spec)
    # A ping cell distributes nothing: it runs no strategy.
    strategies = [] if spec.experiment == "ping" else spec.strategies
    for design in dict.fromkeys(design for design, _, _ in designs):
        _check_runnable(design, strategies)
    _check_distinct_trees([design for design, _, _ in designs])
    sizes = spec.resolved_sizes()
    rng = random.Random(spec.seed)
    cells: list[Cell] = []
    for iteration in range(spec.iters):
        batch = [
            Cell(
                d.nodes,
                d.topo,
                iteration,
                tuple(sizes),
                tuple(strategies),
                knobs,
                spec.experiment,
                spec.network,
                blob,
            )
            for d, knobs, blob in designs
        ]
        # A fresh topology order per iteration keeps drift (warm caches, noisy
        # neighbours) from always favouring the same design.
        if spec.order == "random":
            rng.shuffle(batch)
        cells.extend(batch)
    return Plan(spec=spec, cells=cells, sizes=sizes)
