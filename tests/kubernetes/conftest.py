"""A fake API server per test, a kubeconfig pointing at it, and a fast kubernetes backend."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_apiserver import FakeApiServer, FakeCluster, write_kubeconfig

from experiments.backends.kubernetes.api import RetryPolicy
from experiments.backends.kubernetes.backend import KubernetesBackend
from experiments.backends.kubernetes.pod_watch import StartLimits
from experiments.model.plan import Cell
from experiments.model.render import Rendered, RenderOptions, render_cell

FAST = RetryPolicy(retries=2, backoff_s=0.01, max_backoff_s=0.05, request_timeout_s=3.0)


@pytest.fixture
def apiserver() -> Iterator[FakeApiServer]:
    """The fake API server, with $KUBECONFIG (a temp path, see tests/conftest.py) aimed at it."""
    with FakeApiServer(FakeCluster(token="kary-test-token")) as server:
        write_kubeconfig(Path(os.environ["KUBECONFIG"]), server.url)
        yield server


@pytest.fixture
def make_backend() -> Callable[..., KubernetesBackend]:
    """A backend with short timeouts and backoffs, so failure paths take milliseconds."""

    def make(**overrides: Any) -> KubernetesBackend:
        settings: dict[str, Any] = {
            "policy": FAST,
            "poll_s": 0.02,
            "delete_timeout_s": 1.0,
            "watch_window_s": 1.0,
            "job_start_timeout_s": 2.0,
            "labels": {"kary/sweep": "sweep-1"},
            # The rendered name as it is, so a test knows it (by default each cell's
            # MiniCluster gets a random suffix: test_every_cell_has_a_minicluster_name_of_its_own).
            "name_cell": lambda base: base,
            # Pods are looked at on every watch window, not every 15 s.
            "start_limits": StartLimits(check_every_s=0.05),
        }
        settings.update(overrides)
        return KubernetesBackend(**settings)

    return make


@pytest.fixture
def cell() -> Cell:
    return Cell(4, "kary:2", 0, (2**20,), ("all",))


@pytest.fixture
def rendered(cell: Cell) -> Rendered:
    return render_cell(
        cell.nodes,
        cell.topo,
        list(cell.sizes),
        list(cell.strategies),
        cell.id,
        RenderOptions(labels={"kary/owner": "tester"}),
    )
