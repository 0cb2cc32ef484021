"""Slices parsed apart and joined: the tables keep cell order, --only drops whole cells,
and the events text the slices wrote is the table's text byte for byte."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from analysis_samples import kary_log, legacy_log, run_record, write_cell

from analysis.tables.csv_text import csv_text
from experiments.formats.parsed import EVENTS_CSV


def _tree(root: Path) -> Path:
    # Path order and cell order differ: a folder that names no cell sorts last by
    # path, but its run.json makes it the 2-node cell, first of all.
    write_cell(root, "8/kary-2/0", legacy_log(8, "kary:2", sizes=(1, 2)))
    write_cell(root, "4/kary-1/0", legacy_log(4, "kary:1", sizes=(1,)))
    write_cell(
        root,
        "moved/here",
        kary_log(2, "kary:1", 0, sizes=("16M",)),
        run_record(2, "kary:1", 0),
    )
    # Kary's 16M sizes are fractions of a GB: this slice writes size_gb as floats,
    # so the whole-GB slices' `1` must become `1.0` in the table's text.
    write_cell(root, "16/kary-4/0", kary_log(16, "kary:4", 0, sizes=("16M", "1G")))
    return root


_PARSE = """
import sys
from pathlib import Path
import analysis.tree as parse
import analysis.tree_slices as slices
slices.CELLS_PER_JOB = 1
parse.usable_cores = lambda: 2
only = None
if len(sys.argv) > 3:
    from experiments.model.cell_filter import parse_only
    only = parse_only(sys.argv[3])
parse.parse_tree(Path(sys.argv[1]), Path(sys.argv[2]), plots=False, only=only)
"""


def _parse_forked(raw: Path, out: Path, *only: str) -> pd.DataFrame:
    # A fresh interpreter may fork (pytest's process may have threads).
    subprocess.run([sys.executable, "-c", _PARSE, str(raw), str(out), *only], check=True)
    return pd.read_csv(out / EVENTS_CSV)


def test_rows_follow_cell_order_whatever_order_the_paths_gave(tmp_path: Path) -> None:
    events = _parse_forked(_tree(tmp_path / "raw"), tmp_path / "out")
    cells = list(dict.fromkeys(zip(events["nodes"], events["topo"], strict=True)))
    assert cells == [(2, "kary:1"), (4, "kary:1"), (8, "kary:2"), (16, "kary:4")]
    assert "1.0" in (tmp_path / "out" / EVENTS_CSV).read_text().split(",")


def test_the_slices_text_is_the_tables_text(tmp_path: Path) -> None:
    from analysis import read_tree

    raw = _tree(tmp_path / "raw")
    _parse_forked(raw, tmp_path / "out")
    parsed, _, _, _ = read_tree(raw, jobs=1)
    assert (tmp_path / "out" / EVENTS_CSV).read_text() == csv_text(parsed.events)


def test_only_keeps_whole_cells_in_order(tmp_path: Path) -> None:
    raw = _tree(tmp_path / "raw")
    events = _parse_forked(raw, tmp_path / "out", "nodes=16,nodes=2")
    assert list(dict.fromkeys(events["nodes"])) == [2, 16]
    whole = _parse_forked(raw, tmp_path / "all")
    for nodes in (2, 16):
        kept = events[events["nodes"] == nodes].reset_index(drop=True)
        pd.testing.assert_frame_equal(kept, whole[whole["nodes"] == nodes].reset_index(drop=True))


def test_whole_gb_slices_write_floats_in_a_table_that_has_fractions(tmp_path: Path) -> None:
    from analysis import read_tree

    raw = tmp_path / "raw"
    write_cell(raw, "4/kary-1/0", legacy_log(4, "kary:1", sizes=(1,)))
    write_cell(raw, "8/kary-2/0", legacy_log(8, "kary:2", sizes=(2,)))
    write_cell(raw, "16/kary-4/0", kary_log(16, "kary:4", 0, sizes=("16M",)))
    _parse_forked(raw, tmp_path / "out")
    text = (tmp_path / "out" / EVENTS_CSV).read_text()
    assert text == csv_text(read_tree(raw, jobs=1)[0].events)
    assert ",1.0," in text and ",2.0," in text and ",0.015625," in text


def test_a_large_slice_sends_its_text_compressed_and_the_table_is_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past _COMPRESS_ABOVE characters a slice's events text travels compressed, and
    the table is written from it byte for byte as from the text."""
    import analysis.tree_slices as slices
    from analysis import parse_tree
    from analysis.read.walk import find_cells

    root = _tree(tmp_path / "raw")
    parse_tree(root, tmp_path / "plain", plots=False)
    cells, _ = find_cells(root)
    text = slices.parse_slice(cells).events_csv
    monkeypatch.setattr(slices, "_COMPRESS_ABOVE", 10)
    packed = slices.parse_slice(cells).events_csv
    assert isinstance(text, str) and isinstance(packed, slices.CompressedText)
    assert b"".join(packed.chunks()) == text.encode()
    parse_tree(root, tmp_path / "packed", plots=False)
    written = (tmp_path / "packed" / EVENTS_CSV).read_bytes()
    assert written == (tmp_path / "plain" / EVENTS_CSV).read_bytes()


def test_a_large_tree_is_cut_into_slices_of_at_most_max_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker holds one slice at a time: more cells mean more slices, not larger."""
    import analysis.tree_slices as slices
    from analysis.read.walk import find_cells

    for iteration in range(7):
        write_cell(tmp_path / "raw", f"4/kary-1/{iteration}", legacy_log(4, "kary:1", sizes=(1,)))
    cells, _ = find_cells(tmp_path / "raw")
    started: list[list[int]] = []

    def recorded(tasks: list[object], workers: int, **options: object) -> None:
        started.append([len(task.args[0]) for task in tasks])  # type: ignore[attr-defined]

    monkeypatch.setattr(slices, "Forked", recorded)
    monkeypatch.setattr(slices, "CELLS_PER_JOB", 1)
    monkeypatch.setattr(slices, "_MAX_CELLS_PER_SLICE", 2)
    slices.PendingSlices(cells, jobs=2)
    assert started == [[2, 2, 2, 1]]
