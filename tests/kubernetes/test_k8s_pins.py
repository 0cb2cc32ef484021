"""A billed run names the Flux it runs: the flux view and the operator, by digest."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from fake_apiserver import OPERATOR_IMAGE, PINNED_VIEW, Scenario, pinned_cluster_file
from fast_backend import ONE_STEP_LOG
from typer.testing import CliRunner

from experiments.backends.kubernetes.api import RetryPolicy
from experiments.cli import app
from experiments.clusters.base import operator_steps
from experiments.clusters.shell import Shell
from experiments.errors import UserError
from experiments.model.cluster_spec import load_cluster_spec

EKS_6 = Path(__file__).resolve().parents[2] / "clusters" / "eks-6.yaml"
TAGGED_VIEW = "ghcr.io/converged-computing/flux-view-ubuntu:tag-noble"


def _run(raw: Path, *args: str) -> Any:
    return CliRunner().invoke(
        app,
        [
            "run", "--backend", "kubernetes", "--exact-nodes", "4", "--topo", "kary:1",
            "--sizes", "1M", "--data-dir", str(raw), "--yes", "--no-smoke", *args,
        ],
    )  # fmt: skip


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = functools.partial(RetryPolicy, backoff_s=0.01, max_backoff_s=0.05)
    monkeypatch.setattr("experiments.backends.kubernetes.backend.RetryPolicy", fast)


def test_a_billed_run_refuses_a_flux_view_on_a_tag_before_asking_the_cluster(
    apiserver: Any, tmp_path: Path
) -> None:
    result = _run(tmp_path / "raw")
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"kary: error: the flux view {TAGGED_VIEW} is not pinned by digest, so a billed run "
        "could not say which build it ran: pass --flux-view REPO@sha256:DIGEST (a sweep "
        f"file: flux_view) (`crane digest {TAGGED_VIEW}` or `docker buildx imagetools "
        f"inspect {TAGGED_VIEW}` prints it)\n"
    )
    assert apiserver.cluster.requests == []


def test_the_pinned_view_is_the_one_the_minicluster_runs_and_run_json_names(
    apiserver: Any, tmp_path: Path, quick: None
) -> None:
    raw = tmp_path / "raw"
    apiserver.cluster.scenario = Scenario(log=ONE_STEP_LOG)
    result = _run(raw, "--flux-view", PINNED_VIEW, "--layout", "per-cell")
    assert result.exit_code == 0, result.output
    (created,) = apiserver.cluster.created
    assert created["spec"]["flux"]["container"]["image"] == PINNED_VIEW
    record = json.loads((raw / "4" / "kary-1" / "0" / "run.json").read_text())
    assert record["flux_view"] == PINNED_VIEW
    assert record["operator_image"] == OPERATOR_IMAGE


def test_an_operator_on_a_tag_is_refused_before_any_minicluster(
    apiserver: Any, make_backend: Any
) -> None:
    apiserver.cluster.operator_image = "ghcr.io/flux-framework/flux-operator:latest"
    with pytest.raises(UserError) as caught:
        make_backend().up()
    message = str(caught.value)
    assert message.startswith(
        "the Flux Operator's controller image ghcr.io/flux-framework/flux-operator:latest is "
        "not pinned by digest, so a billed run could not say which build it ran: pin it with "
        "`kubectl -n operator-system set image deployment/operator-controller-manager "
        "manager=ghcr.io/flux-framework/flux-operator@sha256:DIGEST`"
    )
    assert "\n" not in message
    assert apiserver.cluster.created == []


def test_cluster_up_pins_the_operator_the_cluster_file_names_and_refuses_a_tag(
    tmp_path: Path,
) -> None:
    spec = load_cluster_spec(pinned_cluster_file(EKS_6))
    assert spec.operator_image == OPERATOR_IMAGE
    shown = [step.shown for step in operator_steps(Shell(), spec.operator_image)]
    assert shown[1] == (
        "kubectl -n operator-system set image deployment/operator-controller-manager "
        f"manager={OPERATOR_IMAGE}"
    )
    assert shown[2].startswith("kubectl -n operator-system rollout status")  # waits for it
    assert load_cluster_spec(EKS_6).operator_image is None
    tagged = tmp_path / "eks-6.yaml"
    tagged.write_text(
        pinned_cluster_file(EKS_6)
        .read_text()
        .replace(OPERATOR_IMAGE, "ghcr.io/flux-framework/flux-operator:latest")
    )
    with pytest.raises(UserError, match=r"kary/operator-image .* is not pinned by digest"):
        load_cluster_spec(tagged)
