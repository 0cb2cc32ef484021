"""Fixtures for emulator tests: a short scratch folder and a live six-broker instance."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from emulator_helpers import Instance, start_instance, stop_instance


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A short folder (unix socket paths are limited to ~107 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="kt-", dir="/tmp"))
    try:
        yield folder
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)


@pytest.fixture(scope="module")
def instance() -> Iterator[Instance]:
    """Six brokers under kary:2, running `sleep` as rank 0: talk to them with `flux`."""
    folder = Path(tempfile.mkdtemp(prefix="kt-", dir="/tmp"))
    inst = start_instance(folder / "i", 6, "kary:2")
    try:
        yield inst
    finally:
        stop_instance(inst)
        subprocess.run(["rm", "-rf", str(folder)], check=False)
