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

from experiments.lazy import lazy_exports

TYPE_CHECKING = False  # not typing's: see experiments/__init__.py
if TYPE_CHECKING:
    from experiments.backends.flux.allocation import allocation_facts
    from experiments.backends.flux.backend import FluxBackend
    from experiments.backends.flux.site import flux_version, query_flux

# The facts `up()` asks of this Flux, exported so `kary plan` asks them too
# (experiments/machine_probes.py).
__all__ = ["FluxBackend", "allocation_facts", "flux_version", "query_flux"]

# Lazily: `python -m experiments.backends.flux.session_guard` imports this package first.
__getattr__ = lazy_exports(
    __name__,
    {
        "FluxBackend": "experiments.backends.flux.backend",
        "allocation_facts": "experiments.backends.flux.allocation",
        "flux_version": "experiments.backends.flux.site",
        "query_flux": "experiments.backends.flux.site",
    },
)
