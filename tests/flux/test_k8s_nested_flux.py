"""The Kubernetes nested layout end to end on real flux-core, against the fake API server.

`kary run --backend kubernetes` (nested is its default) talks to the fake API
server on 127.0.0.1, whose operator runs each MiniCluster it is sent on this
machine (tests/kubernetes/fake_operator_flux.py): the rendered pre commands
unpack the driver and the cells' entrypoints, the driver runs as the initial
program of a `flux start --test-size` instance, and every cell is a real
nested instance (`flux batch`) inside it, framed in the log kary reads back
through the API.  So the driver, the manifest that carries it and the
backend that follows it are all tested without a cloud.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "kubernetes"))
sys.path.insert(0, str(REPO / "tests" / "emulator"))
from emulator_helpers import processes_mentioning  # noqa: E402
from fake_apiserver import PINNED_VIEW, FakeApiServer, FakeCluster, write_kubeconfig  # noqa: E402
from template_edits import template_with  # noqa: E402

KARY = [sys.executable, "-c", "from experiments.cli import main; main()"]
# The layout is under test here, not the smoke cell a billed sweep runs first.
RUN = [*KARY, "run", "--backend", "kubernetes", "--exact-nodes", "4", "--no-smoke"]
RUN += ["--flux-view", PINNED_VIEW]  # a billed run's view, by digest (model/pins.py)
TOPOS = ["--topo", "kary:1", "--topo", "kary:2", "--topo", "kary:3"]
CELLS = ["4/kary-1/0", "4/kary-2/0", "4/kary-3/0"]


@pytest.fixture
def cluster(flux: str, scratch: Path) -> Iterator[FakeApiServer]:
    with FakeApiServer(FakeCluster(token="kary-test-token", flux=flux)) as server:
        write_kubeconfig(scratch / "kubeconfig", server.url)
        yield server
        assert server.cluster.stop_all() == []


def _env(scratch: Path) -> dict[str, str]:
    env = dict(os.environ, TMPDIR=str(scratch), KUBECONFIG=str(scratch / "kubeconfig"))
    env.pop("FLUX_URI", None)
    return env


def _run(scratch: Path, args: list[str], timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*RUN, *args, "--yes"],
        env=_env(scratch),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _record(data: Path, cell: str) -> dict[str, Any]:
    record: dict[str, Any] = json.loads((data / cell / "run.json").read_text())
    return record


def _no_flux_left(cluster: FakeApiServer, scratch: Path) -> bool:
    """No flux of this test's MiniClusters (their kfo- folders) nor broker of its kary
    left: other tests' (pytest -n) are not looked at."""
    pods = [p for f in cluster.cluster.pod_folders for p in processes_mentioning(f.name)]
    return not [p for p in pods if "flux" in p] and not [
        p for p in processes_mentioning(str(scratch)) if "flux-broker" in p
    ]


def test_a_failed_cell_and_a_timed_out_cell_do_not_stop_the_others(
    cluster: FakeApiServer, scratch: Path
) -> None:
    data = scratch / "raw"
    template = template_with(scratch, {"kary:1": "exit 3", "kary:2": "sleep 600"})
    done = _run(
        scratch,
        [*TOPOS, "--sizes", "1M", "--timeout", "10", "--template", str(template),
         "--data-dir", str(data)],
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    states = [_record(data, cell)["state"] for cell in CELLS]
    assert states == ["failed", "timeout", "succeeded"], states
    assert _record(data, CELLS[0])["rc"] == 3
    assert "Flux ended the nested job" in _record(data, CELLS[1])["error"]
    # The cell that ran to its end was killed at its exit status rather than waited for
    # through its brokers' rc3, and the kill's own words are not its log's; kary:1
    # exited before its entrypoint set the trap that leaves the status: waited for.
    assert _record(data, CELLS[2])["flux"]["ended_at_status"] is True
    log = (data / CELLS[2] / "topology-experiment.out").read_text()
    assert "Killed" not in log and "flux_module_finalize" not in log
    assert _record(data, CELLS[0])["flux"]["ended_at_status"] is False
    # Flux's result and the job's nodes, both from the driver's one `flux jobs` call:
    # the cell killed at its status reads FAILED, the one that exited 3 FAILED too.
    assert [_record(data, cell)["flux"]["result"] for cell in (CELLS[0], CELLS[2])] == [
        "FAILED",
        "FAILED",
    ]
    assert all(_record(data, cell)["hosts"] for cell in (CELLS[0], CELLS[2]))
    assert len(cluster.cluster.created) == 1  # the same MiniCluster ran on
    assert _no_flux_left(cluster, scratch)


def test_ctrl_c_deletes_the_minicluster_and_a_rerun_runs_only_what_is_left(
    cluster: FakeApiServer, scratch: Path
) -> None:
    data = scratch / "raw"
    template = template_with(scratch, {"kary:2": "sleep 600"})
    args = [*TOPOS, "--sizes", "1M", "--template", str(template), "--data-dir", str(data)]
    kary = subprocess.Popen(
        [*RUN, *args, "--yes"],
        env=_env(scratch),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and _state(data, CELLS[1]) != "running":
        time.sleep(0.2)
    assert _state(data, CELLS[1]) == "running"
    time.sleep(1.0)
    kary.send_signal(signal.SIGINT)
    _, err = kary.communicate(timeout=60)
    assert kary.returncode == 130, err
    assert cluster.cluster.miniclusters == {}  # deleted: its nested job went with its pods
    assert [_state(data, c) for c in CELLS] == ["succeeded", "interrupted", None]
    assert _no_flux_left(cluster, scratch)
    # The rerun runs the two cells still to run, in a MiniCluster of their own.
    shutil.rmtree(template)
    shutil.copytree(REPO / "templates", template)
    done = _run(scratch, args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [_state(data, c) for c in CELLS] == ["succeeded"] * 3
    assert len(cluster.cluster.created) == 2
    rerun = cluster.cluster.created[1]["spec"]["containers"][0]["commands"]["pre"]
    assert rerun.count("\n") > 3 and _record(data, CELLS[1])["nested_in"]["cells"] == 2


def _state(data: Path, cell: str) -> str | None:
    path = data / cell / "run.json"
    if not path.exists():
        return None
    try:
        state: str = json.loads(path.read_text())["state"]
    except (json.JSONDecodeError, KeyError):
        return None
    return state
