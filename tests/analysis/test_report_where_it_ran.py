"""The report says where timings came from: real Flux (and where), or the emulator (how close)."""

from __future__ import annotations

from pathlib import Path

from analysis_samples import kary_log, run_record, write_cell

from analysis import load_parsed, parse_tree
from analysis.page.facts import collect_facts


def _facts(tmp_path: Path, **record: object) -> dict[str, str]:
    raw = tmp_path / "raw"
    write_cell(raw, "4/kary-2/0", kary_log(4, "kary:2", 0), run_record(4, "kary:2", 0, **record))
    parse_tree(raw, tmp_path / "parsed", plots=False)
    facts = collect_facts(load_parsed(tmp_path / "parsed"))
    assert facts.cost is not None
    return {**dict(facts.provenance), "cost": facts.cost}


def test_a_real_flux_test_instance_is_named_and_costs_nothing(tmp_path: Path) -> None:
    facts = _facts(
        tmp_path, backend="flux", place="test-instance", cluster="flux:vm", flux_version="0.88.0"
    )
    assert facts["where Flux ran"] == "test-instance"
    assert facts["Flux versions"] == "0.88.0"
    assert facts["cost"] == "$0: ran on this machine (real Flux, flux start --test-size)"
    assert "emulator fidelity" not in facts


def test_an_allocation_is_not_priced_by_kary(tmp_path: Path) -> None:
    facts = _facts(tmp_path, backend="flux", place="allocation", jobid="f3pbHkZu")
    assert facts["where Flux ran"] == "allocation"
    assert facts["cost"].startswith("not billed by kary: ran inside a Flux allocation")


def test_emulated_cells_say_how_faithful_and_whether_faults_were_injected(tmp_path: Path) -> None:
    emulator = {"fidelity": "within x1.5 of flux-core 0.88 here", "faults": ["corrupt:3"]}
    facts = _facts(tmp_path, backend="local", emulator=emulator)
    assert facts["emulator fidelity"] == "within x1.5 of flux-core 0.88 here"
    assert facts["faults injected (testing only)"] == "corrupt:3"
    assert facts["cost"] == "$0: ran on this machine (emulated Flux)"
