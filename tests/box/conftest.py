"""What the box tests need: real flux-core and the right to build namespaces.

CI runs as root with flux-core built, so there a box that cannot start fails
the test (unavailable() under CI=true); elsewhere it skips, saying why.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from unavailable import unavailable

from experiments.errors import UserError

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The cleanup tests run `alone` under pytest -n (tests/conftest.py): they find a
    box's processes by name in /proc and reap dead runs' boxes machine-wide, so another
    box beside them would be counted or touched.  The other box tests share the machine:
    a cell's time is held only to its links' floor from below, which no load breaks
    (docs/box.md), and whether a cell is CPU-bound is the model's call, not a measure."""
    for item in items:
        if item.path.resolve() == HERE / "test_box_cleanup.py":
            item.add_marker(pytest.mark.alone)


@pytest.fixture(scope="session")
def box_flux() -> str:
    """The `flux` on PATH, once this machine is known to build a box with shaped links."""
    flux = shutil.which("flux")
    if flux is None:
        unavailable("flux-core's `flux` is not on PATH (see docs/running.md, 'Real Flux')")
    from experiments.box.privileges import box_command_prefix

    try:
        box_command_prefix(bandwidth=True, latency=False)
    except UserError as err:
        unavailable(f"no box here: {err}")
    return flux


@pytest.fixture
def box_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """An environment whose TMPDIR is short and fresh (the box's scratch goes there)."""
    scratch = Path(tempfile.mkdtemp(prefix="kbx-", dir="/tmp"))
    try:
        yield dict(os.environ, TMPDIR=str(scratch))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
