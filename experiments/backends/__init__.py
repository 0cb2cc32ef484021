"""Backends by name: where a rendered cell runs (see `base.Backend` for the contract).

Modules are imported only when their backend is asked for, so a missing cloud
client never breaks a local run.
"""

from __future__ import annotations

import importlib

from experiments.backends.base import Backend, BackendError, BackendSettings, RunResult
from experiments.errors import UserError

__all__ = [
    "BACKENDS",
    "Backend",
    "BackendError",
    "BackendSettings",
    "RunResult",
    "backend_class",
    "check_backend_name",
    "make_backend",
]

# name -> "module:Class"; the first is the default.
_REGISTRY: dict[str, str] = {
    "local": "experiments.backends.local:LocalBackend",
    "kubernetes": "experiments.backends.kubernetes:KubernetesBackend",
}
BACKENDS: tuple[str, ...] = tuple(_REGISTRY)


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
