"""`kary cluster up` shows the cost and asks before anything bills; --yes skips; no TTY refuses."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from experiments.cli import app

runner = CliRunner()
CLUSTERS = Path(__file__).resolve().parents[2] / "clusters"
EKS_30 = CLUSTERS / "eks-30.yaml"
GKE_30 = CLUSTERS / "gke-30.yaml"
NAME = "kary-topology-30"
# 30 x $0.616 + control plane $0.10 + 30 disks of 200 GB gp2 at $0.10 per GB-month / 730 h
# + eksctl's NAT gateway ($0.045/h) + 31 public IPv4 addresses at $0.005/h.
EKS_COST = (
    "cost: $19.60/h (30 x c5a.4xlarge at $0.6160/h + control plane $0.10/h + disks 30 x 200 GiB "
    "gp2 at $0.0274/h + NAT gateway 1 x $0.0450/h + public IPv4 31 x $0.0050/h; prices as of "
)
EKS_AT_MOST = "at most $78.41 if it lives until it expires (4 h, 2026-06-27 19:30 UTC)"
EKS_QUESTION = f"Create {NAME}? It bills $19.60/h until it is deleted [y/N]:"


def _terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("experiments.confirm.stdin_is_terminal", lambda: True)


def test_without_a_terminal_or_yes_it_refuses_before_any_cloud_call(fake_cloud: Any) -> None:
    result = runner.invoke(app, ["cluster", "up", str(EKS_30)])
    assert result.exit_code == 2
    err = result.stderr.splitlines()
    assert err[-1] == (
        f"kary: error: creating {NAME} bills $19.60/h and there is no terminal to confirm it: "
        "check the plan above and add --yes"
    )
    # The plan and both figures are on screen before the refusal.
    assert err[0] == f"kary cluster up {EKS_30}:"
    assert any(line.startswith(EKS_COST) for line in err)
    assert EKS_AT_MOST in err
    assert fake_cloud.calls() == []
    assert fake_cloud.running() == []


def test_a_no_at_the_question_creates_nothing(
    fake_cloud: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _terminal(monkeypatch)
    result = runner.invoke(app, ["cluster", "up", str(EKS_30)], input="n\n")
    assert result.exit_code == 1
    err = result.stderr.splitlines()
    assert EKS_AT_MOST in err
    assert EKS_QUESTION in result.stderr
    assert result.stderr.endswith("kary: nothing was created\n")
    assert fake_cloud.calls() == []


def test_a_yes_at_the_question_creates_the_cluster(
    fake_cloud: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _terminal(monkeypatch)
    result = runner.invoke(app, ["cluster", "up", str(GKE_30), "--no-operator"], input="y\n")
    assert result.exit_code == 0, result.output
    assert f"Create {NAME}? It bills $44.51/h until it is deleted [y/N]:" in result.stderr
    assert f"gke:{NAME}" in fake_cloud.running()


def test_yes_skips_the_question_but_still_shows_the_cost(fake_cloud: Any) -> None:
    result = runner.invoke(app, ["cluster", "up", str(GKE_30), "--no-operator", "--yes"])
    assert result.exit_code == 0, result.output
    err = result.stderr.splitlines()
    assert "[y/N]" not in result.stderr
    assert any(line.startswith("cost: $44.51/h (30 x c2d-standard-32") for line in err)
    assert any(line.startswith("at most $178.02 if it lives until it expires (4 h") for line in err)
    assert f"gke:{NAME}" in fake_cloud.running()


def _read_until(fd: int, marker: bytes, limit_s: float = 30.0) -> bytes:
    seen = b""
    end = time.monotonic() + limit_s
    while marker not in seen:
        left = end - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no {marker!r} within {limit_s} s; the screen shows {seen!r}")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
    return seen


def test_on_a_real_terminal_it_asks_and_a_no_creates_nothing(fake_cloud: Any) -> None:
    """The question on a pseudo-terminal, as a person sees it (no CliRunner, no monkeypatch)."""
    controller, terminal = pty.openpty()
    env = dict(os.environ, COLUMNS="200")
    # Should anything still reach for AWS, it finds nothing listening here.
    env["AWS_ENDPOINT_URL"] = "http://127.0.0.1:9"
    process = subprocess.Popen(
        [sys.executable, "-c", "from experiments.cli import main; main()",
         "cluster", "up", str(EKS_30)],
        stdin=terminal, stdout=terminal, stderr=terminal, env=env, close_fds=True,
    )  # fmt: skip
    os.close(terminal)
    try:
        screen = _read_until(controller, b"[y/N]: ")
        os.write(controller, b"n\n")
        screen += _read_until(controller, b"nothing was created")
        assert process.wait(timeout=30) == 1
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(controller)
    text = screen.decode()
    # Not the tests' frozen clock: this kary runs on the real day, when eks-30.yaml's EKS
    # 1.35 is in standard support (until 2027-03-27), so its control plane bills $0.10/h:
    # 18.48 + 0.10 + disks 0.8219 (30 x 200 GB x $0.10 / 730 h) + NAT gateway 0.045
    # + public IPv4 0.155 = $19.6019/h; x 4 h = $78.41.
    assert "cost: $19.60/h" in text  # disks, the NAT gateway and public IPv4 included
    assert "at most $78.41 if it lives until it expires (4 h, " in text
    assert fake_cloud.calls() == []
