"""RBAC: kary asks the API server (SelfSubjectAccessReview) before it makes anything."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
from fake_apiserver import PINNED_VIEW
from typer.testing import CliRunner

from experiments.backends.kubernetes.api import RetryPolicy
from experiments.backends.kubernetes.permissions import required_permissions
from experiments.cli import app
from experiments.errors import UserError


def test_every_permission_kary_uses_is_reviewed_and_none_is_missing(
    apiserver: Any, make_backend: Any
) -> None:
    with make_backend() as backend:
        backend.up()
    reviews = apiserver.cluster.count("POST", "/apis/authorization.k8s.io/v1/")
    assert reviews == len(required_permissions("default")) == 13


@pytest.mark.parametrize(
    ("denied", "shown"),
    [
        # A 403 here used to turn preemption detection off without a word.
        ("list nodes", "list nodes (to detect preemption and record each rank's node)"),
        ("get pods/log", "get pods/log -n default (to read rank 0's log)"),
    ],
)
def test_a_missing_permission_is_one_line_before_any_minicluster(
    apiserver: Any, make_backend: Any, denied: str, shown: str
) -> None:
    apiserver.cluster.denied = {denied}
    with pytest.raises(UserError) as caught:
        make_backend().up()
    message = str(caught.value)
    assert message == (
        f"this kubeconfig may not {shown}: grant them (docs/running.md, 'Permissions'); "
        f"`kubectl auth can-i {shown.split(' (')[0]}` shows it"
    )
    assert apiserver.cluster.created == []


def test_kary_run_exits_2_when_nodes_may_not_be_listed(
    apiserver: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = functools.partial(RetryPolicy, backoff_s=0.01, max_backoff_s=0.05)
    monkeypatch.setattr("experiments.backends.kubernetes.backend.RetryPolicy", fast)
    apiserver.cluster.denied = {"list nodes"}
    raw = tmp_path / "raw"
    result = CliRunner().invoke(
        app,
        [
            "run", "--backend", "kubernetes", "--exact-nodes", "4", "--topo", "kary:1",
            "--sizes", "1M", "--data-dir", str(raw), "--yes", "--no-smoke",
            "--flux-view", PINNED_VIEW,
        ],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("kary: error:")]
    assert "may not list nodes" in line
    assert apiserver.cluster.created == []
    assert not list(raw.glob("**/run.json"))
