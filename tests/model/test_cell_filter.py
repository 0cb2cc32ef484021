"""`--only`: a filter picks cells by axis values; a bad filter is one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.errors import UserError
from experiments.formats.cell_layout import NO_KNOBS, Knobs
from experiments.model.cell_filter import parse_only
from experiments.model.plan import ExperimentSpec, plan_experiment


def _plan(tmp_path: Path):  # type: ignore[no-untyped-def]
    spec = ExperimentSpec(
        data_dir=tmp_path,
        sizes=[2**20],
        iters=2,
        matrix={"nodes": [4, 6], "topo": ["kary:1", "kary:2"], "chunksize": ["256K", "1M"]},
    )
    return plan_experiment(spec)


def test_only_keeps_the_cells_whose_values_it_names(tmp_path: Path) -> None:
    chosen = _plan(tmp_path).only(parse_only("nodes=6,topo=kary:2,chunksize=256K"))
    assert [c.id for c in chosen.cells] == [
        "6/kary-2/chunksize-256K/0",
        "6/kary-2/chunksize-256K/1",
    ]


def test_a_key_given_twice_takes_either_value_and_flags_add_up(tmp_path: Path) -> None:
    chosen = _plan(tmp_path).only(parse_only(["topo=kary:1,topo=kary:2", "iteration=1,nodes=4"]))
    assert {(c.nodes, c.iteration) for c in chosen.cells} == {(4, 1)}
    assert len(chosen.cells) == 4


def test_values_are_compared_as_cells_hold_them() -> None:
    only = parse_only("purge-target-size=16M,mmap=on,chunksize=default")
    assert only is not None
    assert only.matches(4, "kary:1", 0, Knobs(None, True, 2**24))
    assert not only.matches(4, "kary:1", 0, Knobs(2**20, True, 2**24))
    assert not only.matches(4, "kary:1", 0, NO_KNOBS)
    assert parse_only(None) is None and parse_only(" , ") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "nodes30",
            "invalid --only 'nodes30': expected KEY=VALUE, e.g. --only nodes=30,topo=kary:16",
        ),
        ("node=30", "invalid --only key 'node': choose from nodes, topo, blob, chunksize"),
        ("blob=ones", "invalid --only blob=ones: unknown --blob 'ones'"),
        ("nodes=x", "invalid --only nodes=x: must be a whole number"),
        ("topo=kary", "invalid --only topo=kary: invalid topology"),
        ("mmap=maybe", "invalid --only mmap=maybe: must be on, off or default"),
        ("chunksize=1Q", "invalid --only chunksize=1Q: invalid size"),
    ],
)
def test_a_bad_filter_is_one_line(text: str, message: str) -> None:
    with pytest.raises(UserError) as err:
        parse_only(text)
    assert str(err.value).startswith(message), str(err.value)


def test_a_filter_that_selects_nothing_says_so(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"^--only nodes=30 selects none of the 16 cells$"):
        _plan(tmp_path).only(parse_only("nodes=30"))
