"""The Kubernetes path on pods that behave like pods: each a node in a box (box_pods.py).

`kary run --backend kubernetes` against the fake API server, whose operator
makes every MiniCluster's pods as a cluster would (a network namespace,
hostname, /tmp disk of its own per pod; brokers bootstrapped over TCP from
the operator's broker config; rank 0's output as the pod log).  Both layouts
run here and parse to ok rows whose overlays are their topologies' trees, and
each fault a real cluster has ends as the README says: the cell failed (or a
start failure) with one line, no timing from it, nothing left on the pods.

CI runs as root with flux-core built: there these tests fail rather than skip.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "kubernetes"))
sys.path.insert(0, str(REPO / "tests" / "emulator"))
from box_log_reads import rotate_once_read, rotate_unread  # noqa: E402
from box_pods import (  # noqa: E402
    CONFIG_ROOT,
    BoxPods,
    PodSettings,
    broker_config,
    start_script,
)
from emulator_helpers import processes_mentioning  # noqa: E402
from fake_apiserver import PINNED_VIEW, FakeApiServer, FakeCluster, write_kubeconfig  # noqa: E402
from template_edits import template_with  # noqa: E402
from unavailable import unavailable  # noqa: E402

from analysis.tables.parsed_dir import load_parsed  # noqa: E402
from analysis.tree import parse_tree  # noqa: E402
from experiments.backends.kubernetes.nested import NestedLayout  # noqa: E402
from experiments.backends.kubernetes.pod_watch import StartLimits  # noqa: E402
from experiments.cli import app  # noqa: E402
from experiments.execution.outcome import overlay_mismatch  # noqa: E402
from experiments.formats.kary_line import kary_records, step_timings  # noqa: E402
from experiments.model.topology import build_tree, overlay_parents  # noqa: E402

TOPOS = ["--topo", "kary:1", "--topo", "kary:2"]
CELLS = ["4/kary-1/0", "4/kary-2/0"]
WAITING = "KARY-TEST-WAITING"  # what a stalled cell prints before it sleeps
RUN = ["run", "--backend", "kubernetes", "--exact-nodes", "4", "--no-smoke"]
RUN += ["--flux-view", PINNED_VIEW]  # a billed run's view, by digest (model/pins.py)


@pytest.fixture(scope="module")
def pods_flux() -> str:
    """flux-core, once this machine can make namespaces (root, unshare, ip)."""
    flux = subprocess.run(["which", "flux"], capture_output=True, text=True).stdout.strip()
    if not flux:
        unavailable("flux-core's `flux` is not on PATH (see docs/running.md, 'Real Flux')")
    probe = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", "--net", "--mount", "--uts", "true"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0 or os.geteuid() != 0:
        unavailable(f"pods in a box need root and namespaces: {probe.stderr.strip()}")
    return flux


@pytest.fixture
def make_cluster(
    pods_flux: str, scratch: Path, fast_looks: None
) -> Iterator[Callable[..., FakeApiServer]]:
    servers: list[FakeApiServer] = []

    def make(**settings: Any) -> FakeApiServer:
        cluster = FakeCluster(
            token="kary-test-token", flux=pods_flux, pod_settings=PodSettings(**settings)
        )
        server = FakeApiServer(cluster).__enter__()
        servers.append(server)
        write_kubeconfig(scratch / "kubeconfig", server.url)
        return server

    yield make
    for server in servers:
        left = server.cluster.stop_all()
        server.__exit__(None, None, None)
        assert left == []
    # This test's pods only (their kpb- folders): not those of a test beside it (pytest -n).
    folders = [f.name for server in servers for f in server.cluster.pod_folders]
    assert not [p for f in folders for p in processes_mentioning(f) if "flux" in p]


@pytest.fixture
def fast_looks(monkeypatch: pytest.MonkeyPatch, scratch: Path) -> None:
    """kary in this process, looking at pods and rank 0's log every 0.05 s / 0.5 s (not
    15 s / 10 s): a fault is seen at once, so each test takes seconds, not minutes."""
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setenv("KUBECONFIG", str(scratch / "kubeconfig"))
    monkeypatch.delenv("FLUX_URI", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setattr(
        "experiments.backends.kubernetes.backend.StartLimits",
        functools.partial(StartLimits, check_every_s=0.05),
    )

    # The backend hands the layout its own log_every_s (10 s): the class default alone
    # would not reach it, and a test's faults would race kary's 10 s looks.
    def layout(*args: Any, **kwargs: Any) -> NestedLayout:
        return NestedLayout(*args, **{**kwargs, "log_every_s": 0.5})

    monkeypatch.setattr("experiments.backends.kubernetes.backend.NestedLayout", layout)


def _kary(*args: str, fault: Callable[[], None] | None = None) -> tuple[int, str]:
    """`kary run` on the fake cluster (its exit status and output); `fault`, if given,
    runs beside it (it waits for its moment itself)."""
    errors: list[BaseException] = []

    def inject() -> None:
        try:
            assert fault is not None
            fault()
        except BaseException as err:  # reported by the test, not lost in the thread
            errors.append(err)

    side = threading.Thread(target=inject, daemon=True) if fault else None
    if side is not None:
        side.start()
    result = CliRunner().invoke(
        app,
        [*RUN, *args, "--yes"],
    )
    if side is not None:
        side.join(timeout=60)
    assert not errors, errors
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


def _record(data: Path, cell: str) -> dict[str, Any]:
    record: dict[str, Any] = json.loads((data / cell / "run.json").read_text())
    return record


def _box(server: FakeApiServer, index: int = -1, timeout: float = 120) -> BoxPods:
    """The pods of the `index`th MiniCluster made (waiting for it to exist)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = list(server.cluster.runs.values())
        if runs and len(runs) > (index if index >= 0 else 0):
            pods = runs[index].get("pods")
            if isinstance(pods, BoxPods):
                return pods
        time.sleep(0.1)
    raise AssertionError("no MiniCluster was made")


def _wait_for(box: BoxPods, text: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while text not in box.log:
        assert time.monotonic() < deadline, f"{text!r} never came; log: {box.log[-1500:]}"
        time.sleep(0.1)


@pytest.mark.parametrize("layout", ["nested", "per-cell"])
def test_both_layouts_run_on_pods_in_a_box_and_parse_to_ok_rows(
    make_cluster: Callable[..., FakeApiServer], scratch: Path, layout: str
) -> None:
    server = make_cluster()
    data = scratch / "raw"
    rc, said = _kary(*TOPOS, "--sizes", "1M,2M", "--layout", layout, "--data-dir", str(data))
    assert rc == 0, said
    assert len(server.cluster.created) == (1 if layout == "nested" else 2)
    for cell in CELLS:
        record = _record(data, cell)
        assert record["state"] == "succeeded" and record["layout"] == layout, record
        # flux-distribute's content store (the operator's kept statedir; kary's per-cell one).
        assert record["content_store"]["journal_mode"] == "WAL", record
        assert record["content_store"]["synchronous"] == "NORMAL", record
        # What timed it besides Flux (issue 44): the box's view has flux-core alone, on
        # PATH after the image's as the operator puts it, so its instances run sched-simple.
        assert record["scheduler"] == "sched-simple", record
        assert record["tools"]["hasher"].startswith(("OpenSSL ", "sha256sum ")), record
        # The tree Flux built over the pods is the cell's topology, rank by rank.
        # The container ran on a terminal, as the operator's (TTY: true): its lines came
        # \r\n, and the step lines, frames and overlay were read through them (per cell
        # the log is kept as the API served it; nested, each cell's lines are cut from
        # rank 0's by the driver's frames, line by line).
        if layout == "per-cell":
            assert b"\r\n" in (data / cell / "topology-experiment.out").read_bytes()
        log = (data / cell / "topology-experiment.out").read_text().replace("\r\n", "\n")
        overlay = log.split("TOPOLOGY diagram\n", 1)[1].split("TOPOLOGY description", 1)[0]
        topo = record["topo"]
        assert overlay_parents(overlay.splitlines()) == list(build_tree(topo, 4).parents), overlay
        assert "flux-sample" in overlay  # ranks are the pods, by their hostnames
    # Each size's blob made once per MiniCluster: by the nested group's first cell only.
    generated = [
        sum(1 for r in kary_records((data / c / "topology-experiment.out").read_text())
            if r and r.get("event") == "generate-blob")
        for c in CELLS
    ]  # fmt: skip
    assert generated == ([2, 0] if layout == "nested" else [2, 2])
    parse_tree(data, scratch / "parsed", plots=False)
    parsed = load_parsed(scratch / "parsed")
    distribute = parsed.events[parsed.events["event"] == "distribute-all-nodes"]
    assert len(distribute) == 4 and set(distribute["status"]) == {"ok"}
    assert set(parsed.runs["content_store"]) == {"WAL/NORMAL"}


def test_a_cell_whose_overlay_is_not_its_topology_fails() -> None:
    """What kary checks of every cell's log: drop `-Stbon.topo` and Flux builds the
    operator's flat tree (tbon.fanout=256), which is not kary:2's."""
    flat = "0 mc-0: full\n├─ 1 mc-1: full\n├─ 2 mc-2: full\n└─ 3 mc-3: full\n"
    log = f"TOPOLOGY diagram\n{flat}TOPOLOGY description\nkary:2\n"
    meta = {"topo": "kary:2", "nodes": 4}
    assert overlay_mismatch(log, meta) == (
        "the overlay Flux printed is not kary:2 on 4 nodes: rank 3's parent is 0, kary:2 makes it 1"
    )
    assert overlay_mismatch(log, {"topo": "kary:3", "nodes": 4}) is None


def _stalled_run(
    make_cluster: Callable[..., FakeApiServer],
    scratch: Path,
    faults: list[Callable[[BoxPods], None]],
    topos: tuple[str, ...] = ("kary:1", "kary:2", "kary:3"),
    layout: str = "nested",
    **settings: Any,
) -> tuple[FakeApiServer, int, str, Path]:
    """A nested sweep of `topos` at 1M whose first len(faults) cells wait 3 s first; the
    i-th fault is done to the i-th MiniCluster's pods while its cell waits (a fault
    that breaks a group sends the next cell to a new MiniCluster)."""
    server = make_cluster(**settings)
    data = scratch / "raw"
    stalled = topos[: len(faults)]
    template = template_with(scratch, {topo: f"echo {WAITING}; sleep 3" for topo in stalled})

    def when_stalled() -> None:
        for index, fault in enumerate(faults):
            box = _box(server, index)
            _wait_for(box, WAITING)
            fault(box)

    topo_args = [arg for topo in topos for arg in ("--topo", topo)]
    rc, said = _kary(
        *topo_args, "--sizes", "1M", "--template", str(template), "--data-dir", str(data),
        "--layout", layout, fault=when_stalled,
    )  # fmt: skip
    return server, rc, said, data


def _no_timing(data: Path, cell: str) -> None:
    log_path = data / cell / "topology-experiment.out"
    log = log_path.read_text() if log_path.exists() else ""
    assert '"event": "distribute' not in log, log[-800:]


def test_a_group_broken_mid_cell_fails_the_cell_and_the_rest_run_in_a_new_one(
    make_cluster: Callable[..., FakeApiServer], scratch: Path
) -> None:
    """A pod lost, rank 0's container restarted, rank 0's log rotated past frames kary
    never read: each while kary waits for a cell, each in the MiniCluster the previous
    one's break left."""
    faults: list[tuple[Callable[[BoxPods], None], str]] = [
        (lambda box: box.lose_pod(2), "rank 2's pod was replaced"),
        # Seen as a restart count, or as the new container's log that lacks the old lines.
        (
            lambda box: box.restart_container(0),
            "rank 0's container in pod .* restarted|no longer holds the lines",
        ),
        # Rotated past frames kary never read (the cell's end, the next one's begin): a
        # gap in the frames' numbers.  A rotation that lost nothing is routine (below).
        (
            lambda box: rotate_unread(box, "binomial/0"),
            "lost frames: after frame 2 it shows frame 5",
        ),
    ]
    # Four trees (kary:0 would be kary:3's flat tree again at 4 nodes, which a plan refuses).
    topos = ("kary:1", "kary:2", "kary:3", "binomial")
    server, rc, said, data = _stalled_run(
        make_cluster, scratch, [fault for fault, _ in faults], topos
    )
    assert rc == 1, said
    cells = ["4/kary-1/0", "4/kary-2/0", "4/kary-3/0", "4/binomial/0"]
    assert [_record(data, c)["state"] for c in cells] == ["failed"] * 3 + ["succeeded"], said
    for cell, (_, why) in zip(cells, faults, strict=False):
        error = _record(data, cell)["error"]
        assert re.search(why, error) and f"broke during cell {cell}" in error, error
        _no_timing(data, cell)
    # The cells still to run got a MiniCluster of their own each time; all were deleted.
    assert len(server.cluster.created) == 4 and server.cluster.miniclusters == {}


def test_a_rotation_of_rank_zeros_log_that_lost_nothing_keeps_the_group(
    make_cluster: Callable[..., FakeApiServer], scratch: Path
) -> None:
    """The kubelet rotates the log at containerLogMaxSize as a matter of course (issue
    44, item 1): rotated just after kary read the stalled cell's last line, nothing is
    lost, and both cells end in the one MiniCluster, timed, the rotation on record."""
    server, rc, said, data = _stalled_run(
        make_cluster, scratch, [lambda box: rotate_once_read(box, WAITING)], ("kary:1", "kary:2")
    )
    assert rc == 0, said
    records = [_record(data, cell) for cell in CELLS]
    assert [r["state"] for r in records] == ["succeeded"] * 2, said
    assert len(server.cluster.created) == 1
    assert [r["nested_in"]["log_rotations"] for r in records] == [1, 1]
    log = (data / CELLS[0] / "topology-experiment.out").read_text()
    assert WAITING in log and '"event": "distribute-all-nodes"' in log


def test_the_box_rotates_rank_zeros_log_at_the_kubelets_default() -> None:
    assert PodSettings().rotate_bytes == 10 * 2**20  # containerLogMaxSize's default


def _stopped_by_start_failures(rc: int, said: str, data: Path, cell: str, kind: str) -> str:
    """The cell failed to start (`kind`), with no timing, and a second such start failure
    stopped the sweep; the cell's error."""
    assert rc != 0, said
    record = _record(data, cell)
    assert record["state"] == "failed" and record["start_failure"] == kind, record
    _no_timing(data, cell)
    assert f"two cells in a row could not start ({kind})" in said, said
    error: str = record["error"]
    return error


def test_a_drained_rank_is_a_start_failure_that_stops_the_sweep_the_second_time(
    make_cluster: Callable[..., FakeApiServer], scratch: Path
) -> None:
    # The running job keeps its ranks; no later -N4 job can be granted.
    _, rc, said, data = _stalled_run(
        make_cluster, scratch, [lambda box: box.drain(3)], env={"KARY_NESTED_START_S": "3"}
    )
    assert _record(data, CELLS[0])["state"] == "succeeded"
    error = _stopped_by_start_failures(rc, said, data, CELLS[1], "not-started")
    assert "did not start within 3 s" in error and "drained" in error


def test_a_rank_zero_disk_too_small_for_a_cell_is_a_start_failure_before_its_job(
    make_cluster: Callable[..., FakeApiServer], scratch: Path
) -> None:
    """Rank 0's disk cannot hold the cell's blobs, content store and kary's margin: the
    driver says so before the job, and the sweep stops after the second such cell."""
    make_cluster(disks={0: 1 << 30})  # 1 GiB: less than kary's 1 GiB margin plus blobs
    data = scratch / "raw"
    rc, said = _kary(*TOPOS, "--sizes", "1M", "--data-dir", str(data))
    error = _stopped_by_start_failures(rc, said, data, CELLS[0], "disk")
    assert "rank 0 has" in error and "bytes free" in error


def test_a_full_worker_disk_fails_the_cell_not_its_timings(
    make_cluster: Callable[..., FakeApiServer], scratch: Path
) -> None:
    # Rank 2 cannot extract: ENOSPC.
    _, rc, said, data = _stalled_run(
        make_cluster, scratch, [lambda box: box.fill_disk(2)], ("kary:1",), disks={2: 64 << 20}
    )
    assert rc == 1, said
    first = _record(data, CELLS[0])
    # Rank 2's extract fails (ENOSPC) and kary names that step, and only that: no pod
    # restarted.  (The box once read a container's exit file before its status was in
    # it, as status 1, and restarted a container that had exited 0: test_box_pods_exit.)
    assert first["state"] == "failed", first
    assert "distribute-all-nodes 1M" in first["error"], first
    assert "restarted" not in first["error"] and "broke during" not in first["error"], first
    log_path = data / CELLS[0] / "topology-experiment.out"
    log = log_path.read_text() if log_path.exists() else ""
    # No distribution is a timing by kary's one rule (formats/kary_line.step_timings).
    timed = [step for step, why in step_timings(log) if why is None]
    assert not [step for step in timed if str(step["event"]).startswith("distribute")], timed


def _fill_past_the_kubelet_s_threshold(box: BoxPods) -> None:
    with contextlib.suppress(RuntimeError):  # the kubelet kills the filler with the pod
        box.fill_disk(2)


@pytest.mark.parametrize("layout", ["nested", "per-cell"])
def test_a_pod_the_kubelet_evicts_for_its_disk_fails_the_cell_with_the_kubelet_s_reason(
    make_cluster: Callable[..., FakeApiServer], scratch: Path, layout: str
) -> None:
    """Issue 44, item 2: the box's kubelet evicts a pod under 15% of its disk free, as a
    real one does (imagefs.available<15%), long before the disk is full: the pod shows
    Failed with reason Evicted, and kary fails the cell with the kubelet's reason."""
    server, rc, said, data = _stalled_run(
        make_cluster,
        scratch,
        [_fill_past_the_kubelet_s_threshold],
        ("kary:1",),
        layout=layout,
        eviction_free_percent=15,
        # A small disk for the pod the fault fills: it passes the threshold in a fraction
        # of a second, well inside the cell's 3 s stall (2 GiB took longer under load in CI
        # once, and the cell ended first).
        disks={2: 256 << 20},
    )
    assert rc == 1, said
    status = _box(server, 0).pod_status(2)
    assert (status["phase"], status["reason"]) == ("Failed", "Evicted"), status
    record = _record(data, CELLS[0])
    assert record["state"] == "failed" and "start_failure" not in record, record
    assert "rank 2's pod" in record["error"], record["error"]
    assert (
        "was evicted by its node's kubelet: The node was low on resource: ephemeral-storage"
        in record["error"]
    ), record["error"]
    assert "preemption" not in record["error"], record["error"]
    # The kubelet may evict before or after the cell's distribution ran (its disk check
    # and kary's looks keep their own time): either way the cell gives no timing.
    parse_tree(data, scratch / "parsed", plots=False)
    events = load_parsed(scratch / "parsed").events
    timed = events[(events["event"] == "distribute-all-nodes") & (events["status"] == "ok")]
    assert timed.empty, timed


def test_the_box_starts_brokers_as_the_operators_wait_script_does() -> None:
    """The operator's lines the box once left out (flux-operator 0d75cef8): the CRD's
    default connectTimeout, 15 s between a worker's tries, and `name-[0]` for one pod."""
    body = {
        "metadata": {"name": "mc"},
        "spec": {"size": 1, "containers": [{"command": "true"}], "flux": {}},
    }
    script = start_script(body, PodSettings(), Path("/nonexistent"))
    assert "-Stbon.connect_timeout=5s" in script  # minicluster_types.go: default "5s"
    assert "\n        sleep 15\n" in script  # wait.sh line 192
    assert "flux R encode --hosts=mc-[0] --local" in script  # config.go generateRange
    assert 'host="mc-[0]"' in broker_config("mc", "default", 1)
    assert 'host="mc-[0-3]"' in broker_config("mc", "default", 4)
    # components.sh lines 30, 66-67, 80: the view's bin after the image's PATH, its
    # python3 removed, and Fluxion's rc dir as the operator names it.
    view = "viewroot=/nonexistent/view\nviewbin=${viewroot}/bin\nexport PATH=$PATH:${viewbin}\n"
    assert script.startswith(f"#!/bin/bash\n{view}rm -rf $viewroot/bin/python3\n")
    assert "\nexport FLUX_RC_EXTRA=$viewroot/etc/flux/rc1.d\n" in script


def test_a_peer_resolves_only_once_ready_and_the_workers_retry_until_then(
    make_cluster: Callable[..., FakeApiServer], scratch: Path
) -> None:
    """Rank 0's pod pulls its image 8 s longer than the others: meanwhile its name is not
    in the cluster's DNS (a headless service without publishNotReadyAddresses), so the
    workers cannot reach it; they keep trying, and the cells run once it is Ready."""
    server = make_cluster(pulls={0: 8.0})
    data = scratch / "raw"
    looked: dict[str, bool] = {}

    def resolves(box: BoxPods, index: int, name: str) -> bool:
        try:
            box.exec(index, ["getent", "hosts", name])
        except RuntimeError:
            return False
        return True

    def while_rank_zero_pulls() -> None:
        box = _box(server)
        assert box.pods[0].pending_until is not None  # still pulling
        # The MiniCluster's service names (<name>-<i>.<name>.default.svc.cluster.local).
        rank_zero = box.names[0]
        looked["own name"] = resolves(box, 1, box.names[1])
        looked["rank 0 while Pending"] = resolves(box, 1, rank_zero)
        while box.pods[0].pending_until is not None:
            time.sleep(0.1)
        deadline = time.monotonic() + 30
        while not resolves(box, 1, rank_zero):
            assert time.monotonic() < deadline, "rank 0's name never resolved once Ready"
            time.sleep(0.2)
        looked["rank 0 once Ready"] = True

    rc, said = _kary(*TOPOS, "--sizes", "1M", "--data-dir", str(data), fault=while_rank_zero_pulls)
    assert looked == {"own name": True, "rank 0 while Pending": False, "rank 0 once Ready": True}
    assert rc == 0, said
    assert [_record(data, c)["state"] for c in CELLS] == ["succeeded", "succeeded"]


def test_a_restarted_container_finds_a_fresh_tmp_and_the_operators_volume_kept(
    make_cluster: Callable[..., FakeApiServer], scratch: Path
) -> None:
    """The operator mounts nothing on /tmp: a restarted container's /tmp is a new writable
    layer; its emptyDir (CONFIG_ROOT here) outlives the container."""
    seen: list[str] = []
    servers: list[FakeApiServer] = []

    def make(**settings: Any) -> FakeApiServer:
        servers.append(make_cluster(**settings))
        return servers[-1]

    def restart_a_worker(box: BoxPods) -> None:
        box.exec(1, ["sh", "-c", f"touch /tmp/kary-layer {CONFIG_ROOT}/kary-volume"])
        box.restart_container(1)
        deadline = time.monotonic() + 30
        while box.pods[1].containers < 2:
            assert time.monotonic() < deadline, "the worker's container never restarted"
            time.sleep(0.05)
        listing = f"ls -d /tmp/kary-layer {CONFIG_ROOT}/kary-volume 2>/dev/null; true"
        # kary deletes the MiniCluster once it sees the restart, and its pods with it:
        # the API holds that request (it takes the cluster's lock) until the look is done.
        with servers[0].cluster.lock:
            seen.append(box.exec(1, ["sh", "-c", listing]))

    _stalled_run(make, scratch, [restart_a_worker], ("kary:1",))
    assert seen == [f"{CONFIG_ROOT}/kary-volume\n"]


def test_a_race_feeds_its_next_block_to_the_pods_it_started_on(
    make_cluster: Callable[..., FakeApiServer], scratch: Path
) -> None:
    """A race's one MiniCluster on pods: block 1 reaches rank 0's driver through the
    feed ConfigMap as the fake kubelet projects it into the pod, and runs there."""
    server = make_cluster()
    data = scratch / "raw"
    result = CliRunner().invoke(
        app,
        ["race", "--backend", "kubernetes", "--exact-nodes", "4", "--no-smoke",
         "--flux-view", PINNED_VIEW, *TOPOS, "--sizes", "1M", "--first-test", "2",
         "--max-blocks", "2", "--seed", "1", "--data-dir", str(data), "--yes"],
    )  # fmt: skip
    assert result.exit_code == 1, result.output  # two blocks do not separate two topologies
    assert "not separated" in result.output
    assert len(server.cluster.created) == 1
    name = server.cluster.created[0]["metadata"]["name"]
    for cell in (*CELLS, "4/kary-1/1", "4/kary-2/1"):
        record = _record(data, cell)
        assert record["state"] == "succeeded", (cell, record.get("error"))
        assert record["nested_in"]["name"] == name
    assert server.cluster.configmaps == {}
