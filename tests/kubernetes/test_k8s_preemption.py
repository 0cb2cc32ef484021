"""A cell that lost a node to preemption (issue 34, item 4): `preempted`, never timed, run
again by the next `kary run`; each rank's node and its capacity type in run.json.

The fake cluster deletes the Node object of one rank mid-cell, as a reclaimed Spot
VM goes, and keeps the pod bound to it (the API shows it until pod GC marks it).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fake_apiserver import PINNED_VIEW, Preemption, Scenario, _nested_cells, fake_nodes
from fast_backend import ONE_STEP_LOG, fast_backend
from typer.testing import CliRunner

from analysis import load_parsed
from analysis.page.facts import collect_facts
from analysis.page.where import capacity_notes, nodes_of
from experiments.backends.kubernetes.nodes import NodeCatalog, capacity_of, instance_id_of
from experiments.backends.kubernetes.preemption import NodeLoss, disruption_of
from experiments.cli import app
from experiments.formats.cell_layout import LOG_NAME

TOPOS = ["--topo", "kary:1", "--topo", "kary:2", "--topo", "kary:3"]


@pytest.fixture
def fast(apiserver: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's backend with short backoffs, pod looks and log reads."""
    fast_backend(monkeypatch, teardown=True)


def _run(raw: Path, *args: str) -> Any:
    args = (*args, "--sizes", "1M", "--data-dir", str(raw), "--yes", "--no-smoke")
    return CliRunner().invoke(
        app, ["run", "--backend", "kubernetes", "--flux-view", PINNED_VIEW, *args]
    )


def _record(raw: Path, cell: str) -> dict[str, Any]:
    return json.loads((raw / cell / "run.json").read_text())


def test_a_node_deleted_mid_cell_leaves_it_preempted_untimed_and_the_next_run_reruns_it(
    apiserver: Any, fast: None, tmp_path: Path
) -> None:
    cluster = apiserver.cluster
    cluster.nodes = fake_nodes(8, spot=range(8))
    # The driver finishes 4/kary-1/0 and hangs in 4/kary-2/0, whose rank 1 then loses
    # its node; a replacement joins soon after, so 4/kary-3/0 runs in a new group.
    cluster.scenario = Scenario(log=ONE_STEP_LOG, outcome="never", nested_cells_done=1)
    cluster.preempt(Preemption(rank=1, after_s=0.4, replaced_after_s=0.2))
    raw = tmp_path / "raw"
    result = _run(raw, "--exact-nodes", "4", *TOPOS, "--preemption-wait", "5")
    assert result.exit_code == 1, result.output
    lost = _record(raw, "4/kary-2/0")
    assert lost["state"] == "preempted", lost
    assert lost["error"].startswith("rank 1's node node-1 (a spot node) was deleted")
    assert lost["preemption"] == {
        "rank": 1, "node": "node-1", "how": "was deleted", "capacity": "spot"
    }  # fmt: skip
    # Never timed: no log kept (as an interrupted cell), no steps counted.
    assert not (raw / "4/kary-2/0" / LOG_NAME).exists()
    assert (lost["steps"], lost["step_seconds"]) == (0, 0)
    # Each rank's node, with the one that went marked.
    ranks = {r["rank"]: r for r in lost["rank_nodes"]}
    assert ranks[1] == {
        "rank": 1, "node": "node-1", "capacity": "spot", "instance_type": "c5a.4xlarge",
        "instance_id": f"i-{1:017x}", "zone": "us-east-2b", "gone": True,
    }  # fmt: skip
    assert lost["capacity"] == "spot"
    assert _record(raw, "4/kary-1/0")["state"] == "succeeded"
    assert _record(raw, "4/kary-3/0")["state"] == "succeeded"
    # The wait for the replacement was said, and the next group ran on the nodes there are.
    assert "4/kary-2/0 lost a node to preemption: waiting up to 5 s" in result.output
    assert "the nodes are back after" in result.output
    assert "kary run ... resumes: 1 cell left (run the same command again)" in result.output
    assert [_nested_cells(b) for b in cluster.created] == [
        ["4/kary-1/0", "4/kary-2/0", "4/kary-3/0"],
        ["4/kary-3/0"],
    ]
    assert "node-1" not in {r["node"] for r in _record(raw, "4/kary-3/0")["rank_nodes"]}
    assert cluster.miniclusters == {}
    # Parsed, it gives no timing row; the report lists it as a bad cell, like an interrupted one.
    parsed = tmp_path / "parsed"
    args = ["parse", "--data", str(raw), "--out", str(parsed), "--no-plots"]
    assert CliRunner().invoke(app, args).exit_code == 0
    tables = load_parsed(parsed)
    assert set(tables.events["source"]) == {
        f"4/kary-{k}/0/{LOG_NAME}" for k in (1, 3)
    }  # fmt: skip
    bad = collect_facts(tables).bad_cells
    assert [(b["cell"], b["state"]) for b in bad] == [("4/kary-2/0", "preempted")]
    # The next run runs the preempted cell again, and only it; the old record is kept aside.
    cluster.scenario = Scenario(log=ONE_STEP_LOG)
    again = _run(raw, "--exact-nodes", "4", *TOPOS)
    assert again.exit_code == 0, again.output
    assert _nested_cells(cluster.created[-1]) == ["4/kary-2/0"]
    assert _record(raw, "4/kary-2/0")["state"] == "succeeded"
    kept = list((raw / ".replaced").glob("*/4/kary-2/0/run.json"))
    assert [json.loads(p.read_text())["state"] for p in kept] == ["preempted"]


def test_a_per_cell_minicluster_whose_pod_was_collected_is_preempted(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    """Pod GC marks the pod of a node that went `DisruptionTarget: DeletionByPodGC`."""
    cluster = apiserver.cluster
    # The benchmark is under way (no done line) when the node goes.
    cluster.scenario = Scenario(outcome="never", log=ONE_STEP_LOG.rsplit("KARY", 1)[0])
    cluster.preempt(Preemption(rank=2, after_s=0.2, pod_gc_s=0.0))
    with make_backend() as backend:
        result = backend.run(cell, rendered, 30)
    assert result.preempted == result.error
    assert result.error.startswith(
        "rank 2's node node-2 (an on-demand node) lost its pod (DeletionByPodGC: PodGC: node no "
        "longer exists): the cell lost a node to preemption"
    )
    assert (result.rc, result.timed_out, result.start_failure) == (None, False, None)
    assert result.provenance["diagnostics"]["pods"]
    assert cluster.miniclusters == {}


def test_capacity_types_read_from_the_providers_labels() -> None:
    assert capacity_of({"eks.amazonaws.com/capacityType": "SPOT"}) == "spot"
    assert capacity_of({"eks.amazonaws.com/capacityType": "ON_DEMAND"}) == "on-demand"
    assert capacity_of({"karpenter.sh/capacity-type": "spot"}) == "spot"
    assert capacity_of({"cloud.google.com/gke-spot": "true"}) == "spot"
    assert capacity_of({"cloud.google.com/gke-preemptible": "true"}) == "spot"
    assert capacity_of({"cloud.google.com/gke-nodepool": "workers"}) == "on-demand"
    assert capacity_of({"kubernetes.io/hostname": "kind-worker"}) is None
    assert instance_id_of("aws:///us-east-2b/i-0123456789abcdef0") == "i-0123456789abcdef0"
    assert instance_id_of("gce://proj/us-central1-a/gke-kary-workers-1a2b") == (
        "gke-kary-workers-1a2b"
    )
    assert instance_id_of("kind://docker/kind/kind-worker") == "kind-worker"
    assert instance_id_of(None) is None


def _pod(rank: int, node: str, *conditions: dict[str, str], reason: str = "") -> dict[str, Any]:
    labels = {"batch.kubernetes.io/job-completion-index": str(rank)}
    status: dict[str, Any] = {"conditions": list(conditions)}
    if reason:
        status["reason"] = reason
    return {
        "metadata": {"name": f"mc-{rank}-ab", "labels": labels},
        "spec": {"nodeName": node},
        "status": status,
    }


def _disrupted(reason: str) -> dict[str, str]:
    return {"type": "DisruptionTarget", "status": "True", "reason": reason, "message": "m"}


def test_which_disruptions_are_preemptions() -> None:
    assert disruption_of(_pod(0, "n", _disrupted("EvictionByEvictionAPI"))) == (
        "EvictionByEvictionAPI: m"
    )
    # GKE's Spot VMs end by a graceful node shutdown; a node-pressure eviction is the
    # cell's own disk or memory, not a preemption.
    assert disruption_of(_pod(0, "n", _disrupted("TerminationByKubelet"))) is not None
    assert disruption_of(_pod(0, "n", _disrupted("TerminationByKubelet"), reason="Evicted")) is None
    assert disruption_of(_pod(0, "n", {"type": "DisruptionTarget", "status": "False"})) is None


def test_a_cordoned_spot_node_is_a_preemption_and_a_cordoned_on_demand_one_is_not() -> None:
    class Listing:
        """A KubeApi answering only `list nodes`."""

        def __init__(self, nodes: list[dict[str, Any]]) -> None:
            self.nodes = nodes
            self.core = self

        def list_node(self) -> None:
            return None

        def call_or_none(self, doing: str, fn: Any, **kwargs: Any) -> dict[str, Any]:
            return {"items": self.nodes}

    nodes = fake_nodes(2, spot=range(1, 2))
    for node in nodes:
        node["spec"]["unschedulable"] = True
    catalog = NodeCatalog()
    assert catalog.refresh(Listing(nodes))  # type: ignore[arg-type]
    pods = [_pod(0, "node-0"), _pod(1, "node-1")]
    found = NodeLoss("mc").find(pods, catalog)
    assert found is not None and (found.rank, found.how) == (1, "was cordoned to be drained")
    assert NodeLoss("mc").find(pods[:1], catalog) is None


def test_run_json_the_parsed_runs_table_and_the_report_show_each_nodes_capacity(
    apiserver: Any, fast: None, tmp_path: Path
) -> None:
    cluster = apiserver.cluster
    cluster.nodes = fake_nodes(8, spot=range(2))  # ranks 0 and 1 on Spot, 2 and 3 on demand
    cluster.scenario = Scenario(log=ONE_STEP_LOG)
    raw, parsed = tmp_path / "raw", tmp_path / "parsed"
    result = _run(raw, "--exact-nodes", "4", "--topo", "kary:2")
    assert result.exit_code == 0, result.output
    record = _record(raw, "4/kary-2/0")
    assert record["capacity"] == "mixed"
    assert [
        (r["rank"], r["node"], r["capacity"], r["instance_id"]) for r in record["rank_nodes"]
    ] == [
        (rank, f"node-{rank}", "spot" if rank < 2 else "on-demand", f"i-{rank:017x}")
        for rank in range(4)
    ]
    assert record["node_set"]["nodes"] == 8
    done = CliRunner().invoke(
        app, ["parse", "--data", str(raw), "--out", str(parsed), "--no-plots"]
    )
    assert done.exit_code == 0, done.output
    with (parsed / "runs.csv").open() as table:
        (run,) = csv.DictReader(table)
    assert run["capacity"] == "mixed"
    assert run["rank_nodes"] == ", ".join(
        f"node-{rank}:{'spot' if rank < 2 else 'on-demand'}:i-{rank:017x}" for rank in range(4)
    )
    assert run["node_set"] == f"8 nodes #{record['node_set']['digest']}"
    facts = collect_facts(load_parsed(parsed))
    assert facts.capacity_notes == [
        "Mixed capacity: these cells ran on 2 on-demand and 2 spot nodes (cells: 1 mixed "
        "cell): a Spot node can be reclaimed mid-cell and need not match an on-demand one, "
        "so compare cells of one capacity (runs.csv's capacity column)."
    ]
    provenance = dict(facts.provenance)
    assert provenance["capacity"] == "1 mixed cell"
    assert provenance["nodes"] == ", ".join(
        f"node-{rank} {'spot' if rank < 2 else 'on-demand'} (i-{rank:017x})" for rank in range(4)
    )


def test_the_report_flags_a_node_set_that_changed_between_cells() -> None:
    runs = pd.DataFrame(
        {
            "cluster": ["c", "c", "c"],
            "capacity": ["spot", "spot", "spot"],
            "rank_nodes": [
                "a:spot:i-1, b:spot:i-2",
                "a:spot:i-1, b:spot:i-2",
                "a:spot:i-1, c:spot",
            ],
            "node_set": ["2 nodes #1", "2 nodes #1", "2 nodes #2"],
        }
    )
    nodes = nodes_of(runs)
    assert capacity_notes(nodes) == [
        "The node set changed between cells on c: 2 sets of worker nodes over 3 cells (a node "
        "was replaced, as after a Spot preemption), so not every cell ran on the same machines."
    ]
    assert sorted(nodes.nodes) == ["a", "b", "c"]
