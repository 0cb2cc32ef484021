"""What the backend sends (CRD-valid, labelled) and how it reads pods, events and logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from strict_schema import crd_schema, validate_strictly

from experiments.backends.kubernetes.minicluster import build_manifest
from experiments.backends.kubernetes.objects import (
    container_state,
    describe_pods,
    event_lines,
    flux_version_from_log,
    image_digest,
    job_outcome,
    pod_index,
    rank_zero,
)
from experiments.model.plan import Cell
from experiments.model.render import (
    DEFAULT_IMAGE,
    FLUX_VIEW_NOBLE,
    SEED_IMAGE,
    RenderOptions,
    render_cell,
)


def test_the_labelled_minicluster_validates_against_the_crd(
    minicluster_crd: Path, cell: Any, rendered: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KARY_OWNER", "Jane.Doe")
    body = build_manifest(rendered.minicluster_yaml, cell.id, "default", {"kary/sweep": "s1"})
    validate_strictly(body, crd_schema(minicluster_crd))
    assert body["metadata"]["namespace"] == "default"
    # The render's own labels win; the backend adds what is missing.
    assert body["metadata"]["labels"]["kary/owner"] == "tester"
    assert body["metadata"]["labels"]["kary/cell"] == "4_kary-2_0"
    bare = build_manifest(
        rendered.minicluster_yaml.replace('    kary/owner: "tester"\n', ""), cell.id, "default", {}
    )
    assert bare["metadata"]["labels"]["kary/owner"] == "jane-doe"


def _render(cell: Cell, options: RenderOptions) -> dict[str, Any]:
    rendered = render_cell(
        cell.nodes, cell.topo, list(cell.sizes), list(cell.strategies), cell.id, options
    )
    document: dict[str, Any] = yaml.safe_load(rendered.minicluster_yaml)
    return document


def _flux_container_schema(crd: Path) -> dict[str, Any]:
    spec = crd_schema(crd)["properties"]["spec"]["properties"]
    schema: dict[str, Any] = spec["flux"]["properties"]["container"]
    return schema


def test_the_default_image_takes_flux_from_the_operators_view(
    minicluster_crd: Path, cell: Cell
) -> None:
    body = _render(cell, RenderOptions())
    validate_strictly(body, crd_schema(minicluster_crd))
    # A plain Ubuntu pinned by digest; Flux comes from the view the CRD documents
    # (its default for spec.flux.container.image, one of the images it lists).
    assert body["spec"]["containers"][0]["image"] == DEFAULT_IMAGE
    assert "@sha256:" in DEFAULT_IMAGE
    assert body["spec"]["flux"]["container"] == {"image": FLUX_VIEW_NOBLE, "pullAlways": False}
    documented = _flux_container_schema(minicluster_crd)
    assert documented["properties"]["image"]["default"] == FLUX_VIEW_NOBLE
    assert FLUX_VIEW_NOBLE in documented["description"].split()
    assert documented["properties"]["disable"]["default"] is False


def test_an_image_with_flux_runs_the_init_container_from_itself(
    minicluster_crd: Path, cell: Cell
) -> None:
    body = _render(cell, RenderOptions(image=SEED_IMAGE, pull_always=True))
    validate_strictly(body, crd_schema(minicluster_crd))
    # The view is disabled and the init container, which only writes the broker
    # config, runs the same image: one pull per node, not two.
    assert body["spec"]["flux"]["container"] == {
        "image": SEED_IMAGE,
        "disable": True,
        "pullAlways": True,
    }
    assert body["spec"]["containers"][0]["image"] == SEED_IMAGE
    assert body["spec"]["containers"][0]["pullAlways"] is True


def test_an_unknown_image_is_taken_to_have_flux_and_a_named_view_overrides(
    minicluster_crd: Path, cell: Cell
) -> None:
    unknown = _render(cell, RenderOptions(image="registry.example/lab/flux:0.70"))
    assert unknown["spec"]["flux"]["container"]["disable"] is True
    jammy = "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy"
    viewed = _render(cell, RenderOptions(image="ubuntu:jammy", flux_view=jammy))
    validate_strictly(viewed, crd_schema(minicluster_crd))
    assert viewed["spec"]["flux"]["container"] == {"image": jammy, "pullAlways": False}
    assert jammy in _flux_container_schema(minicluster_crd)["description"].split()


def test_job_outcome_reads_only_finished_conditions() -> None:
    assert job_outcome({"status": {"active": 4}}) is None
    running = {"status": {"conditions": [{"type": "Suspended", "status": "False"}]}}
    assert job_outcome(running) is None
    failed = {
        "status": {
            "conditions": [
                {"type": "FailureTarget", "status": "True"},
                {"type": "Failed", "status": "True", "reason": "DeadlineExceeded"},
            ]
        }
    }
    assert job_outcome(failed) == ("Failed", "DeadlineExceeded")
    complete = {"status": {"conditions": [{"type": "Complete", "status": "True"}]}}
    assert job_outcome(complete) == ("Complete", "")


def _pod(name: str, labels: dict[str, str] | None = None, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {}, "status": status}


def test_rank_zero_by_label_or_by_name() -> None:
    by_label = _pod("mc-abc", {"batch.kubernetes.io/job-completion-index": "0"})
    by_operator_label = _pod("mc-def", {"job-index": "0"})
    by_name = _pod("mc-0-q7x2p")
    assert [pod_index(p, "mc") for p in (by_label, by_operator_label, by_name)] == [0, 0, 0]
    assert pod_index(_pod("mc-12-q7x2p"), "mc") == 12
    assert pod_index(_pod("other-0-q7x2p"), "mc") is None
    assert rank_zero([_pod("mc-1-a"), by_name], "mc") is by_name
    assert rank_zero([_pod("mc-1-a")], "mc") is None


def test_container_states_read_as_one_phrase() -> None:
    assert container_state({"state": {"running": {"startedAt": "x"}}}) == "running"
    assert container_state(
        {"state": {"waiting": {"reason": "ImagePullBackOff", "message": "pull denied"}}}
    ) == ("waiting (ImagePullBackOff: pull denied)")
    assert container_state({"state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}) == (
        "terminated (exit 137, OOMKilled)"
    )
    assert container_state({}) == "unknown"
    pending = _pod("mc-0-a", phase="Pending")
    assert describe_pods([pending], "mc") == [
        {"pod": "mc-0-a", "rank": 0, "phase": "Pending", "node": None, "containers": {}}
    ]


def test_events_are_ours_newest_last_and_bounded() -> None:
    events = [
        {
            "involvedObject": {"kind": "Pod", "name": f"mc-{i}-a"},
            "reason": "R",
            "type": "Normal",
            "message": f"m{i}",
            "lastTimestamp": f"2026-01-01T00:00:{i:02d}Z",
        }
        for i in range(30)
    ] + [{"involvedObject": {"kind": "Pod", "name": "mcx-0-a"}, "reason": "R", "message": "no"}]
    lines = event_lines(events, "mc")
    assert len(lines) == 20
    assert lines[-1] == "2026-01-01T00:00:29Z Normal R Pod/mc-29-a: m29"
    assert not any("mcx" in line for line in lines)


def test_digests_and_flux_versions() -> None:
    assert image_digest("docker-pullable://ghcr.io/x/y@sha256:abc") == "sha256:abc"
    assert image_digest("ghcr.io/x/y:tag") is None
    assert flux_version_from_log('KARY {"meta": "cell", "flux_version": "0.66.0"}\n') == "0.66.0"
    assert flux_version_from_log("commands:    \t\t 0.59.0-12-gabc\n") == "0.59.0-12-gabc"
    assert flux_version_from_log("no version here") is None


def test_a_cluster_files_worker_group_is_rendered_as_the_operator_reads_it(
    minicluster_crd: Path, cell: Any
) -> None:
    from experiments.model.cluster_spec import load_cluster_spec
    from experiments.resources import resource_dir

    p5 = load_cluster_spec(resource_dir("clusters") / "eks-p5-efa.yaml")
    options = RenderOptions(node_selector=p5.node_selector, tolerations=tuple(p5.tolerations))
    document = _render(cell, options)
    # spec.pod.nodeSelector and spec.pod.tolerations are what the operator copies onto
    # the Job's pod template (controllers/flux/job.go at the pinned commit).
    validate_strictly(document, crd_schema(minicluster_crd))
    assert document["spec"]["pod"] == {
        "nodeSelector": {"alpha.eksctl.io/nodegroup-name": "workers"},
        "tolerations": [
            {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Equal", "value": "true"}
        ],
    }
    assert "pod" not in _render(cell, RenderOptions())["spec"]  # no cluster file, no pod section


def test_a_plan_with_a_cluster_file_renders_its_worker_group(tmp_path: Path) -> None:
    from experiments import api
    from experiments.model.sweep import Sweep
    from experiments.resources import resource_dir

    sweep = Sweep(
        exact_nodes=4,
        topos=["kary:2"],
        sizes=["1M"],
        cluster=resource_dir("clusters") / "eks-p5-efa.yaml",
        data_dir=tmp_path / "raw",
    )
    render = api.plan(sweep).render
    assert render.node_selector == {"alpha.eksctl.io/nodegroup-name": "workers"}
    assert [t["key"] for t in render.tolerations] == ["nvidia.com/gpu"]
