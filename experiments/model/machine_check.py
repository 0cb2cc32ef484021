"""What this machine must have for a sweep's backend and place: the checks `kary run`'s
backends make when they come up, made when the sweep is planned instead.

A plan that `run` would refuse is refused by `plan`, with the same one line
(issue 36): the flux backend needs flux-core's `flux`; a box needs its tools,
the right to make namespaces and the qdiscs its links ask; an allocation needs
the nodes of the biggest cell; the emulator needs bash and Linux.  The backends
keep their own checks (a backend can be used without a plan); the words are
the same because they come from here.  A cluster is not asked anything: a plan
prices a cluster that --up has not made yet.
"""

from __future__ import annotations

from collections.abc import Sequence

from experiments.errors import UserError
from experiments.formats.run_record import ALLOCATION, BOX, TEST_INSTANCE
from experiments.model.links import LinkSettings
from experiments.model.places import HOW_TO_GET_FLUX, AllocationSize, Here
from experiments.model.plan import Cell

__all__ = ["check_allocation_size", "check_emulator_here", "check_here", "runs_on_this_disk"]


def check_here(
    backend: str, place: str | None, links: LinkSettings, here: Here
) -> AllocationSize | None:
    """UserError when this machine lacks what `backend` at `place` needs; the allocation's
    size where the flux backend runs in one (checked against the cells by
    `check_allocation_size`)."""
    if backend == "local":
        check_emulator_here(here)
        return None
    if backend != "flux":
        return None
    if here.flux is None:
        raise UserError(f"--backend flux needs flux-core: {HOW_TO_GET_FLUX}")
    here.probes.check_flux(here.flux)
    if place == BOX:
        here.probes.check_box(links)
    if place == ALLOCATION:
        return here.probes.allocation(here.flux)
    return None


def check_emulator_here(here: Here) -> None:
    """The emulator runs each entrypoint with bash, its ranks as processes (fork, /proc)."""
    if not here.bash:
        raise UserError("the local backend runs the entrypoint with bash: install bash")
    if not here.linux:
        raise UserError("the local backend needs Linux (fork and /proc)")


def check_allocation_size(cells: Sequence[Cell], instance_nodes: int) -> None:
    """UserError when the biggest cell needs more nodes than the Flux instance has."""
    if not cells:
        return
    biggest = max(cells, key=lambda c: c.nodes)
    if biggest.nodes > instance_nodes:
        raise UserError(
            f"cell {biggest.id} needs {biggest.nodes} nodes but this Flux instance has "
            f"{instance_nodes}: ask for a bigger allocation or plan fewer nodes"
        )


def runs_on_this_disk(backend: str, place: str | None, allocation: AllocationSize | None) -> bool:
    """Every rank of a cell extracts onto this machine's one disk: the emulator, a test
    instance, a box, or an allocation whose every node is this machine."""
    if backend == "local":
        return True
    if backend != "flux":
        return False
    if place in (TEST_INSTANCE, BOX):
        return True
    return place == ALLOCATION and allocation is not None and allocation.on_this_machine
