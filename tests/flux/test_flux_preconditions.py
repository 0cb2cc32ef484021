"""On real flux-core (a test instance): a failed precondition voids what it guards.

The same checks as on the emulator (tests/emulator/void_checks.py), each
with one real command made to fail by a wrapper first on the entrypoint's PATH.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "emulator"))
from void_checks import CHECKS


@pytest.mark.parametrize("check", list(CHECKS.values()), ids=list(CHECKS))
def test_a_failed_precondition_voids_what_it_guards_on_real_flux(
    check: Callable[[str, Path], None], flux: str, scratch: Path
) -> None:
    check("flux", scratch)
