"""The kubernetes backend through the real `kubernetes` client against a fake API server."""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from fake_apiserver import IMAGE_DIGEST, OPERATOR_DIGEST, OPERATOR_IMAGE, Scenario, write_kubeconfig
from strict_schema import crd_schema

from experiments.backends import BackendError, make_backend
from experiments.backends.base import BackendSettings
from experiments.backends.kubernetes.backend import KubernetesBackend
from experiments.backends.kubernetes.pod_watch import StartLimits
from experiments.errors import UserError
from experiments.model.pins import OPERATOR_SOURCE_UNKNOWN
from experiments.model.render import DEFAULT_IMAGE, RenderOptions

REPO = Path(__file__).resolve().parents[2]
MC_PATH = "/apis/flux-framework.org/v1alpha2/namespaces/default/miniclusters"
JOBS_PATH = "/apis/batch/v1/namespaces/default/jobs"
INSTALL = (
    "kubectl apply -f https://raw.githubusercontent.com/flux-framework/flux-operator/0d75cef855dee5351d68e32ec139a70e892b5268/"
    "examples/dist/flux-operator.yaml"
)


def _nothing_left(server: Any, name: str = "flux-sample") -> bool:
    cluster = server.cluster
    return name not in cluster.miniclusters and cluster.pods("default", name) == []


def test_a_cell_runs_and_leaves_nothing_behind(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    with make_backend() as backend:
        result = backend.run(cell, rendered, 10)
    assert (result.rc, result.timed_out, result.error) == (0, False, None)
    assert result.log == apiserver.cluster.scenario.log.replace("{cell}", cell.id)
    assert result.provenance == {
        "cluster": "fake",
        "namespace": "default",
        "minicluster": "flux-sample",
        "sweep": "sweep-1",
        "layout": "per-cell",
        "kubernetes_version": "v1.33.1-eks-fake",
        "operator_image": OPERATOR_IMAGE,
        "operator_digest": OPERATOR_DIGEST,
        # A digest pins a build, not its source: :latest has no per-commit tag (issue 59, 5).
        "operator_source": OPERATOR_SOURCE_UNKNOWN.format(commit="0d75cef8"),
        "instance_type": "c5a.4xlarge",
        "zones": ["us-east-2b"],
        "nodes_used": 4,
        # Each rank's node as the cluster labels it, and the worker nodes there were.
        "capacity": "on-demand",
        "rank_nodes": [
            {
                "rank": rank,
                "node": f"node-{rank}",
                "capacity": "on-demand",
                "instance_type": "c5a.4xlarge",
                "instance_id": f"i-{rank:017x}",
                "zone": "us-east-2b",
            }
            for rank in range(4)
        ],
        "node_set": {"nodes": 32, "digest": result.provenance["node_set"]["digest"]},
        "container_exit_code": 0,
        "image": DEFAULT_IMAGE,
        "image_digest": IMAGE_DIGEST,
        "flux_version": "0.66.0",
    }
    (created,) = apiserver.cluster.created
    assert created["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "kary",
        "kary/owner": "tester",
        "kary/cell": "4_kary-2_0",
        "kary/sweep": "sweep-1",
    }
    # It watched the Job rather than polling it, and deleted what it made.
    assert any(q.get("watch") == "true" for _, p, q in apiserver.cluster.requests if p == JOBS_PATH)
    assert apiserver.cluster.count("DELETE", f"{MC_PATH}/flux-sample") == 1
    assert _nothing_left(apiserver)


def test_the_backend_is_found_by_name_and_configured_from_settings(apiserver: Any) -> None:
    backend = make_backend(
        "kubernetes",
        BackendSettings(render=RenderOptions(namespace="bench"), options={"sweep_id": "s9"}),
    )
    assert isinstance(backend, KubernetesBackend)
    assert (backend.namespace, backend.labels) == ("bench", {"kary/sweep": "s9"})


@pytest.mark.parametrize(
    ("spec", "percent"), [("eks-30.yaml", 10), ("gke-30.yaml", 15), (None, 15)]
)
def test_the_nested_driver_keeps_free_what_the_provider_s_kubelet_evicts_under(
    apiserver: Any, spec: str | None, percent: int
) -> None:
    """EKS AL2023's nodeadm sets nodefs.available<10% and no imagefs signal (issue 59, 2);
    GKE's cannot be read without a node: the kubelet's default 15%, assumed."""
    from experiments.model.cluster_spec import load_cluster_spec

    cluster = load_cluster_spec(REPO / "clusters" / spec) if spec else None
    backend = make_backend("kubernetes", BackendSettings(cluster=cluster))
    assert isinstance(backend, KubernetesBackend)
    assert backend.eviction_percent == percent


def test_a_failed_job_is_a_failure_with_pods_states_and_events(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    apiserver.cluster.scenario = Scenario(
        outcome="Failed", exit_code=3, log='KARY {"meta": "done", "failed_steps": 2}\n'
    )
    with make_backend() as backend:
        result = backend.run(cell, rendered, 10)
    assert result.rc == 1  # the log's count of failed steps, not the container's status
    assert result.error == (
        "Job flux-sample failed: BackoffLimitExceeded: Job has reached the specified backoff "
        "limit; rank 0's container exited with 3"
    )
    diagnostics = result.provenance["diagnostics"]
    assert diagnostics["pods"][0] == {
        "pod": "flux-sample-0-x0z",
        "rank": 0,
        "phase": "Failed",
        "node": "node-0",
        "containers": {"flux-sample": "terminated (exit 3, Error)"},
    }
    assert [p["phase"] for p in diagnostics["pods"]] == [
        "Failed",
        "Succeeded",
        "Succeeded",
        "Succeeded",
    ]
    (event,) = diagnostics["events"]  # the unrelated pod's event is left out
    assert event.endswith(
        "Warning BackOff Pod/flux-sample-1-x1z: Back-off restarting failed container (x3)"
    )
    assert _nothing_left(apiserver)


def test_a_cell_that_runs_too_long_is_stopped_and_deleted(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    apiserver.cluster.scenario = Scenario(outcome="never", log="KARY partial\n")
    with make_backend() as backend:
        result = backend.run(cell, rendered, 0.5)
    assert (result.rc, result.timed_out) == (None, True)
    assert result.error == "MiniCluster flux-sample did not finish within 0.5 s and was deleted"
    assert result.log == "KARY partial\n"  # what rank 0 had written so far
    assert {p["phase"] for p in result.provenance["diagnostics"]["pods"]} == {"Running"}
    assert _nothing_left(apiserver)


def test_500s_and_dropped_connections_are_retried(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    apiserver.cluster.scenario = Scenario(run_s=0.3)
    apiserver.cluster.fault(JOBS_PATH, 500, "drop", 503)
    apiserver.cluster.fault("/api/v1/namespaces/default/pods", "drop", 500)
    with make_backend() as backend:
        result = backend.run(cell, rendered, 10)
    assert (result.rc, result.error) == (0, None)
    assert apiserver.cluster.faults[JOBS_PATH] == []  # every injected fault was met
    assert _nothing_left(apiserver)


def test_an_api_that_keeps_failing_fails_the_cell_and_still_cleans_up(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    apiserver.cluster.fault(JOBS_PATH, *[500] * 20)
    with make_backend() as backend, pytest.raises(BackendError) as caught:
        backend.run(cell, rendered, 10)
    assert str(caught.value) == (
        f"the Kubernetes API at {apiserver.url} did not list Job flux-sample after 3 attempts: "
        "500 Internal Server Error"
    )
    assert _nothing_left(apiserver)


def test_a_missing_crd_says_how_to_install_the_operator(apiserver: Any, make_backend: Any) -> None:
    apiserver.cluster.crd = False
    with pytest.raises(UserError) as caught:
        make_backend().up()
    assert str(caught.value) == (
        "the Flux Operator's MiniCluster CRD (miniclusters.flux-framework.org/v1alpha2) is not "
        f"installed on the cluster at {apiserver.url}: install the operator with `{INSTALL}`"
    )


def test_an_unreachable_cluster_is_one_line_and_quick(make_backend: Any) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    write_kubeconfig(Path(os.environ["KUBECONFIG"]), f"http://127.0.0.1:{port}")
    started = time.monotonic()
    with pytest.raises(UserError) as caught:
        make_backend().up()
    assert time.monotonic() - started < 5
    message = str(caught.value)
    assert message.startswith(
        f"cannot reach the Kubernetes cluster: the Kubernetes API at http://127.0.0.1:{port} "
        "did not answer after 3 attempts: "
    )
    assert "\n" not in message


def test_an_unauthorised_client_is_one_line(apiserver: Any, make_backend: Any) -> None:
    write_kubeconfig(Path(os.environ["KUBECONFIG"]), apiserver.url, token="wrong")
    with pytest.raises(UserError) as caught:
        make_backend().up()
    assert str(caught.value) == (
        f"the Kubernetes API at {apiserver.url} refused to answer (401 Unauthorized): check the "
        "credentials and permissions of your kubeconfig context 'fake'"
    )


def test_no_kubeconfig_is_one_line(make_backend: Any) -> None:
    with pytest.raises(UserError) as caught:
        make_backend().up()
    assert str(caught.value).startswith("no usable kubeconfig (")


def test_the_curve_secret_key_never_leaves_the_backend(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    secret = "Zr8v#3kq!wQ9mPz=Lx2@bN7tH^cJ4sD&fG6yA1e"
    apiserver.cluster.scenario = Scenario(
        log=(
            "#   ****  Generated on 2023-04-26 by CZMQ  ****\n"
            "curve\n"
            '    public-key = "Uh3S1ZJ#bAq2t>1c^*Pp{6xCvhP(5Gj@(2+Zm-XJ"\n'
            f'    secret-key = "{secret}"\n'
            'KARY {"meta": "done", "failed_steps": 0}\n'
        )
    )
    with make_backend() as backend:
        result = backend.run(cell, rendered, 10)
    assert secret not in result.log
    assert "secret-key = <redacted>" in result.log
    assert "public-key" in result.log


def test_a_leftover_minicluster_of_karys_is_replaced(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    with make_backend() as backend:
        backend.run(cell, rendered, 10)
        # As if a crash had left it: put it back, then run the cell again.
        apiserver.cluster.miniclusters["flux-sample"] = apiserver.cluster.created[0]
        result = backend.run(cell, rendered, 10)
    assert result.rc == 0
    assert apiserver.cluster.count("POST", MC_PATH) == 3  # first run, refused, retried
    assert _nothing_left(apiserver)


def test_someone_elses_minicluster_is_left_alone(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    apiserver.cluster.miniclusters["flux-sample"] = {"metadata": {"name": "flux-sample"}}
    with make_backend() as backend, pytest.raises(BackendError) as caught:
        backend.run(cell, rendered, 10)
    assert str(caught.value) == (
        "a MiniCluster flux-sample that kary did not create exists in namespace default: "
        "delete it or choose another --name"
    )
    assert "flux-sample" in apiserver.cluster.miniclusters


def test_pods_that_will_not_go_are_noted_not_waited_on_forever(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    apiserver.cluster.scenario = Scenario(pods_stick=True)
    with make_backend(delete_timeout_s=0.2) as backend:
        result = backend.run(cell, rendered, 10)
    assert result.rc == 0
    assert result.provenance["cleanup"] == (
        "4 pod(s) of MiniCluster flux-sample still there 0.2 s after it was deleted"
    )


def test_an_operator_that_makes_no_job_fails_the_cell(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    apiserver.cluster.scenario = Scenario(job_appears_s=60)
    with make_backend(job_start_timeout_s=0.3) as backend, pytest.raises(BackendError) as caught:
        backend.run(cell, rendered, 10)
    assert str(caught.value) == (
        "the Flux Operator made no Job for MiniCluster flux-sample within 0.3 s: is it running? "
        "(kubectl -n operator-system get pods)"
    )
    assert "flux-sample" not in apiserver.cluster.miniclusters


def test_ctrl_c_while_waiting_deletes_the_minicluster(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    apiserver.cluster.scenario = Scenario(outcome="never")
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    with make_backend() as backend:
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                backend.run(cell, rendered, 30)
        finally:
            timer.cancel()
    assert apiserver.cluster.count("DELETE", f"{MC_PATH}/flux-sample") == 1
    assert _nothing_left(apiserver)


def test_a_field_the_crd_does_not_know_is_refused_not_pruned(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any, minicluster_crd: Path
) -> None:
    # The fake now answers as a real API server does under strict field validation.
    apiserver.cluster.schema = crd_schema(minicluster_crd)
    document = yaml.safe_load(rendered.minicluster_yaml)
    document["spec"]["containers"][0]["comand"] = "hostname"
    misspelt = dataclasses.replace(rendered, minicluster_yaml=yaml.safe_dump(document))
    with make_backend() as backend:
        with pytest.raises(BackendError) as caught:
            backend.run(cell, misspelt, 10)
        assert str(caught.value) == (
            "the API refused MiniCluster flux-sample: strict decoding error: "
            'unknown field "spec.containers[0].comand"'
        )
        # The request asked for Strict, and nothing was created.
        posts = [q for m, p, q in apiserver.cluster.requests if m == "POST" and p == MC_PATH]
        assert posts == [{"fieldValidation": "Strict"}]
        assert apiserver.cluster.created == []
        # The same MiniCluster spelt right is created.
        assert backend.run(cell, rendered, 10).error is None


def test_past_the_start_timeout_the_watch_keeps_its_window_instead_of_polling(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    # The Job shows at once and finishes after 3.5 s; the start timeout (0.3 s) is long
    # past by then.  Watches of up to 10 s: one or two, not one per second.
    apiserver.cluster.scenario = Scenario(run_s=3.5)
    slow_look = StartLimits(check_every_s=60)  # pods looked at less often than the window
    with make_backend(
        job_start_timeout_s=0.3, watch_window_s=10.0, start_limits=slow_look
    ) as backend:
        result = backend.run(cell, rendered, 30)
    assert result.error is None
    watches = [
        q for m, p, q in apiserver.cluster.requests if p == JOBS_PATH and q.get("watch") == "true"
    ]
    assert 1 <= len(watches) <= 2, watches
    # The first window is set before the Job is seen (bounded by the start timeout).
    assert all(int(q["timeoutSeconds"]) == 10 for q in watches[1:]), watches
