"""Cells whose pods cannot run fail in seconds, not after the cell's timeout; what a real
operator does (rank 0 always exits 0, names reused, ranks packed) cannot pass for a timing."""

from __future__ import annotations

import functools
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from fake_apiserver import PINNED_VIEW, Scenario
from fast_backend import ONE_STEP_LOG, fast_backend
from typer.testing import CliRunner

from experiments.backends.kubernetes.api import RetryPolicy
from experiments.backends.kubernetes.minicluster import unique_name
from experiments.backends.kubernetes.pod_watch import PodWatch, StartLimits
from experiments.cli import app
from experiments.estimate.defaults import image_pull, pending_bound
from experiments.execution.outcome import judge
from experiments.formats.labels import current_owner
from experiments.model.render import SEED_IMAGE

QUICK = StartLimits(pending_s=0.4, join_s=0.4, check_every_s=0.05)


def _gone(server: Any) -> bool:
    """No MiniCluster and no pod of any cell is left."""
    cluster = server.cluster
    return not cluster.miniclusters and all(cluster.pods("default", n) == [] for n in cluster.runs)


@pytest.mark.parametrize(
    ("waiting", "phrase"),
    [
        ("ImagePullBackOff", "is ImagePullBackOff: injected ImagePullBackOff"),
        ("CrashLoopBackOff", "is CrashLoopBackOff: injected CrashLoopBackOff"),
        ("CreateContainerConfigError", "is CreateContainerConfigError"),
    ],
)
def test_a_container_that_cannot_start_fails_the_cell_at_once(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any, waiting: str, phrase: str
) -> None:
    apiserver.cluster.scenario = Scenario(outcome="never", waiting=waiting, log="")
    with make_backend(start_limits=QUICK) as backend:
        result = backend.run(cell, rendered, 600)
    # Not timed out: the start failure ended it, not the cell's 600 s.
    assert (result.rc, result.timed_out, result.start_failure) == (None, False, waiting)
    assert result.error.startswith("pod flux-sample-0-x0z (rank 0) cannot start: container ")
    assert phrase in result.error
    assert result.provenance["start_failure"] == waiting
    assert result.provenance["diagnostics"]["pods"][0]["containers"] == {
        "flux-sample": f"waiting ({waiting}: injected {waiting})"
    }
    assert judge(result).state == "failed"
    assert _gone(apiserver)


def test_pods_pending_past_the_deadline_fail_the_cell_with_the_schedulers_reason(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    apiserver.cluster.scenario = Scenario(outcome="never", unschedulable=True, log="")
    started = time.monotonic()
    with make_backend(start_limits=QUICK) as backend:
        result = backend.run(cell, rendered, 600)
    assert 0.4 <= time.monotonic() - started < 5
    assert result.start_failure == "Pending"
    assert result.error == (
        "4 of 4 pods of MiniCluster flux-sample still Pending 0.4 s after it was created "
        "(flux-sample-0-x0z: 0/2 nodes are available: 2 Insufficient cpu.)"
    )
    assert _gone(apiserver)


def test_brokers_that_never_join_fail_the_cell(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    # Every pod runs; rank 0's broker waits for the others and never starts the entrypoint.
    apiserver.cluster.scenario = Scenario(outcome="never", log="broker: quorum not reached\n")
    with make_backend(start_limits=QUICK) as backend:
        result = backend.run(cell, rendered, 600)
    assert result.start_failure == "brokers-never-joined"
    assert result.error == (
        "all 4 pods of MiniCluster flux-sample ran for 0.4 s and rank 0 never started the "
        "benchmark: some broker never joined (see the pods' logs)"
    )
    assert result.log == "broker: quorum not reached\n"
    assert _gone(apiserver)


def test_a_benchmark_that_started_is_left_to_run_past_the_join_deadline(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    apiserver.cluster.scenario = Scenario(run_s=1.2)  # its log has the cell line from the start
    with make_backend(start_limits=QUICK) as backend:
        result = backend.run(cell, rendered, 30)
    assert (result.rc, result.error, result.start_failure) == (0, None, None)


def test_ranks_on_one_node_are_failed_not_timed(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    # A watch window is at least 1 s: the Job runs longer, so the pods are looked at first.
    apiserver.cluster.scenario = Scenario(pack=2, run_s=2.5)
    with make_backend(start_limits=QUICK) as backend:
        result = backend.run(cell, rendered, 30)
    assert result.start_failure == "ranks-share-nodes"
    assert result.error == (
        "ranks 0, 2 of MiniCluster flux-sample landed on one node (node-0): a cell on shared "
        "nodes times memory, not the network between nodes; give the cluster a node per rank "
        "or pass --allow-shared-nodes"
    )
    assert judge(result).state == "failed"


def test_ranks_that_share_a_node_after_a_quick_job_are_still_not_timed(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    # The Job finishes before the pods' watch looks: the collected result is checked too.
    apiserver.cluster.scenario = Scenario(pack=1)
    with make_backend(start_limits=StartLimits(check_every_s=1000)) as backend:
        result = backend.run(cell, rendered, 30)
    assert result.error == (
        "ranks 0, 1, 2, 3 of MiniCluster flux-sample landed on one node (node-0): a cell on "
        "shared nodes times memory, not the network between nodes; give the cluster a node "
        "per rank or pass --allow-shared-nodes"
    )
    assert result.provenance["nodes_used"] == 1
    assert judge(result).state == "failed"


def test_shared_nodes_when_allowed_are_timed_and_recorded(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    apiserver.cluster.scenario = Scenario(pack=2, run_s=0.5)
    allowed = StartLimits(check_every_s=0.05, allow_shared_nodes=True)
    with make_backend(start_limits=allowed) as backend:
        result = backend.run(cell, rendered, 30)
    assert (result.rc, result.error) == (0, None)
    assert result.provenance["shared_nodes_allowed"] is True
    assert result.provenance["shared_nodes"] == {"node-0": [0, 2], "node-1": [1, 3]}


def test_the_exit_status_is_the_logs_not_the_operators_container(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    # Under the operator rank 0's container exits 0 (the fake's default) whatever the
    # entrypoint did: the done line's counts are what tell.
    failing = 'KARY {"meta": "cell", "cell": "{cell}"}\nKARY {"meta": "done", "failed_steps": 1}\n'
    unfinished = 'KARY {"meta": "cell", "cell": "{cell}"}\n'
    voided = (
        'KARY {"meta": "cell", "cell": "{cell}"}\n'
        'KARY {"meta": "done", "failed_steps": 0, "failed_preconditions": 1}\n'
    )
    with make_backend() as backend:
        rcs = []
        for log in (failing, unfinished, voided):
            apiserver.cluster.scenario = Scenario(log=log)
            result = backend.run(cell, rendered, 30)
            rcs.append((result.rc, result.provenance["container_exit_code"]))
    assert rcs == [(1, 0), (None, 0), (1, 0)]


def test_a_log_of_another_cell_is_not_taken_for_this_one(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    apiserver.cluster.scenario = Scenario(
        log=(
            'KARY {"meta": "cell", "cell": "4/kary-1/0"}\n'
            'KARY {"meta": "done", "failed_steps": 0}\n'
        )
    )
    with make_backend() as backend:
        result = backend.run(cell, rendered, 30)
    assert result.error == (
        "rank 0's log is of cell 4/kary-1/0, not 4/kary-2/0: MiniCluster flux-sample ran "
        "another cell's script"
    )
    assert judge(result).state == "failed"


def test_every_cell_has_a_minicluster_name_of_its_own(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    # The backend as `kary run` makes it: a fresh suffix per cell, so a lagging garbage
    # collector's ConfigMap or Job of an earlier cell is never taken for this one's.
    with make_backend(name_cell=unique_name) as b:
        first = b.run(cell, rendered, 30)
        second = b.run(cell, rendered, 30)
    names = [first.provenance["minicluster"], second.provenance["minicluster"]]
    assert all(re.fullmatch(r"flux-sample-[0-9a-f]{8}", n) for n in names), names
    assert names[0] != names[1]
    assert [c["metadata"]["name"] for c in apiserver.cluster.created] == names
    assert (first.error, second.error) == (None, None)
    assert _gone(apiserver)


def test_leftovers_of_an_interrupted_run_are_removed_when_the_backend_comes_up(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    cluster = apiserver.cluster
    mine = {"app.kubernetes.io/managed-by": "kary", "kary/owner": current_owner()}
    for name, labels in (
        ("flux-sample-0badcafe", mine),
        ("flux-sample-1badcafe", {**mine, "kary/owner": "someone-else"}),
        ("their-cluster", {"team": "hpc"}),
    ):
        cluster.miniclusters[name] = {"metadata": {"name": name, "labels": labels}}
    with make_backend() as backend:
        result = backend.run(cell, rendered, 30)
    assert result.provenance["reaped_leftovers"] == ["flux-sample-0badcafe"]
    assert sorted(cluster.miniclusters) == ["flux-sample-1badcafe", "their-cluster"]


def test_a_sweep_stops_after_the_same_start_failure_twice(
    apiserver: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = functools.partial(RetryPolicy, backoff_s=0.01, max_backoff_s=0.05)
    monkeypatch.setattr("experiments.backends.kubernetes.backend.RetryPolicy", fast)
    monkeypatch.setattr(
        "experiments.backends.kubernetes.backend.StartLimits",
        functools.partial(StartLimits, check_every_s=0.05),
    )
    apiserver.cluster.scenario = Scenario(outcome="never", waiting="ImagePullBackOff", log="")
    raw = tmp_path / "raw"
    started = time.monotonic()
    result = CliRunner().invoke(
        app,
        [
            "run", "--backend", "kubernetes", "--exact-nodes", "4", "--topo", "kary:1",
            "--topo", "kary:2", "--topo", "kary:3", "--sizes", "1M", "--data-dir", str(raw),
            "--yes", "--no-smoke",  # the runner's own rule, not the smoke cell's
            "--flux-view", PINNED_VIEW,
        ],
    )  # fmt: skip
    assert time.monotonic() - started < 30
    assert result.exit_code == 1, result.output
    assert (
        "stopped: two cells in a row could not start (ImagePullBackOff); the last: "
        "4/kary-2/0: fix that before running more cells"
    ) in result.output
    records = sorted(raw.glob("**/run.json"))
    assert len(records) == 2  # the third cell never started, so it was never paid for
    states = {json.loads(p.read_text())["start_failure"] for p in records}
    assert states == {"ImagePullBackOff"}
    assert len(apiserver.cluster.created) == 2
    assert _gone(apiserver)


def _pod_watch_clock(monkeypatch: pytest.MonkeyPatch, speedup: float) -> None:
    """The pods' watch sees time pass `speedup` times faster: a pull of seconds reads as
    minutes, so a bound of hundreds of seconds is played in seconds.  The watch looks
    about once a second (the Job watch's shortest window)."""
    fast = functools.partial(PodWatch, clock=lambda: time.monotonic() * speedup)
    monkeypatch.setattr("experiments.backends.kubernetes.nested_making.PodWatch", fast)
    monkeypatch.setattr("experiments.backends.kubernetes.per_cell.PodWatch", fast)


def _run_seed_image(raw: Path, *flags: str) -> Any:
    return CliRunner().invoke(
        app,
        [
            "run", "--backend", "kubernetes", "--exact-nodes", "4", "--topo", "kary:2",
            "--sizes", "1M", "--image", SEED_IMAGE, "--data-dir", str(raw), "--yes",
            "--no-smoke", *flags,
        ],
    )  # fmt: skip


def test_pods_pending_while_a_long_image_pull_runs_do_not_fail_the_cell(
    apiserver: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # flux-distribute's image: 55 GB, about 1200 s to pull; its pods Pending 900 watched
    # seconds (past the 600 s any pod used to get) end within the bound the pull sets
    # (600 s + 2 x 1200 s).
    fast_backend(monkeypatch)
    _pod_watch_clock(monkeypatch, 250.0)
    apiserver.cluster.scenario = Scenario(pulling_s=3.6, log=ONE_STEP_LOG)
    result = _run_seed_image(tmp_path / "raw")
    assert result.exit_code == 0, result.output
    (record,) = (tmp_path / "raw").glob("**/run.json")
    assert json.loads(record.read_text())["state"] == "succeeded"
    assert pending_bound(image_pull(SEED_IMAGE).seconds) == 3000.0


def test_pending_timeout_overrides_the_bound_the_image_pull_sets(
    apiserver: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast_backend(monkeypatch)
    _pod_watch_clock(monkeypatch, 250.0)
    apiserver.cluster.scenario = Scenario(pulling_s=3.6, log=ONE_STEP_LOG)
    result = _run_seed_image(tmp_path / "raw", "--pending-timeout", "300")
    assert result.exit_code == 1, result.output
    (record,) = (tmp_path / "raw").glob("**/run.json")
    run = json.loads(record.read_text())
    assert (run["state"], run["start_failure"]) == ("failed", "Pending")
    assert (
        "still Pending 300 s after it was created; if its image pull is that slow, "
        "--pending-timeout SECONDS waits longer" in run["error"]
    )


@pytest.mark.parametrize("seconds", ["0", "-5"])
def test_a_pending_timeout_not_above_zero_is_a_one_line_error(seconds: str) -> None:
    result = CliRunner().invoke(
        app, ["run", "--dry-run", "--exact-nodes", "4", "--pending-timeout", seconds]
    )
    assert result.exit_code == 2
    assert f"invalid --pending-timeout {float(seconds):g}: must be > 0 seconds" in result.output
    assert "Traceback" not in result.output


def test_a_per_cell_limit_counts_from_when_the_pods_run_not_through_the_pull(
    apiserver: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A 2 s cell limit, pods Pending 3 s pulling the image: the limit starts once they run.
    fast_backend(monkeypatch)
    apiserver.cluster.scenario = Scenario(pulling_s=3.0, log=ONE_STEP_LOG)
    result = _run_seed_image(tmp_path / "raw", "--layout", "per-cell", "--timeout", "2")
    assert result.exit_code == 0, result.output
    (record,) = (tmp_path / "raw").glob("**/run.json")
    assert json.loads(record.read_text())["state"] == "succeeded"


def test_a_per_cell_limit_still_ends_a_cell_that_hangs_once_its_pods_run(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    apiserver.cluster.scenario = Scenario(outcome="never", pulling_s=0.5, log=ONE_STEP_LOG)
    with make_backend(start_limits=StartLimits(check_every_s=0.05)) as backend:
        result = backend.run(cell, rendered, 1)
    assert (result.timed_out, result.start_failure) == (True, None)
    assert judge(result).state == "timeout"
