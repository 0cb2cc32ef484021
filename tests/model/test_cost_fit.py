"""The time model's fit: it recovers a known truth, says what it could not tell,
and measures how whole sweeps scatter from sweeps it was not fitted on.

The history is synthetic (cost_history_samples.py): made from a "true" model
through the same step structure, with a little noise.  No timing runs here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cost_history_samples import MIB, TRUE_FLUX, write_sweep

from experiments.estimate.defaults import default_time_model
from experiments.estimate.fit import ONE_SWEEP_SPREAD, fit_environment
from experiments.estimate.history import load_sweeps
from experiments.estimate.structure import cell_steps
from experiments.formats.cell_layout import Knobs
from experiments.model.plan import Cell


def _fit(tmp_path: Path, nodes: tuple[int, ...], factors: tuple[float, ...] | None = None):  # type: ignore[no-untyped-def]
    for index, n in enumerate(nodes):
        factor = factors[index] if factors else 1.0
        write_sweep(tmp_path / f"parsed-{n}", TRUE_FLUX, n, factor=factor, seed=n)
    return fit_environment(load_sweeps(tmp_path), default_time_model("flux"))


def test_the_fit_recovers_the_rates_history_was_made_with(tmp_path: Path) -> None:
    fit = _fit(tmp_path, (4, 8, 12))
    p = fit.parameters
    assert p["create_s_per_gb"] == pytest.approx(TRUE_FLUX.create_s_per_gb, rel=0.05)
    assert p["shared_cpu_s_per_gb"] == pytest.approx(TRUE_FLUX.shared_cpu_s_per_gb, rel=0.1)
    assert p["generate_s_per_gb"] == pytest.approx(TRUE_FLUX.generate_s_per_gb, rel=0.05)
    # The overhead comes from run.json's wall times less the timed steps.
    for n in (4, 12):
        fitted = p["run_overhead_s"] + n * p["broker_start_s"]
        true = TRUE_FLUX.run_overhead_s + n * TRUE_FLUX.broker_start_s
        assert fitted == pytest.approx(true, rel=0.1)
    assert {"create_s_per_gb", "shared_cpu_s_per_gb", "run_overhead_s"} <= fit.informed
    assert fit.coverage.nodes == (4, 12)
    assert fit.coverage.sizes == (16 * MIB, 64 * MIB)
    assert fit.coverage.fanouts == (1, 11)


def test_one_node_count_cannot_tell_a_per_rank_cost_from_a_per_copy_one(tmp_path: Path) -> None:
    fit = _fit(tmp_path, (8,))
    assert "extract_s_per_gb" in fit.informed
    assert "shared_cpu_s_per_gb" not in fit.informed
    assert "broker_start_s" not in fit.informed
    # What it can tell, it tells: the distribution at 8 nodes is the truth's.
    cell = Cell(8, "kary:2", 0, (64 * MIB,), ("all",))
    (wave,) = [s for s in cell_steps(cell, verify=True) if s.part == "distribute"]
    model = default_time_model("flux").model_copy(update=fit.parameters)
    predicted = sum(getattr(model, k) * v for k, v in wave.features.items())
    true = sum(getattr(TRUE_FLUX, k) * v for k, v in wave.features.items())
    assert predicted == pytest.approx(true, rel=0.05)


def test_sweep_spread_is_measured_on_sweeps_the_fit_has_not_seen(tmp_path: Path) -> None:
    steady = _fit(tmp_path / "steady", (4, 8, 12))
    loaded = _fit(tmp_path / "loaded", (4, 8, 12), factors=(0.8, 1.0, 1.3))
    assert steady.coverage.sweep_spread < 0.08
    # A sweep 30% slow is 30% off a fit on the other two.
    assert loaded.coverage.sweep_spread > 0.15
    assert "predicted by a fit on the others" in loaded.coverage.spread_from


def test_one_sweep_has_an_assumed_sweep_spread(tmp_path: Path) -> None:
    fit = _fit(tmp_path, (8,))
    assert fit.coverage.sweep_spread == ONE_SWEEP_SPREAD
    assert fit.coverage.spread_from.startswith("assumed")


def test_a_wave_to_the_leaves_costs_the_relays_above_them() -> None:
    # kary:1 on 5 nodes: the leaf is rank 4, its blobs pass ranks 1-3 first.
    cell = Cell(5, "kary:1", 0, (64 * MIB,), ("leaves",))
    (wave,) = [s for s in cell_steps(cell, verify=True) if s.part == "distribute"]
    assert wave.ranks == 4
    (verify,) = [s for s in cell_steps(cell, verify=True) if s.part == "verify"]
    assert verify.features["verify_s_per_gb_per_rank"] == pytest.approx(64 / 1024)  # one target


def test_a_ping_cell_is_its_start_up_and_direct_is_flat_whatever_the_tree() -> None:
    ping = Cell(8, "kary:2", 0, (MIB,), (), experiment="ping")
    assert [s.part for s in cell_steps(ping, verify=True)] == ["overhead"]
    direct = Cell(8, "kary:1", 0, (64 * MIB,), ("direct",))
    (wave,) = [s for s in cell_steps(direct, verify=True) if s.part == "distribute"]
    assert (wave.fanout, wave.depth) == (7, 1)


def test_cells_of_one_shape_share_steps_and_a_blob_that_dedups_moves_nothing() -> None:
    """cell_steps is cached by what shapes a cell: other iterations, knobs and links give
    the same steps, a zeros blob (one chunk) none that scale with bytes moved, and a
    caller's list is its own."""
    cell = Cell(8, "kary:2", 0, (64 * MIB, 128 * MIB), ("all", "leaves"))
    steps = cell_steps(cell, verify=True)
    other = Cell(8, "kary:2", 3, cell.sizes, cell.strategies, Knobs(chunksize=MIB), "distribute",
                 "latency-1ms")  # fmt: skip
    assert cell_steps(other, verify=True) == steps
    steps.clear()
    assert len(cell_steps(cell, verify=True)) > 1
    zeros = Cell(8, "kary:2", 0, cell.sizes, cell.strategies, blob="zeros")
    waves = [s for s in cell_steps(zeros, verify=True) if s.part == "distribute"]
    assert waves and all(w.moved == 0 and w.features["fanout_s_per_gb"] == 0 for w in waves)
    assert cell_steps(Cell(16, "kary:2", 0, cell.sizes, cell.strategies), True) != cell_steps(
        cell, True
    )


def test_history_read_twice_is_read_once_until_a_file_changes(tmp_path: Path) -> None:
    """`kary race` fits one --history three times (the sweep's estimate, the race's, its
    spread); the second read reuses the first, and a rewritten table reads afresh."""
    write_sweep(tmp_path / "parsed-4", TRUE_FLUX, 4, seed=4)
    first = load_sweeps(tmp_path)
    again = load_sweeps(tmp_path)
    assert len(first) == 1 and again[0] is first[0]
    shutil.rmtree(tmp_path / "parsed-4")
    write_sweep(tmp_path / "parsed-4", TRUE_FLUX, 4, factor=2.0, seed=5)
    changed = load_sweeps(tmp_path)
    assert changed[0] is not first[0] and changed[0].cells != first[0].cells
