"""The time model by blob kind: a zero blob moves one chunk, so its waves cost each
rank's writes whatever the tree, and zero-blob history informs no term priced per
byte moved (flux-distribute's sweeps were zeros: formats/blobs.py)."""

from __future__ import annotations

from pathlib import Path

from cost_history_samples import MIB, TRUE_FLUX, write_sweep

from experiments.estimate.defaults import default_time_model
from experiments.estimate.fit import fit_environment
from experiments.estimate.history import load_sweeps
from experiments.estimate.plan_estimate import estimate_for
from experiments.estimate.structure import MOVED_PARAMETERS, predict_cell
from experiments.model.plan import Cell

GIB = 2**30


def _distribute(topo: str, blob: str) -> float:
    model = default_time_model("kubernetes", link_gbps=10.0).model_copy(
        update={"fanout_s_per_gb": 0.5, "hop_s_per_gb": 0.3}
    )
    cell = Cell(16, topo, 0, (4 * GIB,), ("all",), blob=blob)
    return predict_cell(cell, model, verify=False).parts["distribute"]


def test_a_zero_blob_wave_costs_each_ranks_writes_whatever_the_tree() -> None:
    flat, chain = _distribute("kary:15", "zeros"), _distribute("kary:1", "zeros")
    assert flat == chain > 0  # extract's writes of 4 GB, and the wave's start
    # Random blobs: the flat tree's root sends 15 copies through its 10 Gbit/s link.
    random_flat, random_chain = _distribute("kary:15", "random"), _distribute("kary:1", "random")
    assert random_flat >= 15 * 4 * 0.8 > random_chain > flat


def test_zero_blob_history_informs_no_term_priced_per_byte_moved(tmp_path: Path) -> None:
    fits = {}
    for blob in ("random", "zeros"):
        for n in (4, 8, 12):
            write_sweep(tmp_path / blob / f"parsed-{n}", TRUE_FLUX, n, seed=n, blob=blob)
        sweeps = load_sweeps(tmp_path / blob)
        assert {c.cell.blob for s in sweeps for c in s.cells} == {blob}
        fits[blob] = fit_environment(sweeps, default_time_model("flux"))
    assert "shared_cpu_s_per_gb" in fits["random"].informed
    assert not fits["zeros"].informed & MOVED_PARAMETERS
    assert "create_s_per_gb" in fits["zeros"].informed  # rank 0 still hashes every byte
    assert fits["zeros"].blobs == {"zeros"}


def test_a_plan_on_zero_blob_history_says_where_its_network_terms_come_from(
    tmp_path: Path,
) -> None:
    for n in (4, 8):
        write_sweep(tmp_path / f"parsed-{n}", TRUE_FLUX, n, seed=n, blob="zeros")
    cells = [Cell(8, "kary:2", 0, (64 * MIB,), ("all",))]
    estimate = estimate_for(cells, "flux", True, history=tmp_path, place="test-instance")
    details = {a.term: a.detail for a in estimate.assumptions}
    assert "shared_cpu_s_per_gb" in details
    assert "history holds zeros blobs only, which move one chunk" in details["shared_cpu_s_per_gb"]
