"""The flux backend: each cell runs on real flux-core, wherever kary finds it.

`up()` finds the `flux` on PATH and its version, and settles the place (one
module each, recorded in run.json as `place`):

- ``test-instance`` (test_instance.py): ``flux start --test-size=<nodes>`` on
  this machine, under the session guard;
- ``allocation`` (allocation.py): a nested instance (``flux batch``) in the
  Flux instance kary runs inside (FLUX_URI is set);
- ``box`` (box.py): each broker in a network namespace of its own on this
  machine, over links `tc` shapes; chosen by ``place="box"`` and whenever links
  are shaped.

With ``--layout nested`` a test instance's cells run nested in one outer
instance per node count (nested.py).  Where all ranks share one filesystem (a
test instance, a box, or an allocation whose hostlist repeats a host) the
entrypoint gets KARY_RANK_ROOT, under which each rank uses a folder named by its
own rank; on real nodes it is unset.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from experiments.backends.base import (
    Backend,
    BackendError,
    BackendSettings,
    RunResult,
    by_node_count,
)
from experiments.backends.entry_stamps import entry_spans, stamped
from experiments.backends.flux.allocation import allocation_facts, run_in_allocation
from experiments.backends.flux.box import prepare_box, run_in_box
from experiments.backends.flux.nested import NestedInstances
from experiments.backends.flux.site import (
    HOW_TO_GET_FLUX,
    FluxSite,
    flux_version,
    query_flux,
)
from experiments.backends.flux.test_instance import run_in_test_instance
from experiments.box.layout import BoxLayout, new_run_id
from experiments.errors import UserError
from experiments.formats.run_record import (
    ALLOCATION,
    BOX,
    NESTED,
    PER_CELL,
    TEST_INSTANCE,
)
from experiments.model.links import LinkSettings
from experiments.model.machine_check import check_allocation_size
from experiments.model.places import Here, default_place
from experiments.model.plan import Cell
from experiments.model.render import Rendered

__all__ = ["FluxBackend"]


class FluxBackend(Backend):
    """Cells run on real flux-core; timings are Flux's own."""

    name = "flux"

    def __init__(
        self,
        *,
        workdir: Path | None = None,
        place: str | None = None,
        links: LinkSettings | None = None,
        host_prefix: str = "flux-sample",
        layout: str | None = None,
    ) -> None:
        self.workdir = workdir
        self.requested_place = place
        self.layout = layout or PER_CELL
        self.links = links or LinkSettings()
        self.host_prefix = host_prefix
        self.box_prefix: list[str] = []
        self.site: FluxSite | None = None
        self.nested: NestedInstances | None = None

    @classmethod
    def from_settings(cls, settings: BackendSettings) -> FluxBackend:
        return cls(
            workdir=settings.workdir,
            place=settings.place,
            links=settings.links,
            host_prefix=settings.render.name if settings.render else "flux-sample",
            layout=settings.layout,
        )

    @property
    def flux_version(self) -> str | None:
        """flux-core's version, once `up()` has asked it."""
        return self.site.version if self.site else None

    # ---- up: which flux, where ------------------------------------------

    def up(self) -> None:
        here = Here.now()
        flux = here.flux
        if flux is None:
            raise UserError(f"--backend flux needs flux-core: {HOW_TO_GET_FLUX}")
        version = flux_version(flux)
        # The plan checked an asked-for place (model/sweep_check.py); none: where kary is.
        place = self.requested_place or default_place(
            shaped=self.links.shaped, in_allocation=here.in_allocation
        )
        site = FluxSite(flux, version, place, self.layout, workdir=self.workdir)
        if place == BOX:
            self.box_prefix = prepare_box(self.links, Path(site.scratch_base()))
        elif place == ALLOCATION:
            facts = allocation_facts(lambda args, what: query_flux(flux, args, what))
            site.instance_nodes, site.shared_filesystem = facts.nodes, facts.shared_filesystem
        self.site = site

    def run_order(self, cells: Sequence[Cell]) -> list[Cell]:
        # One outer instance per node count in the nested layout: a count's cells together.
        return by_node_count(cells) if self.layout == NESTED else list(cells)

    def check_cells(self, cells: Sequence[Cell]) -> None:
        site = self.site
        if site is not None and site.place == ALLOCATION and site.instance_nodes is not None:
            check_allocation_size(cells, site.instance_nodes)

    # ---- run ---------------------------------------------------------------

    def run(self, cell: Cell, rendered: Rendered, timeout: float | None) -> RunResult:
        site = self.site
        if site is None:
            raise BackendError("run() before up()")
        box = None
        if site.place == BOX:
            box = BoxLayout(new_run_id(), cell.nodes, cell.topo, self.host_prefix)
            folder = Path(site.scratch_base()) / box.name
            folder.mkdir(mode=0o700)
        else:
            folder = Path(tempfile.mkdtemp(prefix="kary-flux-", dir=site.scratch_base()))
        try:
            entrypoint = folder / "entrypoint.sh"
            entrypoint.write_text(rendered.entrypoint_sh)
            if site.place == TEST_INSTANCE and self.layout == NESTED:
                if self.nested is None:
                    self.nested = NestedInstances(site)
                return self.nested.run(cell, folder, entrypoint, timeout)
            if site.place not in (BOX, TEST_INSTANCE):
                return run_in_allocation(site, cell, folder, entrypoint, timeout)
            # A fresh instance on this machine: its start and stop are timed (entry_stamps.py).
            called = time.time()
            if box is not None:
                result = run_in_box(
                    site, cell, self.links, self.box_prefix, box, folder, stamped(entrypoint),
                    timeout,
                )  # fmt: skip
            else:
                result = run_in_test_instance(site, cell, folder, stamped(entrypoint), timeout)
            spans = entry_spans(folder, called, time.time())
            return dataclasses.replace(result, spans={**result.spans, **spans})
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def down(self) -> None:
        nested, self.nested = self.nested, None
        if nested is not None:
            nested.stop()
