"""Backends by name: where a rendered cell runs (see `base.Backend` for the contract).

Modules are imported only when their backend is asked for, so a missing cloud
client never breaks a local run.
"""

from __future__ import annotations

import importlib

from experiments.backends.base import Backend, BackendError, BackendSettings, RunResult
from experiments.errors import UserError
from experiments.formats.run_record import ALLOCATION, BOX

__all__ = [
    "BACKENDS",
    "UNBILLED",
    "Backend",
    "BackendError",
    "BackendSettings",
    "RunResult",
    "backend_class",
    "check_backend_name",
    "default_backend",
    "describe_backend",
    "make_backend",
]

# name -> "module:Class".  The local default is `default_backend()`.
_REGISTRY: dict[str, str] = {
    "flux": "experiments.backends.flux.backend:FluxBackend",
    "local": "experiments.backends.emulator.backend:EmulatorBackend",
    "kubernetes": "experiments.backends.kubernetes.backend:KubernetesBackend",
}
BACKENDS: tuple[str, ...] = tuple(_REGISTRY)
# Backends kary never bills: they run where kary runs (this machine, or the Flux
# allocation kary was started in, whose site does its own accounting).
UNBILLED: tuple[str, ...] = ("local", "flux")


def default_backend() -> str:
    """Real Flux when flux-core's `flux` is on PATH, otherwise the emulator ("local")."""
    from experiments.backends.flux.backend import flux_on_path

    return "flux" if flux_on_path() else "local"


def describe_backend(name: str, place: str | None = None) -> str:
    """Where cells of backend `name` run (flux: at `place`), in words for the plan and run line."""
    if name == "local":
        return "emulated Flux on this machine"
    if name == "flux":
        from experiments.backends.flux.backend import current_place

        if place == BOX:
            return (
                "real Flux in a box on this machine (a network namespace per broker, shaped links)"
            )
        if (place or current_place()) == ALLOCATION:
            return "real Flux, nested in this Flux allocation"
        return "real Flux (flux start --test-size) on this machine"
    return name


def check_backend_name(name: str) -> str:
    """`name` if it is a known backend; otherwise a UserError listing the valid ones."""
    if name not in _REGISTRY:
        raise UserError(f"unknown backend {name!r}: choose from {', '.join(BACKENDS)}")
    return name


def backend_class(name: str) -> type[Backend]:
    module_name, _, class_name = _REGISTRY[check_backend_name(name)].partition(":")
    cls: type[Backend] = getattr(importlib.import_module(module_name), class_name)
    return cls


def make_backend(name: str, settings: BackendSettings | None = None) -> Backend:
    """The backend called `name`, configured from `settings`."""
    return backend_class(name).from_settings(settings or BackendSettings())
