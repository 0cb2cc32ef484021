"""`kary run --cluster FILE` when a Spot node is reclaimed and no replacement comes: the
run waits a bounded, billed time for the node group, then stops with a resume hint
(issue 34, item 4)."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from experiments.cli import app

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "kubernetes"))
from fake_apiserver import (
    PINNED_VIEW,
    FakeApiServer,
    FakeCluster,
    Preemption,
    Scenario,
    fake_nodes,
    pinned_cluster_file,
    write_kubeconfig,
)
from fast_backend import ONE_STEP_LOG, fast_backend

# eks-30.yaml with the operator pinned by digest, as a billed --up needs.
EKS_30 = pinned_cluster_file(Path(__file__).resolve().parents[2] / "clusters" / "eks-30.yaml")
CONTEXT = "arn:aws:eks:us-east-2:123456789012:cluster/kary-topology-30"


@pytest.fixture
def spot_cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCluster]:
    """The cluster file's 30 workers, all Spot; the backend's looks made fast."""
    fast_backend(monkeypatch, teardown=True)
    cluster = FakeCluster(scenario=Scenario(log=ONE_STEP_LOG, delete_s=0.0), nodes=fake_nodes(30))
    cluster.nodes = fake_nodes(30, spot=range(30))
    with FakeApiServer(cluster) as server:
        write_kubeconfig(Path(os.environ["KUBECONFIG"]), server.url, context=CONTEXT)
        yield cluster


def test_replacements_that_never_come_stop_the_run_with_a_resume_hint(
    tmp_path: Path, fake_cloud: Any, spot_cluster: FakeCluster
) -> None:
    # 4/kary-2/0 hangs, and its rank 1's Spot node is reclaimed with nothing to replace it.
    spot_cluster.scenario = Scenario(log=ONE_STEP_LOG, outcome="never", nested_cells_done=1)
    spot_cluster.preempt(Preemption(rank=1, after_s=0.4, replaced_after_s=None))
    raw = tmp_path / "raw"
    args = ["run", "--cluster", str(EKS_30), "--exact-nodes", "4", "--sizes", "1M"]
    args += ["--flux-view", PINNED_VIEW]
    args += ["--topo", "kary:1", "--topo", "kary:2", "--topo", "kary:3", "--data-dir", str(raw)]
    result = CliRunner().invoke(app, [*args, "--yes", "--no-smoke", "--preemption-wait", "1"])
    assert result.exit_code == 1, result.output
    err = result.stderr.splitlines()
    # The bound and what it may cost were said before the wait.
    (said,) = [line for line in err if "lost a node to preemption: waiting" in line]
    assert re.fullmatch(
        r"kary run: cell 4/kary-2/0 lost a node to preemption: waiting up to 1 s for "
        r"replacement nodes \(--preemption-wait\); billed while it waits: at most "
        r"\$0\.\d\d at \$\d+\.\d\d/h",
        said,
    ), said
    out = result.stdout.splitlines()  # the summary is the answer: stdout
    assert (
        "stopped: the node group was not back at 30 Ready nodes 1 s after the preemption "
        "(29 of 30 Ready): its replacements did not come in time"
    ) in out
    # One line says how to go on (then, as after any run with results, how to parse them).
    assert out[-1] == "kary run ... resumes: 2 cells left (run the same command again)"
    assert err[-1] == f"next: kary parse --data {raw} --out {raw.with_name('parsed')}"
    states = {
        str(p.parent.relative_to(raw)): json.loads(p.read_text())["state"]
        for p in raw.glob("**/run.json")
        if ".replaced" not in p.parts
    }
    assert states == {"4/kary-1/0": "succeeded", "4/kary-2/0": "preempted"}
    assert spot_cluster.miniclusters == {}
    # Bounded by the second asked for, not the default ten minutes: the lines above say
    # which bound it waited on and that it gave up on it (no wall-clock bound here: it
    # would drift with the machine).
