"""Fixtures for plan tests that state the machine they plan on."""

from __future__ import annotations

import pytest

import experiments.api
from experiments.model.places import Here


@pytest.fixture
def flux_box_here(monkeypatch: pytest.MonkeyPatch) -> Here:
    """A machine with flux-core on PATH that can build any box, whatever this one has: the
    plan asks its probes nothing (a box plan otherwise probes this machine, issue 36)."""
    here = Here(flux="/opt/flux/bin/flux", in_allocation=False)
    monkeypatch.setattr(experiments.api, "here_now", lambda: here)
    return here
