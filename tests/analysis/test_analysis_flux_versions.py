"""Cells of another Flux version or another template are another benchmark (issue 42,
item 4): summary.csv splits them as it splits knobs, and the report names them apart.
A tree that never recorded either parses as before."""

from __future__ import annotations

from pathlib import Path

from analysis_samples import kary_log, run_record, write_cell

from analysis import load_parsed, parse_tree
from analysis.page.facts import collect_facts
from analysis.tables.sources import source_names


def _tree(root: Path, flux: list[str], templates: list[str]) -> Path:
    for it, (version, template) in enumerate(zip(flux, templates, strict=True)):
        record = run_record(4, "kary:2", it, flux_version=version, template_hash=template)
        write_cell(root, f"4/kary-2/{it}", kary_log(4, "kary:2", it, sizes=("16M",)), record)
    return root


def _distribute(parsed_dir: Path) -> list[tuple[str, str, int]]:
    summary = load_parsed(parsed_dir).summary
    rows = summary[summary["event"] == "distribute-all-nodes"]
    return sorted(zip(rows["flux_version"], rows["template_hash"], rows["n"], strict=True))


def test_cells_of_two_flux_versions_are_two_groups_and_two_sources(tmp_path: Path) -> None:
    raw = _tree(tmp_path / "raw", ["0.66.0"] * 3 + ["0.88.0"] * 3, ["abc"] * 6)
    parse_tree(raw, tmp_path / "parsed", plots=False)
    assert _distribute(tmp_path / "parsed") == [("0.66.0", "abc", 3), ("0.88.0", "abc", 3)]
    parsed = load_parsed(tmp_path / "parsed")
    assert sorted(set(source_names(parsed.events))) == [
        "local, Flux 0.66.0",
        "local, Flux 0.88.0",
    ]
    assert collect_facts(parsed).sources == ["local, Flux 0.66.0", "local, Flux 0.88.0"]


def test_cells_of_two_templates_are_two_groups(tmp_path: Path) -> None:
    raw = _tree(tmp_path / "raw", ["0.88.0"] * 4, ["abc", "abc", "def", "def"])
    parse_tree(raw, tmp_path / "parsed", plots=False)
    assert _distribute(tmp_path / "parsed") == [("0.88.0", "abc", 2), ("0.88.0", "def", 2)]
    events = load_parsed(tmp_path / "parsed").events
    assert set(source_names(events)) == {"local, templates abc", "local, templates def"}


def test_one_flux_and_one_template_read_as_before(tmp_path: Path) -> None:
    raw = _tree(tmp_path / "raw", [""] * 3, [""] * 3)  # an old tree: neither recorded
    parse_tree(raw, tmp_path / "parsed", plots=False)
    assert _distribute(tmp_path / "parsed") == [("", "", 3)]
    assert set(source_names(load_parsed(tmp_path / "parsed").events)) == {"local"}
