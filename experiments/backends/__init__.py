"""Backends by name: where a rendered cell runs (see `base.Backend` for the contract).

One package per backend, each exporting its Backend class:

- `flux` (flux/): real flux-core, in a test instance, an allocation or a box;
- `local` (emulator/): kary's emulated Flux on this machine;
- `kubernetes` (kubernetes/): Flux Operator MiniClusters on a cluster.

`make_backend(name, settings)` builds one from settings the plan has already
checked (model/sweep_check.py).  A backend's package is imported only when it
is asked for, so a missing cloud client never breaks a local run; backends
never import each other (pyproject's import contracts).  The names, and which
are billed, are the model's (model/places.py).
"""

from __future__ import annotations

import importlib

from experiments.lazy import lazy_exports

TYPE_CHECKING = False  # not typing's: see experiments/__init__.py
if TYPE_CHECKING:
    from experiments.backends.base import (
        Backend,
        BackendError,
        BackendSettings,
        QueuedCell,
        RunResult,
    )
    from experiments.model.places import BACKENDS

__all__ = [
    "BACKENDS",
    "Backend",
    "BackendError",
    "BackendSettings",
    "QueuedCell",
    "RunResult",
    "backend_class",
    "make_backend",
]

# Lazily: the session guard kary starts once a cell (`python -m
# experiments.backends.flux.session_guard`) imports this package first, and base.py
# and model/places.py load pydantic (0.17 s -> 0.04 s of imports a start).
__getattr__ = lazy_exports(
    __name__,
    {
        "BACKENDS": "experiments.model.places",
        "Backend": "experiments.backends.base",
        "BackendError": "experiments.backends.base",
        "BackendSettings": "experiments.backends.base",
        "QueuedCell": "experiments.backends.base",
        "RunResult": "experiments.backends.base",
    },
)

# name -> "package:Class"; every name in model.places.BACKENDS has one.
_REGISTRY: dict[str, str] = {
    "flux": "experiments.backends.flux:FluxBackend",
    "local": "experiments.backends.emulator:EmulatorBackend",
    "kubernetes": "experiments.backends.kubernetes:KubernetesBackend",
}


def backend_class(name: str) -> type[Backend]:
    """The Backend class of backend `name`; a UserError lists the valid names."""
    from experiments.model.places import check_backend_name

    module_name, _, class_name = _REGISTRY[check_backend_name(name)].partition(":")
    cls: type[Backend] = getattr(importlib.import_module(module_name), class_name)
    return cls


def make_backend(name: str, settings: BackendSettings | None = None) -> Backend:
    """The backend called `name`, configured from `settings`."""
    from experiments.backends.base import BackendSettings

    return backend_class(name).from_settings(settings or BackendSettings())
