"""kary: plan and run k-ary data-distribution benchmarks of the Flux Framework.

The Python API (see experiments/api.py and the README):

    from experiments import Sweep, plan, run

`Sweep`, `plan`, `run`, `PlannedSweep` and `RunSummary` load on first use, so
that importing a submodule (the emulator's `flux` runs as a program, many
times per cell) does not pay for the whole library.
"""

from __future__ import annotations

from experiments.lazy import lazy_exports

# typing is not imported for this: the emulator's `flux` imports this package on
# every call, and typing alone is about a third of what such a call loads.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from experiments.api import plan, run
    from experiments.execution.summary import RunSummary
    from experiments.model.sweep import Sweep
    from experiments.planned import PlannedSweep
    from experiments.version import __version__

__all__ = ["PlannedSweep", "RunSummary", "Sweep", "__version__", "plan", "run"]

__getattr__ = lazy_exports(
    __name__,
    {
        "PlannedSweep": "experiments.planned",
        "Sweep": "experiments.model.sweep",
        "plan": "experiments.api",
        "run": "experiments.api",
        "RunSummary": "experiments.execution.summary",
        # version.py imports subprocess and pathlib (it asks git for the commit).
        "__version__": "experiments.version",
    },
)
