"""Names a package exports, imported from their modules on first use (PEP 562).

A package's `__init__` names what it exports without importing it: importing
`experiments` (which the emulator's `flux` command does on every call) or
running `python -m experiments.backends.flux.session_guard` must not load the
whole library.  The package also imports the names under TYPE_CHECKING, so
type checkers see them.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing itself is not imported: see experiments/__init__.py
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` that imports each exported name from its module
    (`exports`: name -> module) the first time it is asked for."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__
