"""The emulator's CPU costs are scaled to the machine it runs on, cached per machine, and
recorded in every emulated cell's run.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from experiments.cli import app
from experiments.emulator.calibration import (
    REFERENCE_PROBE_MS_PER_MIB,
    calibrated_costs,
    machine_key,
    probe_ms_per_mib,
)
from experiments.emulator.cpu import DEFAULT_COSTS


def _never() -> float:
    raise AssertionError("probed although a calibration of this machine was cached")


def test_the_probe_measures_cpu_time_per_mib() -> None:
    measured = probe_ms_per_mib(mib=4, rounds=2)
    # SHA-1 and two copies of 1 MiB: well under 100 ms on any machine kary runs on.
    assert 0 < measured < 100


def test_a_machine_twice_as_slow_burns_twice_the_cpu_and_the_result_is_cached(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "calibration.json"
    slow = calibrated_costs(cache, probe=lambda: 2 * REFERENCE_PROBE_MS_PER_MIB)
    assert slow.scale == 2.0
    assert slow.costs.text() == (
        f"{2 * DEFAULT_COSTS.relay_ms:g},{2 * DEFAULT_COSTS.serve_ms:g},"
        f"{2 * DEFAULT_COSTS.client_ms:g}"
    )
    assert slow.machine == machine_key()
    again = calibrated_costs(cache, probe=_never)  # read back, not probed again
    assert again == slow


def test_another_machines_or_an_unreadable_cache_is_probed_again(tmp_path: Path) -> None:
    cache = tmp_path / "calibration.json"
    cache.write_text(json.dumps({"machine": "elsewhere", "probe_ms_per_mib": 9.0}))
    assert calibrated_costs(cache, probe=lambda: REFERENCE_PROBE_MS_PER_MIB).scale == 1.0
    cache.write_text("{not json")
    fast = calibrated_costs(cache, probe=lambda: REFERENCE_PROBE_MS_PER_MIB / 2)
    assert fast.scale == 0.5
    assert json.loads(cache.read_text())["probe_ms_per_mib"] == REFERENCE_PROBE_MS_PER_MIB / 2


@pytest.mark.parametrize(("probe", "scale"), [(1000.0, 4.0), (0.001, 0.25)])
def test_a_probe_far_off_the_reference_is_clamped(
    tmp_path: Path, probe: float, scale: float
) -> None:
    assert calibrated_costs(tmp_path / "c.json", probe=lambda: probe).scale == scale


def test_an_emulated_cell_runs_with_this_machines_costs_and_says_so(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    args = ["run", "--backend", "local", "--exact-nodes", "3", "--topo", "kary:1"]
    result = CliRunner().invoke(app, [*args, "--sizes", "1M", "--data-dir", str(raw)])
    assert result.exit_code == 0, result.output
    (path,) = raw.rglob("run.json")
    emulator = json.loads(path.read_text())["emulator"]
    calibration = calibrated_costs(probe=_never)  # the run cached this machine's
    assert emulator["cpu_costs_ms_per_mib"] == calibration.costs.text()
    assert emulator["calibration"] == calibration.record()
    assert emulator["calibration"]["reference_ms_per_mib"] == REFERENCE_PROBE_MS_PER_MIB


def test_a_deliberate_mis_calibration_burns_that_much_more_and_is_recorded(
    tmp_path: Path,
) -> None:
    # benchmarks/fidelity.py --emulator-scale uses this to show its check can fail.
    from experiments.backends.emulator.backend import EmulatorBackend
    from experiments.model.plan import Cell
    from experiments.model.render import render_cell

    cell = Cell(3, "kary:1", 0, (1 << 20,), ("all",))
    rendered = render_cell(3, "kary:1", [1 << 20], ["all"], cell.id)
    with EmulatorBackend(workdir=tmp_path, cpu_scale=4.0) as backend:
        result = backend.run(cell, rendered, timeout=120)
    emulator = result.provenance["emulator"]
    costs = calibrated_costs(probe=_never).costs
    assert emulator["cpu_costs_ms_per_mib"] == (
        f"{round(costs.relay_ms * 4, 3):g},{round(costs.serve_ms * 4, 3):g},"
        f"{round(costs.client_ms * 4, 3):g}"
    )
    assert emulator["cpu_scale"] == 4.0


def test_the_fidelity_an_emulated_cell_carries_is_this_machines_when_measured_here(
    tmp_path: Path,
) -> None:
    from experiments.emulator import FIDELITY
    from experiments.emulator.calibration import fidelity_here, record_fidelity

    cache = tmp_path / "fidelity.json"
    assert fidelity_here(FIDELITY, cache) == (
        f"{FIDELITY} (measured on another machine; `make bench` with flux-core on PATH "
        "measures this one)"
    )
    record_fidelity("on this machine: cells within x1.5: 4/4", cache)
    assert fidelity_here(FIDELITY, cache) == "on this machine: cells within x1.5: 4/4"
    cache.write_text(json.dumps({"machine": "elsewhere", "statement": "theirs"}))
    assert fidelity_here(FIDELITY, cache).startswith(FIDELITY + " (measured on another")
