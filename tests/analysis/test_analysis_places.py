"""Where a cell ran is an axis, as a knob is: the tables carry it, and nothing is ranked
across places or link settings (issue 36)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from analysis_samples import write_places_tree

from analysis import load_parsed, parse_tree
from analysis.page.view import strategy_views
from analysis.plots.parts import data_note, with_source
from experiments.formats.parsed import EVENTS_CSV, SUMMARY_CSV

BOX = "box on flux:vm, links 200Mbit, one FIFO"
TEST_INSTANCE = "test instance on flux:vm"


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("places")
    parse_tree(write_places_tree(base / "raw"), base / "parsed", plots=False)
    return base / "parsed"


def test_events_and_summary_carry_place_links_and_cpu_bound(places: Path) -> None:
    events = pd.read_csv(places / EVENTS_CSV, keep_default_na=False, dtype=str)
    settings = set(zip(events["place"], events["links"], events["cpu_bound"], strict=True))
    assert settings == {
        ("box", "200Mbit, one FIFO", "no"),
        ("box", "200Mbit, one FIFO", "yes"),
        ("test-instance", "", ""),
    }
    summary = pd.read_csv(places / SUMMARY_CSV, keep_default_na=False, dtype=str)
    rows = summary[(summary["event"] == "distribute-all-nodes") & (summary["topo"] == "kary:2")]
    # One group per place: a box's three runs and a test instance's, never six pooled.
    assert list(zip(rows["place"], rows["links"], rows["cpu_bound"], rows["n"], strict=True)) == [
        ("box", "200Mbit, one FIFO", "yes", "3"),
        ("test-instance", "", "", "3"),
    ]


def test_a_box_and_a_test_instance_get_a_verdict_each(places: Path) -> None:
    (view,) = strategy_views(load_parsed(places))
    assert [group["source"] for group in view["groups"]] == [BOX, TEST_INSTANCE]
    box, test_instance = view["groups"]
    # The CPU-bound cells are named on their design, where a reader compares them.
    assert [row["design"] for row in box["rows"]] == ["kary:1", "kary:2 · CPU-bound"]
    assert [row["design"] for row in test_instance["rows"]] == ["kary:1", "kary:2"]
    assert [(v["design"], v["n"]) for v in box["matrix"]] == [("kary:1", 3)]
    assert view["data"] == f"data: {BOX} (real Flux); {TEST_INSTANCE} (real Flux)"


def test_plot_captions_name_the_box_and_its_links(places: Path) -> None:
    summary = load_parsed(places).summary
    sources = sorted(set(with_source(summary)["source_name"]))
    assert data_note(sources) == f"data: {BOX} (real Flux); {TEST_INSTANCE} (real Flux)"


def test_an_older_parse_takes_the_place_of_its_events_from_runs_csv(
    places: Path, tmp_path: Path
) -> None:
    old = tmp_path / "old"
    shutil.copytree(places, old)
    events = pd.read_csv(old / EVENTS_CSV, keep_default_na=False, dtype=str)
    events.drop(columns=["place", "links", "cpu_bound"]).to_csv(old / EVENTS_CSV, index=False)
    loaded = load_parsed(old).events
    assert set(zip(loaded["place"], loaded["links"], strict=True)) == {
        ("box", "200Mbit, one FIFO"),
        ("test-instance", ""),
    }
