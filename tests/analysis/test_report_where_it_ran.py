"""The report says where timings came from: real Flux (and where: a box is this machine, not
an allocation), or the emulator (how close), at the top of the page (issue 36)."""

from __future__ import annotations

import html
from pathlib import Path

from analysis_samples import box_record, kary_log, run_record, write_cell, write_places_tree

from analysis import load_parsed, parse_tree
from analysis.page.builder import _overview, build_report
from analysis.page.facts import collect_facts
from analysis.page.where import where_line


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


BOX_IS_THIS_MACHINE = (
    "a box: real Flux brokers in network namespaces over shaped links, on this machine, "
    "not a Flux allocation"
)


def test_a_box_is_this_machine_not_an_allocation_and_says_its_links_first(
    tmp_path: Path,
) -> None:
    raw = tmp_path / "raw"
    for it in range(2):
        write_cell(raw, f"4/kary-2/{it}", kary_log(4, "kary:2", it), box_record(4, "kary:2", it))
    parse_tree(raw, tmp_path / "parsed", plots=False)
    facts = collect_facts(load_parsed(tmp_path / "parsed"))
    assert facts.cost == (
        "$0: ran on this machine (a box: real Flux brokers in network namespaces over "
        "shaped links, not a Flux allocation)"
    )
    assert [where_line(place) for place in facts.places] == [
        f"2 cells · box on flux:vm, links 200Mbit, one FIFO · {BOX_IS_THIS_MACHINE}"
    ]
    cards = {card["label"]: card for card in _overview(facts)}
    assert cards["where"]["value"] == "box on flux:vm, links 200Mbit, one FIFO"
    assert cards["cost"]["value"] == "$0"
    assert facts.emulated_note is None


def test_each_place_of_a_mixed_tree_is_its_own_overview_line(tmp_path: Path) -> None:
    parse_tree(write_places_tree(tmp_path / "raw"), tmp_path / "parsed", plots=False)
    facts = collect_facts(load_parsed(tmp_path / "parsed"))
    assert [where_line(place) for place in facts.places] == [
        f"6 cells · box on flux:vm, links 200Mbit, one FIFO · {BOX_IS_THIS_MACHINE} · 3 of 6 "
        "CPU-bound: their brokers shared too few cores, so they measure this machine as "
        "much as the links",
        "6 cells · test instance on flux:vm · real Flux on this machine (flux start --test-size)",
    ]
    assert facts.cost == (
        "$0: ran on this machine (a box: real Flux brokers in network namespaces over shaped "
        "links, not a Flux allocation; real Flux, flux start --test-size)"
    )


def test_an_emulated_study_says_so_at_the_top_of_the_report(tmp_path: Path) -> None:
    emulator = {"fidelity": "within x1.5 of flux-core 0.88 here", "link_bandwidth": "200Mbit"}
    raw = tmp_path / "raw"
    record = run_record(4, "kary:2", 0, cluster="local:vm", emulator=emulator)
    write_cell(raw, "4/kary-2/0", kary_log(4, "kary:2", 0), record)
    parse_tree(raw, tmp_path / "parsed", plots=False)
    note = (
        "Emulated Flux: the one cell ran on kary's Flux emulator (local:vm, links 200Mbit), "
        "not on flux-core: these timings model Flux, they do not measure it. "
        "Fidelity: within x1.5 of flux-core 0.88 here."
    )
    assert collect_facts(load_parsed(tmp_path / "parsed")).emulated_note == note
    page = html.unescape(build_report([tmp_path / "parsed"]))
    assert page.index(note) < page.index('id="set0-overview"')


def test_a_box_cell_says_its_links_floor_beside_its_median() -> None:
    # The committed N=16 box sweep at 100 Mbit/s: docs/box.md's floors, in the report.
    from analysis.page.floors import links_of_text

    repo = Path(__file__).resolve().parents[2]
    page = html.unescape(build_report([repo / "benchmarks/results/box-sweeps/n16-100Mbit"]))
    for floor in ("floor 5.37 s", "floor 10.7 s", "floor 21.5 s", "floor 80.5 s"):
        assert floor in page
    assert "floor 80.5 s · x1.05" in page  # the flat tree, closest to its floor
    links = links_of_text("200Mbit, rank 0 1Gbit, 1ms, groups of 4 via 50Mbit")
    assert links is not None
    assert (links.bandwidth, links.root_bandwidth, links.latency) == (25e6, 125e6, 0.001)
    assert (links.group_size, links.group_bandwidth) == (4, 6.25e6)
    assert links_of_text("") is None
