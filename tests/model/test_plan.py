"""Planning: cells, ids, skip rules, ordering and validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.errors import UserError
from experiments.formats.run_record import RunRecord, write_record
from experiments.model.plan import ExperimentSpec, plan_experiment

GIB = 2**30


def _spec(tmp_path: Path, **kwargs: object) -> ExperimentSpec:
    return ExperimentSpec(data_dir=tmp_path / "raw", **kwargs)  # type: ignore[arg-type]


def test_explicit_topology_needs_no_design_file(tmp_path: Path) -> None:
    plan = plan_experiment(_spec(tmp_path, exact_nodes=30, topos=["kary:16"], iters=2))
    assert [c.id for c in plan.cells] == ["30/kary-16/0", "30/kary-16/1"]
    assert plan.cells[0].raw_dir(tmp_path / "raw") == tmp_path / "raw/30/kary-16/0"
    assert plan.sizes == [16 * 2**20, 64 * 2**20]  # local default


def test_design_file_selects_by_exact_and_max_nodes(tmp_path: Path) -> None:
    exact = plan_experiment(_spec(tmp_path, exact_nodes=6))
    assert [c.topo for c in exact.cells] == ["binomial", "kary:1", "kary:2", "kary:3"]
    upto = plan_experiment(_spec(tmp_path, max_nodes=5))
    assert [c.id for c in upto.cells] == [
        "4/binomial/0",
        "4/kary-1/0",
        "4/kary-2/0",
        "5/kary-1/0",
        "5/kary-2/0",
    ]


def test_seed_size_flags_are_gigabytes(tmp_path: Path) -> None:
    plan = plan_experiment(
        _spec(tmp_path, exact_nodes=6, topos=["kary:2"], min_size_gb=1, max_size_gb=3)
    )
    assert plan.sizes == [GIB, 2 * GIB, 3 * GIB]
    assert plan_experiment(_spec(tmp_path, exact_nodes=4, backend="kubernetes")).sizes == [
        g * GIB for g in range(1, 11)
    ]


def test_the_plan_lists_every_cell_whatever_the_raw_tree_holds(tmp_path: Path) -> None:
    spec = _spec(tmp_path, exact_nodes=4, topos=["kary:1", "kary:2"])
    cells = plan_experiment(spec).cells
    record = RunRecord(
        cell=cells[0].id, nodes=4, topo="kary:1", iteration=0, backend="local", state="succeeded"
    )  # type: ignore[arg-type]
    write_record(cells[0].raw_dir(spec.data_dir), record)
    assert plan_experiment(spec).cells == cells


def test_random_order_is_a_per_iteration_shuffle_fixed_by_the_seed(tmp_path: Path) -> None:
    spec = _spec(tmp_path, max_nodes=8, iters=3, order="random", seed=7)
    first = [c.id for c in plan_experiment(spec).cells]
    assert first == [c.id for c in plan_experiment(spec).cells]
    given = [c.id for c in plan_experiment(_spec(tmp_path, max_nodes=8, iters=3)).cells]
    assert sorted(first) == sorted(given) and first != given
    # Each iteration stays together: shuffling is within an iteration.
    iterations = [int(cell_id.rsplit("/", 1)[1]) for cell_id in first]
    assert iterations == sorted(iterations)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "say which designs"),
        ({"topos": ["kary:2"]}, "needs --exact-nodes"),
        ({"exact_nodes": 4, "max_nodes": 6}, "not both"),
        ({"exact_nodes": 4, "topos": ["kary:2", "kary:2"]}, "listed twice"),
        ({"exact_nodes": 1, "topos": ["kary:1"]}, "at least 2 nodes"),
        ({"exact_nodes": 4, "topos": ["kary:0"], "strategies": ["middle"]}, "2 levels"),
        ({"exact_nodes": 4, "topos": ["kary:1"], "strategies": ["diagonal"]}, "unknown strategy"),
        ({"exact_nodes": 3}, "no designs for 3 nodes"),
        ({"exact_nodes": 4, "topos": ["kary:1"], "name": "Flux_Sample"}, "invalid --name"),
        ({"exact_nodes": 4, "topos": ["kary:1"], "min_size_gb": 3, "max_size_gb": 2}, "larger"),
    ],
)
def test_bad_specs_are_user_errors(tmp_path: Path, kwargs: dict, message: str) -> None:
    with pytest.raises(UserError, match=message):
        plan_experiment(_spec(tmp_path, **kwargs))
