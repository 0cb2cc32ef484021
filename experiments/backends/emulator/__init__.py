"""The emulator's backend (`--backend local`): cells on kary's emulated Flux on this machine.

- `backend`: EmulatorBackend: starts experiments.emulator's launcher per cell,
  with the links, faults and CPU costs it is given, and stops all of it after.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from experiments.lazy import lazy_exports

if TYPE_CHECKING:
    from experiments.backends.emulator.backend import EmulatorBackend

__all__ = ["EmulatorBackend"]

# Lazily, as every backend package: the registry imports a backend only when asked for it.
__getattr__ = lazy_exports(__name__, {"EmulatorBackend": "experiments.backends.emulator.backend"})
