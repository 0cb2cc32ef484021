"""Cell ids, raw-tree directory names and size labels: written one way, read back the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.formats.cell_layout import (
    Knobs,
    cell_dir,
    cell_id,
    cell_of_path,
    format_size,
    knobs_of_path,
    network_dirname,
    network_of_path,
    size_from_label,
    size_text,
    topo_from_dirname,
    topology_dirname,
)
from experiments.model.links import link_settings
from experiments.model.plan import Cell


@pytest.mark.parametrize(
    ("topo", "dirname"),
    [
        ("kary:2", "kary-2"),
        ("kary:0", "kary-0"),
        ("kary:256", "kary-256"),
        ("binomial", "binomial"),
        ("mincrit", "mincrit"),
        ("mincrit:3", "mincrit-3"),
    ],
)
def test_a_topology_and_its_directory_name_round_trip(topo: str, dirname: str) -> None:
    assert topology_dirname(topo) == dirname
    assert topo_from_dirname(dirname) == topo


@pytest.mark.parametrize("name", ["kary", "kary-", "kary-x", "binomial-2", "notes", "kary:2"])
def test_a_directory_that_names_no_topology_reads_as_none(name: str) -> None:
    assert topo_from_dirname(name) is None


def test_a_cells_id_is_its_path_below_the_raw_root(tmp_path: Path) -> None:
    assert cell_id(30, "kary:16", 0) == "30/kary-16/0"
    assert cell_dir(tmp_path, cell_id(30, "kary:16", 0)) == tmp_path / "30" / "kary-16" / "0"
    assert cell_of_path(["30", "kary-16", "0"]) == (30, "kary:16", 0)
    assert cell_of_path(["old", "runs", "6", "binomial", "2"]) == (6, "binomial", 2)
    assert cell_of_path(["kary-2", "x"]) == (None, "kary:2", None)
    assert cell_of_path([]) == (None, None, None)


def test_the_plans_cell_uses_the_layout(tmp_path: Path) -> None:
    cell = Cell(30, "kary:16", 1, (2**20,), ("all",))
    assert cell.id == cell_id(30, "kary:16", 1)
    assert cell.raw_dir(tmp_path) == cell_dir(tmp_path, cell_id(30, "kary:16", 1))


@pytest.mark.parametrize(
    ("size", "label"),
    [
        (2**20, "1M"),
        (16 * 2**20, "16M"),
        (512 * 2**20, "512M"),
        (2**30, "1G"),
        (3 * 2**29, "1536M"),
        (2**40, "1T"),
        (64 * 2**10, "64K"),
        (1000, "1KB"),
        (10**10, "10GB"),
        (1001, "1001B"),
    ],
)
def test_a_size_and_its_label_round_trip(size: int, label: str) -> None:
    assert format_size(size) == label
    assert size_from_label(label) == size


@pytest.mark.parametrize(("label", "size"), [("1", 2**30), ("10", 10 * 2**30), ("1.5G", 3 * 2**29)])
def test_the_seeds_bare_labels_are_gigabytes(label: str, size: int) -> None:
    assert size_from_label(label) == size


@pytest.mark.parametrize("label", ["", "M", "16m", "0", "0.3K", "1X", "1G "])
def test_an_unreadable_label_has_no_size(label: str) -> None:
    assert size_from_label(label) is None


def test_the_seeds_bare_label_reads_beside_karys() -> None:
    assert [size_text(x) for x in ("1", 10, "16M")] == ["1G", "10G", "16M"]


def test_cells_on_shaped_links_have_a_network_directory_in_canonical_units() -> None:

    typed = link_settings("100mbit", "0.5ms", root_bandwidth="125MBps")
    assert typed.dirname() == "bw-100Mbit_lat-500us_rootbw-1Gbit"
    assert link_settings("100Mbit", "500us", root_bandwidth="1gbit").dirname() == typed.dirname()
    assert link_settings(None, None).dirname() is None
    assert network_dirname(group_size=4, group_bandwidth=1.25e8) == "group-4_groupbw-1Gbit"
    cell = cell_id(8, "kary:2", 0, Knobs(chunksize=2**18), typed.dirname())
    assert cell == "8/kary-2/bw-100Mbit_lat-500us_rootbw-1Gbit/chunksize-256K/0"
    parts = cell.split("/")
    assert cell_of_path(parts) == (8, "kary:2", 0)
    assert knobs_of_path(parts) == Knobs(chunksize=2**18)
    assert network_of_path(parts) == {"bw": "100Mbit", "lat": "500us", "rootbw": "1Gbit"}
    assert network_of_path(["8", "kary-2", "0"]) is None
    assert cell_of_path(["8", "kary-2", "bw-100Mbit", "0"]) == (8, "kary:2", 0)
    # A topology directory is never read as a network one, nor a repeated key.
    assert network_of_path(["8", "bw-1Mbit_bw-2Mbit", "0"]) is None
