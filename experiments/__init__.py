"""kary: plan and run k-ary data-distribution benchmarks of the Flux Framework.

The Python API (see experiments/api.py and the README):

    from experiments import Sweep, plan, run

`Sweep`, `plan`, `run`, `PlannedSweep` and `RunSummary` load on first use, so
that importing a submodule (the emulator's `flux` runs as a program, many
times per cell) does not pay for the whole library.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from experiments.version import __version__

if TYPE_CHECKING:
    from experiments.api import PlannedSweep, plan, run
    from experiments.execution.summary import RunSummary
    from experiments.sweep import Sweep

__all__ = ["PlannedSweep", "RunSummary", "Sweep", "__version__", "plan", "run"]

_LAZY = {
    "PlannedSweep": "experiments.api",
    "Sweep": "experiments.sweep",
    "plan": "experiments.api",
    "run": "experiments.api",
    "RunSummary": "experiments.execution.summary",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'experiments' has no attribute {name!r}")
