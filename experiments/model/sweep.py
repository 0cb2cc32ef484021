"""The sweep spec: what to run, from Python, flags or a sweep file (experiments.api runs it).

`Sweep`'s fields are `kary plan` / `kary run`'s flags with the same defaults;
`Sweep.from_file` reads a sweep file (experiments/model/sweep_file.py) and
`override` lays flags over it as the command line does.  A Sweep is taken as
given; sweep_check.py checks it, once, when it is planned.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.errors import UserError
from experiments.model.places import check_backend_name
from experiments.model.render import DEFAULT_IMAGE
from experiments.model.sweep_file import SweepFile, load_sweep_file

__all__ = ["Sweep", "load_sweep"]


@dataclass(frozen=True)
class Sweep:
    """What to run: the fields are `kary plan` / `kary run`'s flags, with their defaults.

    `sizes` takes "16M,64M" or a list of labels or byte counts; None is the
    backend's default (flux-distribute's 1-10 GB with `min_size_gb` / `max_size_gb`).
    `backend` None picks: a cluster file means kubernetes, faults mean the
    emulator (local), else real Flux when `flux` is on PATH (shaped links then
    run in a box, `place="box"`), else the emulator.

    `matrix` and `zip` are a sweep file's axes ({axis: [values]}; see
    experiments/model/axes.py): nodes, topo and the Flux knobs `chunksize`,
    `mmap`, `purge_target_size`, which the same-named fields set for every
    cell instead.  `only` keeps the cells a filter selects
    (experiments/model/cell_filter.py).  `file` is the sweep file this came
    from (`Sweep.from_file`), recorded with every cell.

    `layout` (flux and kubernetes backends): `nested` runs every cell of a node
    count as a nested Flux instance inside one outer instance (a MiniCluster on
    a cluster, a test instance here); `per-cell` starts one per cell (the
    default, None).
    """

    exact_nodes: int | None = None
    max_nodes: int | None = None
    topos: Sequence[str] = ()
    sizes: str | Sequence[str | int] | None = None
    min_size_gb: int | None = None
    max_size_gb: int | None = None
    iterations: int = 1
    strategies: Sequence[str] = ("all",)
    experiment: str = "distribute"  # or "ping": flux ping per rank and size, no strategies
    # What each blob holds (formats/blobs.py): random, or flux-distribute's zeros; None: random.
    # Also a sweep file's axis, for both kinds in one tree.
    blob: str | None = None
    designs: Path | None = None
    data_dir: Path = Path("data/raw")
    name: str = "flux-sample"
    backend: str | None = None
    cluster: Path | None = None
    history: Path | None = None
    template: Path | None = None
    image: str = DEFAULT_IMAGE
    # The operator's flux view (None: the image's, render.flux_view_for); billed: by digest.
    flux_view: str | None = None
    verify: bool | None = None
    chunksize: str | int | None = None
    mmap: bool | None = None
    purge_target_size: str | int | None = None
    matrix: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    zip: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    only: str | Sequence[str] | None = None
    file: SweepFile | None = None
    order: str = "given"
    seed: int | None = None
    rerun_failed: bool = False
    force: bool = False
    up: bool = False
    down: bool = False
    link_bandwidth: str | None = None
    link_latency: str | None = None
    root_link_bandwidth: str | None = None
    # A two-level network in the box: nodes per group, and each group's uplink.
    group_size: int | None = None
    group_link_bandwidth: str | None = None
    # How the box's shaped links queue (model/links.py LINK_QUEUES; None: the default).
    link_queue: str | None = None
    place: str | None = None
    layout: str | None = None
    # Kubernetes: time a cell whose ranks share a node (else it fails, untimed).
    allow_shared_nodes: bool = False
    # Kubernetes: seconds a cell's pods may stay Pending (None: from the image pull
    # estimate, estimate/defaults.py pending_bound).
    pending_timeout: float | None = None
    emulator_faults: Sequence[str] = ()
    # A billed sweep runs a small smoke cell before its first cell (model/smoke.py);
    # False skips it.  Unbilled backends never run one.
    smoke: bool = True

    @classmethod
    def from_file(cls, path: str | Path, **overrides: Any) -> Sweep:
        """The sweep a sweep file describes, with `overrides` on top (as flags are)."""
        return load_sweep(Path(path)).override(**overrides)

    def override(self, **changes: Any) -> Sweep:
        """`dataclasses.replace`, where a field that sets an axis takes the axis's place.

        --exact-nodes / --max-nodes replace the nodes axis, --topo the topo axis,
        and a knob field its axis, so a flag given with a sweep file wins over it.
        """
        replaced = {
            axis
            for axis, names in _AXIS_FIELDS.items()
            if any(changes.get(name) not in (None, (), []) for name in names)
        }
        if replaced:
            changes.setdefault(
                "matrix", {a: v for a, v in self.matrix.items() if a not in replaced}
            )
            changes.setdefault("zip", {a: v for a, v in self.zip.items() if a not in replaced})
        return dataclasses.replace(self, **changes)


# Which Sweep fields set each axis when given.
_AXIS_FIELDS = {
    "nodes": ("exact_nodes", "max_nodes"),
    "topo": ("topos",),
    "blob": ("blob",),
    "chunksize": ("chunksize",),
    "mmap": ("mmap",),
    "purge_target_size": ("purge_target_size",),
}


def load_sweep(path: Path) -> Sweep:
    """Read a sweep file into a Sweep; a mistake is one UserError line with its line number."""
    file = load_sweep_file(path)
    values = dict(file.values)
    if "backend" in values:
        try:
            check_backend_name(values["backend"])
        except UserError as err:
            raise file.error("backend", str(err)) from None
    return Sweep(**values, file=file)
