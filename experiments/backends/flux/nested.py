"""The nested layout here: one outer test instance per node count, each cell nested in it.

With ``--layout nested`` (test-instance place) the flux backend keeps one outer
instance of N brokers (outer_instance.py, standing in for a MiniCluster of N
pods) while it runs the cells of node count N, each as a nested instance in it
exactly as inside a user's allocation (allocation.py).  The outer instance is
started for a node count's first cell, replaced when the node count changes or
it died, and stopped after an error, a Ctrl-C, or `stop()`.  Each size's blob
is generated once per outer instance and kept on its disk (KARY_BLOB_CACHE).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from experiments.backends.base import BackendError, RunResult
from experiments.backends.flux.allocation import run_in_allocation
from experiments.backends.flux.outer_instance import OuterInstance
from experiments.backends.flux.site import FluxSite, flux_env
from experiments.model.plan import Cell

__all__ = ["NestedInstances"]


class NestedInstances:
    """The outer instance of the node count under way, and the cells run nested in it."""

    def __init__(self, site: FluxSite) -> None:
        self.site = site
        self.outer: OuterInstance | None = None

    def run(self, cell: Cell, folder: Path, entrypoint: Path, timeout: float | None) -> RunResult:
        """Run the cell as a nested instance in the outer instance of its node count."""
        try:
            outer = self._outer_for(cell.nodes)
            env = flux_env(os.environ)
            env["FLUX_URI"] = outer.uri
            # Rank 0's disk keeps each size's blob for the node count's later cells.
            env["KARY_BLOB_CACHE"] = str(outer.folder / "blobs")
            # Every rank of the outer instance runs here: the cell ends at its exit status.
            result = run_in_allocation(
                self.site, cell, folder, entrypoint, timeout, env, cell.nodes, on_this_machine=True
            )
        except BaseException:
            # Ctrl-C (or a broken outer): nothing of the sweep outlives the cell.
            self.stop()
            raise
        result.provenance["nested_in"] = outer.record()
        outer.cells += 1
        return result

    def stop(self) -> None:
        """Stop the outer instance, if one runs; BackendError if its processes survive."""
        outer, self.outer = self.outer, None
        if outer is None:
            return
        left = outer.stop()
        shutil.rmtree(outer.folder, ignore_errors=True)
        if left:
            raise BackendError(f"flux processes of the outer instance survived: {left}")

    def _outer_for(self, nodes: int) -> OuterInstance:
        """The running outer instance of `nodes` brokers, started (and the last one
        stopped) when the node count changes or it died."""
        if self.outer is not None and (self.outer.nodes != nodes or not self.outer.running):
            self.stop()
        if self.outer is None:
            folder = Path(tempfile.mkdtemp(prefix="kary-outer-", dir=self.site.scratch_base()))
            outer = OuterInstance(self.site.flux, nodes, folder, flux_env(os.environ))
            try:
                outer.start()
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            self.outer = outer
        return self.outer
