"""Sweep files: the issue's example plans 16 cells; a mistake is one line with its line number."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from experiments.errors import UserError
from experiments.formats.cell_layout import Knobs
from experiments.model.plan import ExperimentSpec, plan_experiment
from experiments.model.sweep_file import load_sweep_file

EXAMPLE = """\
name: chunk-study
matrix:            # every combination
  nodes: [4, 6]
  topo: [kary:1, kary:2]
  chunksize: [256K, 1M]
zip: {}            # axes that vary together, same length
sizes: [16M]       # every cell runs every size
strategies: [all]
iterations: 2
backend: local
"""


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "study.yaml"
    path.write_text(text)
    return path


def _spec(values: dict, tmp_path: Path) -> ExperimentSpec:
    return ExperimentSpec(
        data_dir=tmp_path / "raw",
        name=values.get("name", "flux-sample"),
        iters=values.get("iterations", 1),
        sizes=[2**20],
        matrix=values.get("matrix", {}),
        zip=values.get("zip", {}),
    )


def test_the_issues_example_is_read_as_written(tmp_path: Path) -> None:
    path = _file(tmp_path, EXAMPLE)
    sweep = load_sweep_file(path)
    assert sweep.values == {
        "name": "chunk-study",
        "matrix": {"nodes": [4, 6], "topo": ["kary:1", "kary:2"], "chunksize": [2**18, 2**20]},
        "zip": {},
        "sizes": ["16M"],
        "strategies": ["all"],
        "iterations": 2,
        "backend": "local",
    }
    assert sweep.sha256 == hashlib.sha256(EXAMPLE.encode()).hexdigest()
    assert (sweep.lines["iterations"], sweep.lines["matrix.chunksize"]) == (9, 5)


def test_the_example_plans_16_cells_each_in_its_own_directory(tmp_path: Path) -> None:
    values = load_sweep_file(_file(tmp_path, EXAMPLE)).values
    cells = plan_experiment(_spec(values, tmp_path)).cells
    assert len(cells) == 16
    assert len({c.id for c in cells}) == 16
    assert cells[0].id == "4/kary-1/chunksize-256K/0"
    assert cells[1].knobs == Knobs(chunksize=2**20)
    assert [c.iteration for c in cells] == [0] * 8 + [1] * 8


def test_zip_axes_vary_together_and_cross_the_matrix(tmp_path: Path) -> None:
    text = "matrix: {chunksize: [256K, 1M]}\nzip:\n  nodes: [4, 8]\n  topo: [kary:1, kary:3]\n"
    cells = plan_experiment(_spec(load_sweep_file(_file(tmp_path, text)).values, tmp_path)).cells
    assert [c.id for c in cells] == [
        "4/kary-1/chunksize-256K/0",
        "8/kary-3/chunksize-256K/0",
        "4/kary-1/chunksize-1M/0",
        "8/kary-3/chunksize-1M/0",
    ]


def test_a_top_level_axis_is_a_one_value_matrix_axis_and_paths_follow_the_file(
    tmp_path: Path,
) -> None:
    text = "nodes: 30\ntopo: kary:16\nmmap: [false, true]\ncluster: ../clusters/eks.yaml\n"
    sweep = load_sweep_file(_file(tmp_path, text))
    assert sweep.values["matrix"] == {"nodes": [30], "topo": ["kary:16"], "mmap": [False, True]}
    assert sweep.values["cluster"] == tmp_path / "../clusters/eks.yaml"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "name: s\niterashuns: 2\n",
            "study.yaml:2: unknown key 'iterashuns' (did you mean 'iterations'?): known keys are",
        ),
        ("matrix:\n  nodes: [4]\n  fanout: [2]\n", "study.yaml:3: matrix: unknown axis 'fanout'"),
        (
            "matrix:\n  nodes: [4, 6]\n  chunksize:\n    - 1M\n    - 256Q\n",
            "study.yaml:5: invalid size '256Q'",
        ),
        ("matrix:\n  topo: [kary:1, kary]\n", "study.yaml:2: invalid topology 'kary'"),
        ("matrix:\n  nodes: [4, 4]\n", "study.yaml:2: axis nodes lists 4 twice"),
        ("matrix:\n  mmap: [yes please]\n", "study.yaml:2: invalid mmap 'yes please'"),
        ("matrix:\n  chunksize: [4G]\n", "study.yaml:2: invalid chunksize '4G': Flux takes"),
        ("matrix: {nodes: 4}\n", "study.yaml:1: axis nodes: expected a list"),
        ("iterations: 0\n", "study.yaml:1: iterations must be >= 1, not 0"),
        ("iterations: two\n", "study.yaml:1: iterations must be a whole number, not 'two'"),
        ("sizes: [16M, 1X]\n", "study.yaml:1: invalid size '1X'"),
        ("strategies: [all, sideways]\n", "study.yaml:1: unknown strategy 'sideways'"),
        ("order: shuffled\n", "study.yaml:1: order must be given or random"),
        ("sizes: [1M]\nexperiment: pong\n", "study.yaml:2: unknown experiment 'pong'"),
        ("name: Chunk_Study\n", "study.yaml:1: invalid name 'Chunk_Study'"),
        ("name: a\nname: b\n", "study.yaml:2: name is given twice (first on line 1)"),
        (
            "matrix: {nodes: [4]}\nzip:\n  nodes: [4, 6]\n  topo: [kary:1, kary:2]\n",
            "study.yaml:3: axis nodes is both in the matrix and in the zip",
        ),
        (
            "zip:\n  nodes: [4, 6]\n  topo: [kary:1, kary:2, kary:3]\n",
            "study.yaml:1: zip axes need the same number of values: nodes 2, topo 3",
        ),
        ("matrix: [nodes]\n", "study.yaml:1: matrix must be a mapping"),
        ("- nodes\n", "study.yaml:1: a sweep file must be a mapping"),
        ("matrix:\n  nodes: [4\n", "study.yaml:3: not valid YAML"),
        ("", "study.yaml: the sweep file is empty"),
    ],
)
def test_every_mistake_is_one_line_with_its_line_number(
    tmp_path: Path, text: str, message: str
) -> None:
    path = _file(tmp_path, text)
    with pytest.raises(UserError) as err:
        load_sweep_file(path)
    assert str(err.value).startswith(f"{tmp_path}/{message}"), str(err.value)
    assert "\n" not in str(err.value)


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"^sweep file .*nope.yaml does not exist$"):
        load_sweep_file(tmp_path / "nope.yaml")


def test_a_sweep_file_may_ask_for_the_ping_experiment(tmp_path: Path) -> None:
    path = _file(tmp_path, "experiment: ping\nmatrix:\n  nodes: [4]\n  topo: [kary:1]\n")
    assert load_sweep_file(path).values["experiment"] == "ping"
