"""Odd answers from the Kubernetes API (empty, garbage, the wrong shape) at every read.

Each is one line naming the API and what kary expected, never a traceback;
a cell that meets one fails and still deletes its MiniCluster.
"""

from __future__ import annotations

from typing import Any

import pytest

from experiments.backends import BackendError
from experiments.backends.kubernetes.pod_watch import StartLimits
from experiments.errors import UserError

GROUP_PATH = "/apis/flux-framework.org/v1alpha2"
MC_PATH = f"{GROUP_PATH}/namespaces/default/miniclusters"
JOBS_PATH = "/apis/batch/v1/namespaces/default/jobs"
PODS_PATH = "/api/v1/namespaces/default/pods"
EMPTY = b""
GARBAGE = b"<html><body>502 Bad Gateway</body></html>"


def _odd(wrong_shape: bytes) -> list[Any]:
    return [
        pytest.param(EMPTY, id="empty"),
        pytest.param(GARBAGE, id="garbage"),
        pytest.param(wrong_shape, id="wrong-shape"),
    ]


def _one_line(err: BaseException, api: Any, doing: str) -> str:
    message = str(err)
    assert "\n" not in message
    assert f"the Kubernetes API at {api.url}, asked to {doing}, answered " in message
    return message


def _nothing_left(server: Any, name: str = "flux-sample") -> bool:
    cluster = server.cluster
    return name not in cluster.miniclusters and cluster.pods("default", name) == []


@pytest.mark.parametrize(
    ("path", "doing", "body"),
    [
        *[("/version", "answer", b) for b in (EMPTY, GARBAGE, b'["v1.33.1"]')],
        *[
            (GROUP_PATH, "list flux-framework.org/v1alpha2", b)
            for b in (EMPTY, GARBAGE, b'{"resources": [{"kind": "MiniCluster"}]}')
        ],
    ],
    ids=[f"{w}-{k}" for w in ("version", "crd") for k in ("empty", "garbage", "wrong-shape")],
)
def test_odd_answers_while_connecting_are_one_user_error(
    apiserver: Any, make_backend: Any, path: str, doing: str, body: bytes
) -> None:
    apiserver.cluster.fault(path, ("body", body))
    backend = make_backend()
    with pytest.raises(UserError) as caught:
        backend.up()
    message = _one_line(caught.value, apiserver, doing)
    assert message.startswith("cannot reach the Kubernetes cluster: ")
    assert apiserver.cluster.created == []


@pytest.mark.parametrize("body", _odd(b'{"items": [{"status": {"conditions": ["Complete"]}}]}'))
def test_an_odd_job_list_fails_the_cell_and_cleans_up(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any, body: bytes
) -> None:
    apiserver.cluster.fault(JOBS_PATH, ("body", body))
    with make_backend() as backend, pytest.raises(BackendError) as caught:
        backend.run(cell, rendered, 10)
    message = _one_line(caught.value, apiserver, "list Job flux-sample")
    assert "(expected" in message
    assert _nothing_left(apiserver)


@pytest.mark.parametrize(
    "body",
    _odd(
        b'{"items": [{"status": {"containerStatuses": '
        b'[{"state": {"terminated": {"exitCode": "zero"}}}]}}]}'
    ),
)
def test_an_odd_pod_list_fails_the_cell_and_cleans_up(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any, body: bytes
) -> None:
    apiserver.cluster.fault(PODS_PATH, ("body", body))
    # The pods' watch (a side look that shrugs off an odd answer) kept out of the way.
    quiet = StartLimits(check_every_s=1000)
    with make_backend(start_limits=quiet) as backend, pytest.raises(BackendError) as caught:
        backend.run(cell, rendered, 10)
    _one_line(caught.value, apiserver, "list pods")
    assert _nothing_left(apiserver)


@pytest.mark.parametrize("line", _odd(b'{"object": {"kind": "Job"}}'))
def test_one_odd_watch_line_is_read_past(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any, line: bytes
) -> None:
    # The first list passes; the watch after it streams one odd line; then all is well.
    apiserver.cluster.scenario.run_s = 0.3
    apiserver.cluster.fault(JOBS_PATH, "pass", ("stream", line + b"\n"))
    with make_backend() as backend:
        result = backend.run(cell, rendered, 10)
    assert (result.rc, result.error) == (0, None)
    assert apiserver.cluster.faults[JOBS_PATH] == []  # the odd line was met
    assert _nothing_left(apiserver)


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(GARBAGE, id="garbage"),
        pytest.param(b'{"type": "MODIFIED", "obj', id="cut-short"),
        pytest.param(b'{"type": "MODIFIED", "object": {"status": []}}', id="wrong-shape"),
    ],
)  # (an empty line is a keep-alive, and an empty watch one that ran out its window)
def test_a_watch_that_keeps_streaming_odd_lines_fails_the_cell_in_one_line(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any, line: bytes
) -> None:
    apiserver.cluster.scenario.run_s = 30.0
    apiserver.cluster.fault(JOBS_PATH, *["pass", ("stream", line + b"\n")] * 3)
    with make_backend() as backend, pytest.raises(BackendError) as caught:
        backend.run(cell, rendered, 10)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(
        f"the Kubernetes API at {apiserver.url} did not report Job flux-sample after 3 "
        f"attempts: the Kubernetes API at {apiserver.url}, asked to watch Job flux-sample, "
        "streamed "
    )
    assert _nothing_left(apiserver)


@pytest.mark.parametrize("body", _odd(b'{"metadata": {"labels": ["kary"]}}'))
def test_a_minicluster_whose_owner_cannot_be_read_is_not_deleted(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any, body: bytes
) -> None:
    theirs = {"metadata": {"name": "flux-sample", "labels": {"team": "hpc"}}}
    apiserver.cluster.miniclusters["flux-sample"] = theirs
    # The create is refused (409), then the read of the one there is odd.
    apiserver.cluster.fault(f"{MC_PATH}/flux-sample", ("body", body))
    with make_backend() as backend, pytest.raises(BackendError) as caught:
        backend.run(cell, rendered, 10)
    message = str(caught.value)
    assert message.startswith(
        "a MiniCluster flux-sample exists in namespace default and kary cannot tell whose it "
        f"is (the Kubernetes API at {apiserver.url}, asked to read a MiniCluster, answered "
    )
    assert message.endswith("): delete it or choose another --name")
    assert apiserver.cluster.miniclusters["flux-sample"] is theirs


@pytest.mark.parametrize(
    ("path", "body", "missing"),
    [
        ("/api/v1/nodes", GARBAGE, "instance_type"),
        ("/api/v1/nodes", b'{"items": "node-0"}', "instance_type"),
        ("/apis/apps/v1/namespaces/operator-system/deployments", EMPTY, "operator_image"),
    ],
    ids=["nodes-garbage", "nodes-wrong-shape", "operator-empty"],
)
def test_odd_answers_to_provenance_questions_only_cost_that_field(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any, path: str, body: bytes,
    missing: str,
) -> None:  # fmt: skip
    # Every answer to it odd: the nodes are listed at up(), at each look at the pods (a
    # rank's node gone is a preemption) and when the cell's facts are read.
    apiserver.cluster.fault(path, *[("body", body)] * 50)
    with make_backend() as backend:
        result = backend.run(cell, rendered, 10)
    assert (result.rc, result.error) == (0, None)
    assert missing not in result.provenance
    assert _nothing_left(apiserver)
