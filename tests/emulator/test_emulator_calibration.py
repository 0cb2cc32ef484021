"""The emulator's CPU costs are scaled to the machine it runs on, cached per machine,
recorded in every emulated cell's run.json, and burned; its fidelity is kept per emulator.

Expected numbers are written out: the reference costs are 1.5, 1 and 1 ms per MiB
(relay, serve, client: experiments/emulator/cpu.py's docstring), so a rank's copy
costs 1.5 + 2 x 1 + 1 = 4.5 ms per MiB at scale 1.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchmark_scripts import load_benchmark
from typer.testing import CliRunner

from experiments.cli import app
from experiments.emulator.calibration import (
    FidelityKey,
    calibrated_costs,
    fidelity_here,
    machine_key,
    probe_ms_per_mib,
    record_fidelity,
)

MIB = 1 << 20


def _never() -> float:
    raise AssertionError("probed although a calibration of this machine was cached")


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of this test's own, holding a calibration probed at 1 ms per MiB
    (the reference's: scale 1)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "cache" / "kary").mkdir(parents=True)
    record = {"machine": machine_key(), "probe_ms_per_mib": 1.0, "measured": "2026-11-26"}
    (tmp_path / "cache" / "kary" / "emulator-calibration.json").write_text(json.dumps(record))
    return tmp_path / "cache" / "kary"


def test_the_probe_measures_cpu_time_per_mib(monkeypatch: pytest.MonkeyPatch) -> None:
    # The probe reads this thread's CPU clock around its work and divides by the MiB
    # done, keeping the best round: on a fake clock that charges 3 ms a reading, a
    # 4 MiB round reads 3 ms over 4 MiB, whatever the machine (a bound on the real
    # figure would drift with the machine; benchmarks/emulator_cpu.py measures it).
    from experiments.emulator import calibration

    ticks = iter(range(0, 10_000, 3))
    monkeypatch.setattr(calibration.time, "thread_time", lambda: next(ticks) / 1000.0)
    assert probe_ms_per_mib(mib=4, rounds=2) == pytest.approx(3 / 4)


def test_a_machine_twice_as_slow_burns_twice_the_cpu_and_the_result_is_cached(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "calibration.json"
    slow = calibrated_costs(cache, probe=lambda: 2.0)
    assert slow.scale == 2.0
    assert slow.costs.text() == "3,2,2"
    assert slow.clamped_from is None
    assert json.loads(cache.read_text())["probe_ms_per_mib"] == 2.0
    again = calibrated_costs(cache, probe=_never)  # read back, not probed again
    assert (again.costs.text(), again.scale, again.measured) == ("3,2,2", 2.0, slow.measured)


def test_another_machines_or_an_unreadable_cache_is_probed_again(tmp_path: Path) -> None:
    cache = tmp_path / "calibration.json"
    cache.write_text(json.dumps({"machine": "elsewhere", "probe_ms_per_mib": 9.0}))
    assert calibrated_costs(cache, probe=lambda: 1.0).costs.text() == "1.5,1,1"
    cache.write_text("{not json")
    fast = calibrated_costs(cache, probe=lambda: 0.5)
    assert (fast.scale, fast.costs.text()) == (0.5, "0.75,0.5,0.5")
    assert json.loads(cache.read_text())["probe_ms_per_mib"] == 0.5


@pytest.mark.parametrize(
    ("probe", "scale", "costs", "asked"),
    [(10.0, 4.0, "6,4,4", 10.0), (0.1, 0.25, "0.375,0.25,0.25", 0.1)],
)
def test_a_probe_far_off_the_reference_is_clamped_warned_and_recorded(
    tmp_path: Path, probe: float, scale: float, costs: str, asked: float
) -> None:
    warned: list[str] = []
    cache = tmp_path / "c.json"
    calibration = calibrated_costs(cache, probe=lambda: probe, warn=warned.append)
    assert (calibration.scale, calibration.costs.text()) == (scale, costs)
    assert calibration.record()["clamped_from"] == asked
    assert warned == [
        f"kary: warning: the emulator's CPU probe here took {probe:g} ms per MiB, "
        f"x{asked:g} the reference's 1; its CPU costs are scaled x{scale:g} instead "
        "(clamped to x0.25-x4), so emulated times here may be off "
        "(emulator.calibration.clamped_from in run.json)"
    ]
    # Read back from the cache, it is still clamped and still said, once per use.
    calibrated_costs(cache, probe=_never, warn=warned.append)
    assert len(warned) == 2
    # Inside the range: nothing to say.
    quiet: list[str] = []
    assert calibrated_costs(tmp_path / "d.json", probe=lambda: 3.9, warn=quiet.append).scale == 3.9
    assert quiet == []


def test_an_emulated_cell_runs_with_this_machines_costs_and_says_so(
    tmp_path: Path, cache_home: Path
) -> None:
    raw = tmp_path / "raw"
    args = ["run", "--backend", "local", "--exact-nodes", "3", "--topo", "kary:1"]
    result = CliRunner().invoke(app, [*args, "--sizes", "1M", "--data-dir", str(raw)])
    assert result.exit_code == 0, result.output
    (path,) = raw.rglob("run.json")
    emulator = json.loads(path.read_text())["emulator"]
    assert emulator["cpu_costs_ms_per_mib"] == "1.5,1,1"
    assert emulator["calibration"]["probe_ms_per_mib"] == 1.0
    assert emulator["calibration"]["scale"] == 1.0
    assert emulator["calibration"]["clamped_from"] is None
    assert emulator["calibration"]["reference_ms_per_mib"] == 1.0
    assert len(emulator["emulator_source"]) == 16 and int(emulator["emulator_source"], 16) >= 0


class _FakeThreadClock:
    """time.thread_time that advances 1 ms a reading: burn's spin counted, not timed."""

    def __init__(self) -> None:
        self.now = 0.0
        self.readings = 0

    def __call__(self) -> float:
        self.readings += 1
        self.now += 0.001
        return self.now


def test_burn_spins_until_its_thread_used_the_cpu_it_was_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from experiments.emulator import burn

    clock = _FakeThreadClock()
    monkeypatch.setattr(burn.time, "thread_time", clock)
    burn.burn(4.5, 2 * burn.MIB)  # 9 ms asked: the start reading, then one per ms spun
    assert clock.readings == 1 + 9
    burn.burn(0.0, burn.MIB)
    burn.burn(4.5, 0)
    assert clock.readings == 10  # nothing asked, nothing read


def test_an_emulated_cell_is_given_the_scaled_costs_it_burns(
    tmp_path: Path, cache_home: Path
) -> None:
    """What the CPU an emulated cell burns rests on: the costs (x33 of the reference) it
    was given, and the work asked of it.  How much CPU that really took is measured,
    not asserted (it drifts with the machine): benchmarks/emulator_cpu.py."""
    from experiments.backends.emulator.backend import EmulatorBackend
    from experiments.model.plan import Cell
    from experiments.model.render import render_cell

    cell = Cell(3, "kary:1", 0, (8 * MIB,), ("all",))
    rendered = render_cell(3, "kary:1", [8 * MIB], ["all"], cell.id)
    with EmulatorBackend(workdir=tmp_path, cpu_scale=33.0) as backend:
        result = backend.run(cell, rendered, timeout=120)
    assert result.rc == 0, result.log[-2000:]
    emulator = result.provenance["emulator"]
    assert emulator["cpu_costs_ms_per_mib"] == "49.5,33,33"
    assert emulator["cpu_scale"] == 33.0
    # A chain of 3 delivers 8 MiB to 2 ranks: x33 asks 32 x 4.5 ms x 8 x 2 more.
    assert load_benchmark("emulator_cpu").asked_extra_s() == pytest.approx(2.304)


def _key(**changed: object) -> FidelityKey:
    fields: dict[str, object] = {
        "machine": machine_key(),
        "emulator_source": "abc",
        "cpu_costs": "1.5,1,1",
        "cpu_scale": 1.0,
        "flux_version": "0.88.0",
    }
    return FidelityKey(**{**fields, **changed})  # type: ignore[arg-type]


def test_the_fidelity_a_cell_carries_is_its_own_emulators_and_keys_never_overwrite(
    tmp_path: Path,
) -> None:
    from experiments.emulator import FIDELITY

    cache = tmp_path / "fidelity.json"
    elsewhere = (
        f"{FIDELITY} (measured on another machine or another emulator; `make bench` with "
        "flux-core on PATH measures this one)"
    )
    assert fidelity_here(FIDELITY, _key(flux_version=None), cache) == elsewhere
    calibration = {"probe_ms_per_mib": 1.0, "scale": 1.0, "clamped_from": None}
    record_fidelity("ours: cells within x1.5: 4/4", _key(), calibration, cache)
    # A deliberate x4 is another emulator: its run keeps an entry of its own.
    record_fidelity("x4: cells within x1.5: 0/4", _key(cpu_scale=4.0), calibration, cache)
    assert fidelity_here(FIDELITY, _key(flux_version=None), cache) == (
        "ours: cells within x1.5: 4/4"
    )
    assert fidelity_here(FIDELITY, _key(cpu_scale=4.0), cache) == "x4: cells within x1.5: 0/4"
    # Another source, other costs, another machine: not this emulator's fidelity.
    for other in (
        _key(emulator_source="def"),
        _key(cpu_costs="3,2,2"),
        _key(machine="elsewhere"),
    ):
        assert fidelity_here(FIDELITY, other, cache) == elsewhere
    # Each entry keeps the calibration it ran with.
    entries = json.loads(cache.read_text())["entries"]
    assert len(entries) == 2
    assert {e["key"]["cpu_scale"] for e in entries.values()} == {1.0, 4.0}
    assert all(e["calibration"] == calibration for e in entries.values())
    # The cache of before (one statement per machine) says nothing of any emulator.
    cache.write_text(json.dumps({"machine": machine_key(), "statement": "theirs"}))
    assert fidelity_here(FIDELITY, _key(), cache) == elsewhere
