"""Where cells run: the backends by name, the flux backend's places, and how each is said.

Backends: `flux` (real flux-core), `local` (kary's emulator) and `kubernetes`
(the Flux Operator on a cluster); the registry that builds them is
experiments.backends.  Places, where the flux backend runs a cell (run.json
`place`): a `test-instance` (`flux start --test-size` here), an `allocation`
(nested in the Flux instance kary runs inside, FLUX_URI), or a `box` (a
network namespace per broker here, over shaped links).  `Here` is what the
checks need to know of this machine, read once by `Here.now()`, so the rules
themselves are pure.  What costs a subprocess or a look at a disk (can a box be
built, does the allocation have the nodes, how much disk is free) `Here` asks
its `Probes` only when a plan needs it; experiments/machine_probes.py has the
real ones, and a plain `Here` asks nothing, so a test states the machine it means.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from typing import Protocol

from experiments.errors import UserError
from experiments.formats.run_record import ALLOCATION, BOX, PLACES, TEST_INSTANCE
from experiments.model.links import LinkSettings

__all__ = [
    "ASK_NOTHING",
    "BACKENDS",
    "HOW_TO_GET_FLUX",
    "UNBILLED",
    "AllocationSize",
    "FreeDisk",
    "Here",
    "Probes",
    "check_backend_name",
    "choose_place",
    "default_place",
    "describe_backend",
    "flux_on_path",
]

BACKENDS: tuple[str, ...] = ("flux", "local", "kubernetes")
# Backends kary never bills: they run where kary runs (this machine, or the Flux
# allocation kary was started in, whose site does its own accounting).
UNBILLED: tuple[str, ...] = ("local", "flux")
HOW_TO_GET_FLUX = (
    "put flux-core's `flux` on PATH: your site's install (e.g. `module load flux`), "
    "`spack install flux-core`, your distribution's flux-core package, or build it "
    "from source (see docs/running.md, 'Real Flux')"
)


def flux_on_path() -> str | None:
    """Where `flux` (flux-core) is on PATH, or None."""
    return shutil.which("flux")


@dataclass(frozen=True)
class FreeDisk:
    """The free bytes of the file system that holds `path`."""

    path: str
    free_bytes: int


@dataclass(frozen=True)
class AllocationSize:
    """The Flux allocation kary runs in: its nodes, and whether every one is this machine."""

    nodes: int
    on_this_machine: bool


class Probes(Protocol):
    """What a plan asks of this machine that costs a subprocess or a look at a disk.

    A check raises a one-line UserError saying what is missing."""

    def check_flux(self, flux: str) -> None:
        """`flux` is flux-core's: it answers `flux version` with its version."""

    def check_box(self, links: LinkSettings) -> None:
        """This machine can build a box whose links need what `links` ask (tools, rights,
        the kernel's qdiscs)."""

    def allocation(self, flux: str) -> AllocationSize | None:
        """The allocation kary runs in, as `flux` sees it (None: not asked)."""

    def free_disk(self) -> FreeDisk | None:
        """Where cells run here extract their blobs, and its free bytes (None: not asked)."""


class _AskNothing:
    """Probes that ask nothing: every check passes and nothing is known."""

    def check_flux(self, flux: str) -> None:
        return None

    def check_box(self, links: LinkSettings) -> None:
        return None

    def allocation(self, flux: str) -> AllocationSize | None:
        return None

    def free_disk(self) -> FreeDisk | None:
        return None


ASK_NOTHING: Probes = _AskNothing()


@dataclass(frozen=True)
class Here:
    """What checking a sweep needs to know of this machine (see the module doc)."""

    flux: str | None  # flux-core's `flux` on PATH
    in_allocation: bool  # kary runs inside a Flux instance (FLUX_URI is set)
    # The emulator runs each entrypoint with bash and its ranks as processes (fork, /proc).
    bash: bool = True
    linux: bool = True
    probes: Probes = field(default=ASK_NOTHING, compare=False)

    @classmethod
    def now(cls, probes: Probes = ASK_NOTHING) -> Here:
        return cls(
            flux=flux_on_path(),
            in_allocation=bool(os.environ.get("FLUX_URI")),
            bash=shutil.which("bash") is not None,
            linux=hasattr(os, "fork") and os.path.isdir("/proc"),
            probes=probes,
        )

    @property
    def default_backend(self) -> str:
        """Real Flux when flux-core's `flux` is on PATH, otherwise the emulator ("local")."""
        return "flux" if self.flux else "local"


def check_backend_name(name: str) -> str:
    """`name` if it is a known backend; otherwise a UserError listing the valid ones."""
    if name not in BACKENDS:
        raise UserError(f"unknown backend {name!r}: choose from {', '.join(BACKENDS)}")
    return name


def default_place(*, shaped: bool, in_allocation: bool) -> str:
    """A box where links are shaped, else where kary is: an allocation or a test instance."""
    if shaped:
        return BOX
    return ALLOCATION if in_allocation else TEST_INSTANCE


def choose_place(requested: str | None, *, shaped: bool, in_allocation: bool) -> str:
    """The place a flux cell runs: as asked (checked), else `default_place`."""
    if requested is not None and requested not in PLACES:
        raise UserError(f"unknown place {requested!r}: choose from {', '.join(PLACES)}")
    if shaped and requested not in (None, BOX):
        raise UserError(
            "--link-bandwidth / --link-latency shape the box's links: "
            f"use --place box, not {requested}"
        )
    if requested == ALLOCATION and not in_allocation:
        raise UserError("--place allocation needs a Flux allocation (FLUX_URI is not set)")
    if requested is not None:
        return requested
    return default_place(shaped=shaped, in_allocation=in_allocation)


def describe_backend(name: str, place: str | None = None) -> str:
    """Where cells of backend `name` run (flux: at `place`), in words for the plan and run line."""
    if name == "local":
        return "emulated Flux on this machine"
    if name == "flux":
        if place == BOX:
            return (
                "real Flux in a box on this machine (a network namespace per broker, shaped links)"
            )
        if place == ALLOCATION:
            return "real Flux, nested in this Flux allocation"
        return "real Flux (flux start --test-size) on this machine"
    return name
