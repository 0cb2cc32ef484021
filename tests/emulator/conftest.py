"""Fixtures for emulator tests: a short scratch folder and a live six-broker instance."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from emulator_helpers import Instance, running_instance, short_folder


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A short folder (unix socket paths are limited to ~107 bytes)."""
    with short_folder() as folder:
        yield folder


@pytest.fixture(scope="module")
def instance() -> Iterator[Instance]:
    """Six brokers under kary:2, running `sleep` as rank 0: talk to them with `flux`."""
    with running_instance(6, "kary:2") as inst:
        yield inst
