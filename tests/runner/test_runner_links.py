"""`kary run --link-bandwidth`: each cell's default timeout follows the shaped links.

A cell's default timeout is 4x its prediction (at least 300 s).  A prediction
that ignores slow links lets that timeout kill a healthy cell, so the
prediction must at least cover the time the root's link needs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_backend import FakeBackend
from typer.testing import CliRunner

import experiments.backends
from experiments.backends.base import Backend, BackendSettings
from experiments.cli import app

runner = CliRunner()
MIB = 2**20


def test_the_timeout_follows_a_slow_link(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeBackend()

    def make_backend(name: str, settings: BackendSettings | None = None) -> Backend:
        assert name == "local" and settings is not None
        assert settings.links.typed("link_bandwidth") == "10Mbit"
        assert settings.links.bandwidth == 10e6 / 8
        return fake

    monkeypatch.setattr(experiments.backends, "make_backend", make_backend)
    args = ["--exact-nodes", "7", "--topo", "kary:6", "--sizes", "256M"]
    args += ["--backend", "local", "--link-bandwidth", "10Mbit", "--data-dir", str(tmp_path)]
    plan = json.loads(runner.invoke(app, ["plan", *args, "--json"]).stdout)
    predicted = plan["cells"][0]["predicted_seconds"]
    # The root sends 6 copies of 256 MiB through one 10 Mbit/s link: 1,288 s.
    link_s = 6 * 256 * MIB * 8 / 10e6
    assert predicted >= link_s

    result = runner.invoke(app, ["run", *args, "--json"])
    assert result.exit_code == 0, result.output
    [(_, _, timeout)] = fake.calls
    assert timeout == pytest.approx(4 * predicted, rel=1e-3)
    assert timeout is not None and timeout > 4 * link_s
