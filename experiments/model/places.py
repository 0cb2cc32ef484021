"""Where cells run: the backends by name, the flux backend's places, and how each is said.

Backends: `flux` (real flux-core), `local` (kary's emulator) and `kubernetes`
(the Flux Operator on a cluster); the registry that builds them is
experiments.backends.  Places, where the flux backend runs a cell (run.json
`place`): a `test-instance` (`flux start --test-size` here), an `allocation`
(nested in the Flux instance kary runs inside, FLUX_URI), or a `box` (a
network namespace per broker here, over shaped links).  `Here` is what the
choice needs to know of this machine, read once by `Here.now()`, so the rules
themselves are pure.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from experiments.errors import UserError
from experiments.formats.run_record import ALLOCATION, BOX, PLACES, TEST_INSTANCE

__all__ = [
    "BACKENDS",
    "UNBILLED",
    "Here",
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


def flux_on_path() -> str | None:
    """Where `flux` (flux-core) is on PATH, or None."""
    return shutil.which("flux")


@dataclass(frozen=True)
class Here:
    """What choosing a backend and a place needs to know of this machine."""

    flux: str | None  # flux-core's `flux` on PATH
    in_allocation: bool  # kary runs inside a Flux instance (FLUX_URI is set)

    @classmethod
    def now(cls) -> Here:
        return cls(flux_on_path(), bool(os.environ.get("FLUX_URI")))

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
