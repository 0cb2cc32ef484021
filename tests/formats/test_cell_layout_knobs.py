"""Flux knobs in the raw tree: a cell's directory names each knob it sets; no knob, no change."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.formats.cell_layout import (
    NO_KNOBS,
    Knobs,
    cell_dir,
    cell_id,
    cell_of_path,
    knobs_from_dirname,
    knobs_of_path,
)
from experiments.model.plan import Cell


@pytest.mark.parametrize(
    ("knobs", "dirname"),
    [
        (Knobs(chunksize=256 * 2**10), "chunksize-256K"),
        (Knobs(chunksize=0), "chunksize-0"),
        (Knobs(mmap=False), "mmap-off"),
        (Knobs(purge_target_size=64 * 2**20), "purge-64M"),
        (Knobs(2**20, True, 16 * 2**20), "chunksize-1M_mmap-on_purge-16M"),
    ],
)
def test_a_knob_directory_names_every_knob_set_and_reads_back(knobs: Knobs, dirname: str) -> None:
    assert knobs.dirname() == dirname
    assert knobs_from_dirname(dirname) == knobs


def test_a_cell_without_knobs_keeps_the_seeds_layout(tmp_path: Path) -> None:
    assert NO_KNOBS.dirname() is None
    assert cell_id(30, "kary:16", 0, NO_KNOBS) == "30/kary-16/0"
    assert cell_dir(tmp_path, cell_id(30, "kary:16", 0, NO_KNOBS)) == tmp_path / "30/kary-16/0"
    assert knobs_of_path(["30", "kary-16", "0"]) == NO_KNOBS


def test_a_cell_with_knobs_has_one_more_directory_and_its_path_reads_back(tmp_path: Path) -> None:
    knobs = Knobs(chunksize=256 * 2**10, mmap=True)
    cell = Cell(30, "kary:16", 2, (2**20,), ("all",), knobs)
    assert cell.id == "30/kary-16/chunksize-256K_mmap-on/2"
    assert cell.raw_dir(tmp_path) == tmp_path / "30/kary-16/chunksize-256K_mmap-on/2"
    parts = ["old", *cell.id.split("/")]
    assert cell_of_path(parts) == (30, "kary:16", 2)
    assert knobs_of_path(parts) == knobs


def test_the_id_of_the_longest_cell_fits_a_kubernetes_label() -> None:
    knobs = Knobs(chunksize=3 * 2**19, mmap=False, purge_target_size=3 * 2**29)
    label = cell_id(100_000, "mincrit:1024", 999, knobs).replace("/", "_")
    assert len(label) <= 63, label


@pytest.mark.parametrize(
    "name",
    ["chunksize", "chunksize-", "chunksize-1", "mmap-maybe", "purge-16M_purge-1M", "kary-2", "0"],
)
def test_a_directory_that_is_no_knob_directory_reads_as_none(name: str) -> None:
    assert knobs_from_dirname(name) is None
