"""A nested cell that lost a rank's node (node_lost.py): the ranks its end frame names, the
bounded wait for their replacement pods, and the cell's result, on a fake clock.

The whole path, a node dying under real Flux in pods in a box, is
tests/flux/test_k8s_node_death.py."""

from __future__ import annotations

from typing import Any

import pytest

from experiments.backends.base import RunResult
from experiments.backends.kubernetes import node_lost as node_lost_module
from experiments.backends.kubernetes.api import RetryPolicy
from experiments.backends.kubernetes.context import ClusterContext
from experiments.backends.kubernetes.minicluster import Teardown
from experiments.backends.kubernetes.node_lost import (
    await_replacement,
    lost_ranks,
    node_lost,
)
from experiments.backends.kubernetes.nodes import NodeCatalog
from experiments.backends.kubernetes.pod_watch import StartLimits

NAME = "mc"


def _pod(rank: int, uid: str, phase: str = "Running", ready: bool = True) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"{NAME}-{rank}-{uid}",
            "uid": uid,
            "labels": {"job-name": NAME, "batch.kubernetes.io/job-completion-index": str(rank)},
        },
        "status": {"phase": phase, "containerStatuses": [{"name": NAME, "ready": ready}]},
    }


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _cluster(clock: _Clock) -> ClusterContext:
    return ClusterContext(
        api=None,  # type: ignore[arg-type] - job_pods is replaced below
        namespace="default",
        labels={},
        name_cell=str,
        teardown=Teardown(1.0, 0.1, clock.sleep),
        policy=RetryPolicy(),
        limits=StartLimits(check_every_s=15.0),
        nodes=NodeCatalog(),
        job_start_timeout_s=1.0,
        window_s=1.0,
        sleep=clock.sleep,
    )


def test_the_lost_ranks_are_the_end_frames_list_of_whole_numbers() -> None:
    assert lost_ranks({"rc": 137, "lost_ranks": [3, 2, 2]}) == [2, 3]
    assert lost_ranks({"rc": 0}) == []
    # Odd frames (a string, booleans) say nothing rather than a wrong rank.
    assert lost_ranks({"lost_ranks": "2"}) == [] and lost_ranks({"lost_ranks": [True]}) == []


def test_kary_waits_until_the_lost_rank_has_a_new_ready_pod(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The old pod shows Running for minutes (the unreachable toleration): only a new
    pod of that rank, Running and ready, ends the wait."""
    clock = _Clock()
    listings = iter(
        [
            [_pod(0, "a0"), _pod(2, "a2")],  # the dead node's pod, still Running
            [_pod(0, "a0")],  # evicted; no replacement yet
            [_pod(0, "a0"), _pod(2, "b2", phase="Pending", ready=False)],
            [_pod(0, "a0"), _pod(2, "b2")],
        ]
    )
    monkeypatch.setattr(node_lost_module, "job_pods", lambda api, ns, name: next(listings))
    identity = {0: ("a0", 0), 2: ("a2", 0)}
    waited = await_replacement(_cluster(clock), NAME, identity, [2], 900.0, clock)
    assert waited.back and waited.ranks == [2] and waited.limit_s == 900.0
    assert waited.waited_s == 3 * 15.0  # three looks, 15 s apart, on the fake clock


@pytest.mark.parametrize("stale_last", [True, False])
def test_a_stale_terminating_pod_beside_its_replacement_does_not_hide_it(
    monkeypatch: pytest.MonkeyPatch, stale_last: bool
) -> None:
    """The dead node's pod stays Terminating (no pod of an unreachable node is removed
    until its Node object is) while the Job makes the replacement at once: index 2 lists
    two pods, in either order, and the replacement ends the wait."""
    clock = _Clock()
    stale = _pod(2, "a2")
    stale["metadata"]["deletionTimestamp"] = "2026-12-07T06:00:00Z"
    pods = (
        [_pod(0, "a0"), _pod(2, "b2"), stale]
        if stale_last
        else [_pod(0, "a0"), stale, _pod(2, "b2")]
    )
    monkeypatch.setattr(node_lost_module, "job_pods", lambda api, ns, name: pods)
    waited = await_replacement(
        _cluster(clock), NAME, {0: ("a0", 0), 2: ("a2", 0)}, [2], 900.0, clock
    )
    assert waited.back and waited.waited_s == 0.0


def test_a_replacement_that_never_comes_ends_the_wait_at_its_bound_and_stops_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = _Clock()
    monkeypatch.setattr(node_lost_module, "job_pods", lambda api, ns, name: [_pod(2, "a2")])
    waited = await_replacement(_cluster(clock), NAME, {2: ("a2", 0)}, [2], 60.0, clock)
    assert not waited.back and waited.waited_s == 60.0
    failed = RunResult("", 137, error="the log has no KARY step lines", start_failure="state")
    result = node_lost(failed, NAME, "4/kary-1/0", waited)
    assert result.error is not None and result.error.startswith(
        "rank 2 of MiniCluster mc stopped answering during cell 4/kary-1/0 (node lost"
    )
    # Not a start failure (that would stop a sweep for the wrong reason), never a timing.
    assert result.start_failure is None and result.rc == 137
    assert result.provenance["node_lost"] == {
        "ranks": [2], "limit_s": 60.0, "waited_s": 60.0, "back": False
    }  # fmt: skip
    assert result.stop is not None and "was not Ready 60 s after" in result.stop
