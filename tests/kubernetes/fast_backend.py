"""The kubernetes backend's waits made short, for tests against the fake API server.

Retries back off 10-50 ms, pods are looked at every 50 ms and rank 0's log read
every 50 ms (not seconds), and with `teardown` a deleted MiniCluster's pods are
looked for every 50 ms: a fault is seen at once, so each test takes seconds.
"""

from __future__ import annotations

import functools

import pytest

from experiments.backends.kubernetes.api import RetryPolicy
from experiments.backends.kubernetes.minicluster import Teardown
from experiments.backends.kubernetes.pod_watch import StartLimits

__all__ = ["ONE_STEP_LOG", "RACE_LOG", "fast_backend"]

# A cell's log as its entrypoint prints it, one timed step: `{cell}` becomes its id.
ONE_STEP_LOG = (
    'KARY {"meta": "cell", "cell": "{cell}", "flux_version": "0.88.0"}\n'
    'KARY {"event": "distribute-all-nodes", "size": "1M", "size_bytes": 1048576, '
    '"seconds": 1.25, "rc": 0}\n'
    'KARY {"meta": "done", "failed_steps": 0}\n'
)


# A cell's log a race takes as a timing: its distribution went to caches that held no
# blob (the cold-cache line, 4 ranks), after the archive's creation.
RACE_LOG = (
    'KARY {"meta": "cell", "cell": "{cell}", "flux_version": "0.88.0"}\n'
    'KARY {"meta": "cold-cache", "size": "1M", "strategy": "all", '
    '"cached_blobs": {"0": 0, "1": 0, "2": 0, "3": 0}}\n'
    'KARY {"event": "create-archive", "size": "1M", "size_bytes": 1048576, '
    '"seconds": 0.5, "rc": 0}\n'
    'KARY {"event": "distribute-all-nodes", "size": "1M", "size_bytes": 1048576, '
    '"seconds": 1.25, "rc": 0}\n'
    'KARY {"meta": "done", "failed_steps": 0}\n'
)


def fast_backend(monkeypatch: pytest.MonkeyPatch, teardown: bool = False) -> None:
    """Short backoffs, pod looks and log reads (see the module doc)."""
    monkeypatch.setattr(
        "experiments.backends.kubernetes.backend.RetryPolicy",
        functools.partial(RetryPolicy, backoff_s=0.01, max_backoff_s=0.05),
    )
    monkeypatch.setattr(
        "experiments.backends.kubernetes.backend.StartLimits",
        functools.partial(StartLimits, check_every_s=0.05),
    )
    monkeypatch.setattr("experiments.backends.kubernetes.nested.NestedLayout.log_every_s", 0.05)
    if teardown:
        monkeypatch.setattr(
            "experiments.backends.kubernetes.backend.Teardown",
            lambda timeout_s, poll_s, sleep: Teardown(timeout_s, 0.05, sleep),
        )
