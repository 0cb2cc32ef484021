"""benchmarks/fidelity.py says what made its samples, per place, under the table's title,
keeps it in its JSON, and refuses samples of two templates or kary commits (the JSON
written first); samples kept before it recorded them say so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from experiments.backends.base import RunResult
from experiments.model.render import template_hash
from experiments.version import kary_commit

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import fidelity  # noqa: E402

SCRIPT = [sys.executable, str(REPO / "benchmarks" / "fidelity.py"), "--from-json"]
KEPT = REPO / "benchmarks" / "results" / "fidelity-flux-0.88-2cores.json"
T1, T2 = "a727ad31466fe48a", "34a26727090491be"
RECORDED = ("template_hash", "kary_commit", "started", "finished")


def _run(template: str = T1, commit: str | None = "0123456789ab", minute: int = 0) -> dict:
    return {
        "cell": "8|kary:1",
        "iteration": 0,
        "samples": ["64M"],
        "template_hash": template,
        "kary_commit": commit,
        "started": f"2026-11-26T20:{minute:02d}:00+00:00",
        "finished": f"2026-11-26T20:{minute:02d}:10+00:00",
    }


def _data(real: list[dict] | None, emulated: list[dict] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "flux_version": "0.88.0",
        "sizes": ["64M"],
        "nodes": [8],
        "cells": [[8, "kary:1"], [8, "kary:7"]],
        "iters": 3,
        "seconds": 1.0,
        "samples": {
            "flux": {"8|kary:1|64M": [2.0, 2.1, 2.2], "8|kary:7|64M": [4.0, 4.1, 4.2]},
            "local": {"8|kary:1|64M": [2.2, 2.3, 2.4], "8|kary:7|64M": [4.4, 4.5, 4.6]},
        },
    }
    if real is not None:
        data["runs"] = {"flux": real, "local": emulated or []}
    return data


def _replay(tmp_path: Path, data: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    saved = tmp_path / "samples.json"
    saved.write_text(json.dumps(data))
    return subprocess.run([*SCRIPT, str(saved)], capture_output=True, text=True, check=False)


def test_each_place_says_what_made_its_samples_under_the_title() -> None:
    data = _data([_run(minute=1), _run(minute=3)], [_run(minute=2), _run(minute=4)])
    lines = fidelity.table(data).splitlines()
    assert lines[0].startswith("fidelity: emulator vs flux-core 0.88.0 (test instance)")
    assert lines[1:4] == [
        f"real Flux: made by template {T1}, kary commit 0123456789ab, "
        "2026-11-26T20:01:00+00:00 to 2026-11-26T20:03:10+00:00",
        f"emulator: made by template {T1}, kary commit 0123456789ab, "
        "2026-11-26T20:02:00+00:00 to 2026-11-26T20:04:10+00:00",
        "",
    ]


def test_a_run_that_gave_no_sample_is_not_what_made_the_table() -> None:
    spoiled = {**_run(T2, minute=9), "samples": []}
    text = fidelity.table(_data([_run(), spoiled], [_run()]))
    assert T2 not in text
    assert "to 2026-11-26T20:00:10+00:00" in text.splitlines()[1]


def test_samples_kept_before_kary_recorded_them_say_so(tmp_path: Path) -> None:
    done = subprocess.run([*SCRIPT, str(KEPT)], capture_output=True, text=True, check=False)
    assert done.stderr == ""  # its verdict's exit status is its own (1: cells outside x1.5)
    assert done.stdout.splitlines()[1] == (
        "template and kary commit not recorded (samples kept before kary recorded them)"
    )
    assert "made by" not in done.stdout  # nothing made up for them


@pytest.mark.parametrize(
    ("real", "emulated", "said"),
    [
        (
            [_run(), _run(T2)],
            [_run()],
            f"the runs come from 2 template hashes ({T2}: real Flux; {T1}: real Flux, emulator)",
        ),
        (
            [_run()],
            [_run(commit="0123456789ab-dirty")],
            "the runs come from 2 kary commits (0123456789ab: real Flux; "
            "0123456789ab-dirty: emulator)",
        ),
    ],
)
def test_samples_of_two_templates_or_commits_make_no_table(
    tmp_path: Path, real: list[dict], emulated: list[dict], said: str
) -> None:
    done = _replay(tmp_path, _data(real, emulated))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [f"fidelity.py: refused: {said}"]


def test_a_cell_run_records_what_the_runner_would() -> None:
    class Backend:
        def run(self, cell: Any, rendered: Any, timeout: float) -> RunResult:
            return RunResult(log="", rc=0)

    got, made = fidelity.run_cell(Backend(), 4, "kary:1", [1 << 20])
    assert got == {}
    assert made["template_hash"] == template_hash()
    assert made["kary_commit"] == kary_commit()
    assert made["started"] <= made["finished"]


def test_a_measurement_of_mixed_runs_is_kept_then_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    class Place:
        flux_version = "0.88.0"

        def __init__(self, **_: Any) -> None:
            pass

        def __enter__(self) -> Place:
            return self

        def __exit__(self, *_: object) -> None:
            return None

        def fidelity_key(self, version: str) -> str:
            return "key"

        def calibration(self) -> Any:
            return type("Calibration", (), {"record": dict})()

    def run_cell(backend: Any, nodes: int, topo: str, sizes: list[int]) -> tuple[dict, dict]:
        # The emulator's runs rendered from another template than real Flux's.
        made = _run(T1 if isinstance(backend, Real) else T2)
        return {"64M": 2.0}, {k: v for k, v in made.items() if k in RECORDED}

    class Real(Place):
        pass

    monkeypatch.setattr(fidelity, "FluxBackend", Real)
    monkeypatch.setattr(fidelity, "EmulatorBackend", Place)
    monkeypatch.setattr(fidelity, "run_cell", run_cell)
    monkeypatch.setattr(fidelity, "flux_on_path", lambda: "/usr/bin/flux")
    monkeypatch.setattr(
        fidelity, "record_fidelity", lambda *a: pytest.fail("a refused run records nothing")
    )
    saved = tmp_path / "samples.json"
    argv = ["fidelity.py", "--nodes", "4", "--sizes", "64M", "--iters", "1", "--json", str(saved)]
    monkeypatch.setattr(sys, "argv", [*argv, "--topos", "kary:1"])
    assert fidelity.main() == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"fidelity.py: refused: the runs come from 2 template hashes ({T2}: emulator; "
        f"{T1}: real Flux)"
    )
    kept = json.loads(saved.read_text())
    assert kept["samples"] == {"flux": {"4|kary:1|64M": [2.0]}, "local": {"4|kary:1|64M": [2.0]}}
    assert [r["template_hash"] for r in kept["runs"]["flux"]] == [T1]
    assert kept["runs"]["local"][0] == {
        "cell": "4|kary:1",
        "iteration": 0,
        "samples": ["64M"],
        "template_hash": T2,
        "kary_commit": "0123456789ab",
        "started": "2026-11-26T20:00:00+00:00",
        "finished": "2026-11-26T20:00:10+00:00",
    }
