"""What a test does when something it needs is not on this machine.

Elsewhere it skips with the reason.  Under CI=true it fails: CI installs real
flux-core, chromium and the ../shared reference data, so a missing one means
the run would pass by not testing, and that must not land.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

__all__ = ["in_ci", "unavailable"]


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def unavailable(reason: str) -> NoReturn:
    """Skip with `reason`, or fail with it under CI=true."""
    if in_ci():
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)
