"""On the emulator: a failed precondition voids what it guards (see void_checks)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from void_checks import CHECKS


@pytest.mark.parametrize("check", list(CHECKS.values()), ids=list(CHECKS))
def test_a_failed_precondition_voids_what_it_guards(
    check: Callable[[str, Path], None], short_tmp: Path
) -> None:
    check("local", short_tmp)
