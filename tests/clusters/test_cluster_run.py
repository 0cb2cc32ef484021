"""`kary run --cluster FILE --up --down --max-cost`: fake cloud CLIs, moto and a fake API server."""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from experiments.backends.kubernetes.api import RetryPolicy
from experiments.cli import app

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "kubernetes"))
from fake_apiserver import (
    PINNED_VIEW,
    FakeApiServer,
    FakeCluster,
    Scenario,
    pinned_cluster_file,
    write_kubeconfig,
)

runner = CliRunner()
# eks-30.yaml with the operator pinned by digest, as a billed --up needs.
EKS_30 = pinned_cluster_file(Path(__file__).resolve().parents[2] / "clusters" / "eks-30.yaml")
NAME = "kary-topology-30"
CONTEXT = f"arn:aws:eks:us-east-2:123456789012:cluster/{NAME}"
SWEEP = ["--exact-nodes", "4", "--topo", "kary:2", "--sizes", "1M", "--flux-view", PINNED_VIEW]
BENCHMARK_LOG = (
    'KARY {"meta": "cell", "cell": "4/kary-2/0", "flux_version": "0.66.0"}\n'
    'KARY {"event": "create-archive", "size": "1M", "size_bytes": 1048576, "seconds": 0.5, '
    '"rc": 0}\n'
    'KARY {"event": "distribute-all-nodes", "size": "1M", "size_bytes": 1048576, '
    '"seconds": 1.25, "rc": 0}\n'
    'KARY {"meta": "done", "failed_steps": 0}\n'
)


@pytest.fixture(autouse=True)
def _fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The backend `kary run` builds keeps its retry counts, with millisecond backoffs."""
    fast = functools.partial(RetryPolicy, backoff_s=0.01, max_backoff_s=0.05)
    monkeypatch.setattr("experiments.backends.kubernetes.backend.RetryPolicy", fast)


@pytest.fixture
def apiserver() -> Iterator[FakeApiServer]:
    """The cluster's API: what `eksctl utils write-kubeconfig` would point kubectl at."""
    scenario = Scenario(log=BENCHMARK_LOG, delete_s=0.0)
    with FakeApiServer(FakeCluster(scenario=scenario)) as server:
        write_kubeconfig(Path(os.environ["KUBECONFIG"]), server.url, context=CONTEXT)
        yield server


def _run(tmp_path: Path, *extra: str) -> Any:
    return runner.invoke(
        app,
        ["run", "--cluster", str(EKS_30), *SWEEP, "--data-dir", str(tmp_path / "raw"), *extra],
    )


def test_the_dry_run_shows_the_exact_create_and_delete_commands_time_and_cost(
    tmp_path: Path, fake_cloud: Any
) -> None:
    result = _run(tmp_path, "--up", "--down", "--dry-run")
    assert result.exit_code == 0, result.output
    out = result.stdout.splitlines()
    config = Path(os.environ["XDG_STATE_HOME"]) / "kary" / "eksctl" / f"{NAME}.yaml"
    assert f"  eksctl create cluster -f {config}" in out
    delete = f"eksctl delete cluster --name {NAME} --region us-east-2 --wait"
    assert f"  on failure or Ctrl-C: {delete}" in out
    assert out[
        out.index("--down deletes it at the end, also on error, Ctrl-C or SIGTERM:") + 1
    ] == (f"  {delete}")
    assert any(line.startswith("time: ") and "provision 20 min 0 s" in line for line in out)
    assert any("teardown 10 min 0 s" in line for line in out)
    assert any(line.startswith("cost: 30 nodes (c5a.4xlarge workers)") for line in out)
    assert out[-1].startswith("at most $78.41 if it lives until it expires (4 h, ")
    assert fake_cloud.calls() == []  # a dry run touches nothing


def test_mincrit_with_an_image_whose_flux_is_too_old_is_refused_before_anything(
    tmp_path: Path, fake_cloud: Any
) -> None:
    seed = "ghcr.io/converged-computing/container-chonks:topology-flux-0.66.0"
    args = ["run", "--cluster", str(EKS_30), "--exact-nodes", "4", "--topo", "mincrit"]
    result = runner.invoke(
        app, [*args, "--sizes", "1M", "--image", seed, "--up", "--down", "--yes"]
    )
    assert result.exit_code == 2
    assert result.stderr == (
        f"kary: error: --topo mincrit needs flux-core 0.75 or later, but --image {seed} has "
        "Flux 0.66.0: choose an image with newer Flux or drop mincrit\n"
    )
    assert fake_cloud.calls() == []


def test_up_with_an_operator_on_a_tag_is_refused_before_anything(
    tmp_path: Path, fake_cloud: Any
) -> None:
    bare = Path(__file__).resolve().parents[2] / "clusters" / "eks-30.yaml"  # names no pin
    args = ["run", "--cluster", str(bare), *SWEEP, "--data-dir", str(tmp_path / "raw")]
    result = runner.invoke(app, [*args, "--up", "--down", "--yes"])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        "kary: error: the Flux Operator's controller image "
        "ghcr.io/flux-framework/flux-operator:latest is not pinned by digest"
    )
    assert f"name it in {bare} as metadata.annotations kary/operator-image: " in line
    assert fake_cloud.calls() == []


def test_plan_json_carries_the_lifecycle(tmp_path: Path, fake_cloud: Any) -> None:
    result = runner.invoke(
        app, ["plan", "--json", "--cluster", str(EKS_30), *SWEEP, "--up", "--down"]
    )
    assert result.exit_code == 0, result.output
    lifecycle = json.loads(result.stdout)["cluster_lifecycle"]
    assert f"  eksctl delete cluster --name {NAME} --region us-east-2 --wait" in lifecycle


def test_a_plan_over_max_cost_is_refused_before_anything_starts(
    tmp_path: Path, fake_cloud: Any
) -> None:
    result = _run(tmp_path, "--up", "--down", "--yes", "--max-cost", "5")
    assert result.exit_code == 2
    assert result.stderr.startswith("kary: error: the plan is estimated at $")
    assert result.stderr.endswith(
        "more than --max-cost $5.00: run fewer cells or raise --max-cost\n"
    )
    assert fake_cloud.calls() == []
    assert not (tmp_path / "raw").exists()


def test_up_run_down_end_to_end_leaves_a_result_and_no_cluster(
    tmp_path: Path, fake_cloud: Any, aws: Any, apiserver: Any
) -> None:
    aws(NAME, ["workers"])
    result = _run(tmp_path, "--up", "--down", "--yes", "--max-cost", "100")
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "raw" / "4" / "kary-2" / "0" / "run.json").read_text())
    assert record["state"] == "succeeded", record
    assert record["backend"] == "kubernetes" and record["cluster"] == NAME
    assert record["kubernetes_version"] == "v1.33.1-eks-fake"
    assert record["instance_type"] == "c5a.4xlarge" and record["zones"] == ["us-east-2b"]
    assert record["flux_version"] == "0.66.0"
    assert record["image_digest"].startswith("sha256:")
    assert [c[1] for c in fake_cloud.calls("eksctl")] == ["create", "utils", "delete"]
    assert fake_cloud.running() == []
    assert apiserver.cluster.miniclusters == {}
    # The MiniCluster carries the run's sweep id, as run.json records it.
    sweep = record["sweep"]
    assert re.fullmatch(r"[0-9]{8}t[0-9]{6}z-[0-9a-f]{4}", sweep), sweep
    # The smoke cell's MiniCluster first (a billed sweep's check, test_cluster_smoke.py).
    created = [m["metadata"]["labels"] for m in apiserver.cluster.created]
    assert [(labels["kary/sweep"], "kary/smoke" in labels) for labels in created] == [
        (sweep, True),
        (sweep, False),
    ]


def test_a_failed_up_runs_no_cell_and_leaves_nothing(
    tmp_path: Path, fake_cloud: Any, aws: Any
) -> None:
    fake_cloud.fail("EKSCTL_CREATE", "fail-halfway")
    result = _run(tmp_path, "--up", "--down", "--yes")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1].startswith(f"kary: error: creating cluster {NAME} failed")
    assert fake_cloud.running() == []
    assert not (tmp_path / "raw" / "4").exists()


def test_an_unreachable_cluster_fails_the_run_and_down_still_deletes(
    tmp_path: Path, fake_cloud: Any, aws: Any
) -> None:
    aws(NAME, ["workers"])
    # Nothing listens on port 9.
    write_kubeconfig(Path(os.environ["KUBECONFIG"]), "http://127.0.0.1:9", context=CONTEXT)
    result = _run(tmp_path, "--up", "--down", "--yes")
    assert result.exit_code == 2
    assert "kary: error: cannot reach the Kubernetes cluster: " in result.stderr
    assert fake_cloud.running() == []
    record_path = tmp_path / "raw" / "4" / "kary-2" / "0" / "run.json"
    assert not record_path.exists() or json.loads(record_path.read_text())["state"] != "succeeded"


def test_a_kubeconfig_on_another_cluster_is_refused(
    tmp_path: Path, fake_cloud: Any, apiserver: Any
) -> None:
    write_kubeconfig(Path(os.environ["KUBECONFIG"]), apiserver.url, context="kind-laptop")
    result = _run(tmp_path, "--yes")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"kary: error: the kubeconfig context 'kind-laptop' is not cluster {NAME} from "
        f"--cluster: point kubectl at it with `eksctl utils write-kubeconfig --cluster {NAME} "
        "--region us-east-2`"
    )
    assert apiserver.cluster.created == []
