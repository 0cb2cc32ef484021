"""The flux backend: cells on real flux-core, in a test instance, an allocation or a box.

- `backend`: FluxBackend: which flux, which place, and each cell to its place;
- `site`: what `up()` found (the flux, its version, place and layout), and the
  pieces every place uses;
- one module per place: `test_instance`, `allocation`, `box`; and `nested`
  (one outer instance per node count) over `outer_instance`;
- `session_guard`: the program every instance kary starts runs under, so no
  broker outlives a cell, a Ctrl-C or kary itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from experiments.lazy import lazy_exports

if TYPE_CHECKING:
    from experiments.backends.flux.backend import FluxBackend

__all__ = ["FluxBackend"]

# Lazily: `python -m experiments.backends.flux.session_guard` imports this package first.
__getattr__ = lazy_exports(__name__, {"FluxBackend": "experiments.backends.flux.backend"})
