"""This machine, probed: the real `Probes` behind the plan's checks (model/places.py).

Each probe asks what a backend asks when `kary run` brings it up, with the
backend's own functions, so `kary plan` refuses what `kary run` would, in the
same words: flux-core's version and the allocation's nodes and hosts
(experiments.backends.flux), a throwaway box with the links' qdiscs
(box/privileges.py), and the free disk under the scratch folder (TMPDIR),
where cells run on this machine extract their blobs.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
from functools import cache

from experiments.model.links import LinkSettings
from experiments.model.places import AllocationSize, FreeDisk, Here

__all__ = ["ProbesHere", "free_bytes", "here_now"]


def here_now() -> Here:
    """This machine as the plan's checks see it, with the real probes."""
    return Here.now(probes=ProbesHere())


def free_bytes(path: str) -> int:
    """The free bytes of the file system that holds `path` (tests replace this)."""
    return shutil.disk_usage(path).free


class ProbesHere:
    """The probes a plan asks this machine (see the module doc)."""

    def check_flux(self, flux: str) -> None:
        _flux_version(flux)

    def check_box(self, links: LinkSettings) -> None:
        from experiments.box.privileges import box_prefix_for

        box_prefix_for(links)

    def allocation(self, flux: str) -> AllocationSize:
        from experiments.backends.flux import allocation_facts, query_flux

        facts = allocation_facts(lambda args, what: query_flux(flux, args, what))
        return AllocationSize(facts.nodes, set(facts.hosts) == {socket.gethostname()})

    def free_disk(self) -> FreeDisk:
        # The flux backend and the emulator both make each cell's folder under it.
        path = tempfile.gettempdir()
        return FreeDisk(path, free_bytes(path))


@cache
def _flux_version(flux: str) -> str:
    """`flux version`, asked once per `flux` a process meets: a binary's version does not
    change while kary runs, and most plans in one process ask the same one."""
    from experiments.backends.flux import flux_version

    return flux_version(flux)
