"""The scripts under benchmarks/ as modules for a test: loaded from their files, fresh
each call (a test may change a module's globals without touching the next test's)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """benchmarks/<name>.py, executed as a new module named `name`."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered while it runs: a dataclass with string annotations looks its module up.
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
