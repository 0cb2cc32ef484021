"""Real flux-core for the tests that need it.

`flux` must be on PATH (CI puts the build from ../shared/tools/build-flux-core
there).  Without it these tests are skipped, except under CI=true, where a
missing flux-core is a failure: CI must never pass by not testing real Flux.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from unavailable import unavailable


@pytest.fixture(scope="session")
def flux() -> str:
    path = shutil.which("flux")
    if path is None:
        unavailable("flux-core's `flux` is not on PATH (see docs/running.md, 'Real Flux')")
    return path


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A short, unique TMPDIR: Flux's socket paths must stay short, and every broker
    started under it carries its path in its environment, so a test can find them."""
    folder = Path(tempfile.mkdtemp(prefix="kf-", dir="/tmp"))
    try:
        yield folder
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)
