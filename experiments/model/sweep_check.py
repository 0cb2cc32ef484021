"""A sweep checked in one pass, before anything starts: every flag, and how they combine.

`check_sweep(sweep, here)` reads a Sweep (model/sweep.py) once and gives a
CheckedSweep: the backend it runs on, the flux backend's place, the layout,
the links parsed, the cluster file read, and the sizes, strategies and knobs
in their canonical form.  `plan()` builds the cells and the estimate from it
and hands the backend its parts, so nothing downstream parses a flag again;
`check_cells` holds the checks that need the planned cells.  Each mistake
is one UserError line.  `here` is what the checks need to know of this machine
(places.Here): the choice of backend and place, and every check a backend makes
when `kary run` brings it up (machine_check.py), so `plan` refuses what `run`
would; what costs a subprocess or a look at a disk `here` asks its probes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from experiments.errors import UserError
from experiments.formats.run_record import NESTED, PER_CELL
from experiments.model.axes import knob_flag
from experiments.model.cluster_spec import ClusterSpec, load_cluster_spec
from experiments.model.disk import check_disk, check_local_disk, disk_need, local_disk_need
from experiments.model.faults import check_fault_ranks, parse_faults
from experiments.model.layout import check_layout, effective_layout
from experiments.model.links import LinkSettings, link_settings
from experiments.model.machine_check import check_allocation_size, check_here, runs_on_this_disk
from experiments.model.places import AllocationSize, Here, check_backend_name, choose_place
from experiments.model.plan import Cell
from experiments.model.sweep import Sweep
from experiments.model.units import parse_size, parse_sizes
from experiments.model.validate import image_ref

__all__ = ["CheckedSweep", "check_cells", "check_sweep", "local_disk_warning"]


@dataclass(frozen=True)
class CheckedSweep:
    """A sweep whose every flag was checked, in the form the plan and the backend use.

    `place` is where the flux backend runs its cells (None on the others);
    `layout` the layout cells run in (effective_layout); `sizes` None for the
    backend's default sizes; `chunksize` / `purge_target_size` in bytes.
    """

    sweep: Sweep
    backend: str
    place: str | None
    layout: str
    links: LinkSettings
    cluster: ClusterSpec | None
    sizes: list[int] | None
    strategies: list[str]
    chunksize: int | None
    purge_target_size: int | None
    image: str
    # This machine, as the checks saw it; the allocation kary runs in, if the place is one.
    here: Here
    allocation: AllocationSize | None = None


def check_sweep(sweep: Sweep, here: Here) -> CheckedSweep:
    """Every check a sweep needs before its cells are planned; see the module doc."""
    _check_flags(sweep)
    cluster = load_cluster_spec(sweep.cluster) if sweep.cluster is not None else None
    backend = _choose_backend(sweep, cluster, here)
    links = link_settings(
        sweep.link_bandwidth,
        sweep.link_latency,
        sweep.root_link_bandwidth,
        sweep.group_size,
        sweep.group_link_bandwidth,
        sweep.link_queue,
    )
    place = (
        choose_place(sweep.place, shaped=_shaped(sweep), in_allocation=here.in_allocation)
        if backend == "flux"
        else None
    )
    check_layout(sweep.layout, backend, place)
    allocation = check_here(backend, place, links, here)
    return CheckedSweep(
        sweep=sweep,
        backend=backend,
        place=place,
        layout=effective_layout(sweep.layout, backend),
        links=links,
        cluster=cluster,
        sizes=_sizes(sweep.sizes),
        strategies=_strategies(sweep.strategies),
        chunksize=knob_flag("chunksize", sweep.chunksize),
        purge_target_size=knob_flag("purge_target_size", sweep.purge_target_size),
        image=image_ref(sweep.image),
        here=here,
        allocation=allocation,
    )


def check_cells(checked: CheckedSweep, cells: Sequence[Cell], max_nodes: int) -> None:
    """The checks that need the planned cells: faults name ranks every cell has; a
    cluster file has workers enough for the biggest cell and disk enough on rank 0's
    (model/disk.py: a pod out of disk is evicted mid-cell, not refused at the start);
    an allocation has nodes enough; and a sweep run here fits this machine's free disk."""
    if checked.sweep.emulator_faults:
        check_fault_ranks(checked.sweep.emulator_faults, cells)
    if checked.allocation is not None:
        check_allocation_size(cells, checked.allocation.nodes)
    local_disk_warning(checked, cells)
    cluster = checked.cluster
    if cluster is not None and max_nodes > cluster.nodes:
        raise UserError(
            f"the plan needs {max_nodes} nodes but {cluster.path} has {cluster.nodes} workers"
        )
    if cluster is not None and checked.backend == "kubernetes":
        needs = [
            disk_need(cells, layout, checked.image, cluster.provider)
            for layout in (NESTED, PER_CELL)
        ]
        chosen = next(need for need in needs if need.layout == checked.layout)
        check_disk(cluster, chosen, needs)


def local_disk_warning(checked: CheckedSweep, cells: Sequence[Cell]) -> str | None:
    """UserError when `cells` run on this machine cannot fit its free disk; a warning line
    when they come close (model/disk.py); None when they fit or run elsewhere."""
    if not runs_on_this_disk(checked.backend, checked.place, checked.allocation):
        return None
    free = checked.here.probes.free_disk()
    if free is None or not cells:
        return None
    return check_local_disk(local_disk_need(cells, checked.layout), free)


def _check_flags(sweep: Sweep) -> None:
    """The flags that stand alone: iterations, order, template, --up/--down, faults."""
    if sweep.iterations < 1:
        raise UserError(f"invalid --iters {sweep.iterations}: must be >= 1")
    if sweep.order not in ("given", "random"):
        raise UserError(f"invalid --order {sweep.order!r}: choose given or random")
    if sweep.template is not None and not (sweep.template / "entrypoint.sh.j2").is_file():
        raise UserError(
            f"--template {sweep.template}: expected a folder with minicluster.yaml.j2 "
            "and entrypoint.sh.j2"
        )
    if sweep.pending_timeout is not None and not sweep.pending_timeout > 0:
        raise UserError(f"invalid --pending-timeout {sweep.pending_timeout:g}: must be > 0 seconds")
    if (sweep.up or sweep.down) and sweep.cluster is None:
        raise UserError("--up and --down need --cluster FILE")
    if sweep.sizes is not None and (sweep.min_size_gb or sweep.max_size_gb):
        # Either would be dropped silently: --sizes wins in the spec (resolved_sizes).
        raise UserError(
            "--sizes lists the sizes; --min-size / --max-size give a range of GB instead: "
            "use one or the other"
        )
    if sweep.emulator_faults:
        parse_faults(sweep.emulator_faults)


def _choose_backend(sweep: Sweep, cluster: ClusterSpec | None, here: Here) -> str:
    """The backend a sweep runs on, and the flags only some backends take."""
    if sweep.backend is not None:
        backend = check_backend_name(sweep.backend)
    elif cluster is not None:
        backend = "kubernetes"
    elif sweep.emulator_faults:
        backend = "local"
    elif sweep.place is not None:
        backend = "flux"
    else:
        backend = here.default_backend
    if _shaped(sweep) and backend not in ("local", "flux"):
        raise UserError(
            "--link-bandwidth and --link-latency shape links on this machine: the flux backend "
            "(a box) or the emulator (local), not " + backend
        )
    if sweep.root_link_bandwidth and backend != "flux":
        raise UserError("--root-link-bandwidth shapes a box's rank 0 link: flux backend only")
    if (sweep.group_size is not None or sweep.group_link_bandwidth) and backend != "flux":
        raise UserError(
            "--group-size and --group-link-bandwidth group a box's nodes: flux backend only"
        )
    if sweep.link_queue is not None and backend != "flux":
        raise UserError("--link-queue says how a box's links queue: flux backend only")
    if sweep.place is not None and backend != "flux":
        raise UserError(f"--place says where real Flux runs: flux backend only, not {backend}")
    if sweep.emulator_faults and backend != "local":
        raise UserError("--emulator-fault injects faults into the emulator: local backend only")
    return backend


def _shaped(sweep: Sweep) -> bool:
    """Links shaped on this machine: a box (flux-core here) or the emulator."""
    return bool(
        sweep.link_bandwidth
        or sweep.link_latency
        or sweep.root_link_bandwidth
        or sweep.group_size
        or sweep.group_link_bandwidth
    )


def _sizes(sizes: str | Sequence[str | int] | None) -> list[int] | None:
    if sizes is None:
        return None
    if isinstance(sizes, str):
        # An empty --sizes is a mistake (a shell variable that was not set), not the defaults.
        return parse_sizes(sizes)
    return [s if isinstance(s, int) else parse_size(s) for s in sizes]


def _strategies(values: Sequence[str]) -> list[str]:
    """Strategies as given: a list, and each item may be a comma list (the CLI's form)."""
    return [s.strip() for v in values for s in v.split(",") if s.strip()] or ["all"]
