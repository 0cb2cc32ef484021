"""Sweep files through `kary plan` / `kary run` and the Python API: flags override the file,
the file and its hash are recorded, `--only` picks cells, bad input is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from experiments import Sweep, plan
from experiments.cli import app
from experiments.errors import UserError
from experiments.formats.cell_layout import Knobs, sweep_copy_path
from experiments.formats.run_record import read_record
from experiments.model.sweep import load_sweep

runner = CliRunner()

STUDY = """\
name: knob-study
matrix:
  nodes: [4]
  topo: [kary:1, kary:2]
  chunksize: [256K, 1M]
sizes: [1M]
iterations: 2
backend: local
data_dir: raw
"""


@pytest.fixture
def study(tmp_path: Path) -> Path:
    path = tmp_path / "study.yaml"
    path.write_text(STUDY)
    return path


def test_the_python_api_reads_a_file_and_overrides_it_as_flags_do(study: Path) -> None:
    sweep = Sweep.from_file(study, iterations=1, chunksize="64K")
    assert sweep.matrix == {"nodes": [4], "topo": ["kary:1", "kary:2"]}  # --chunksize won
    assert sweep.data_dir == study.parent / "raw"  # relative to the file
    cells = plan(sweep).plan.cells
    assert [c.id for c in cells] == ["4/kary-1/chunksize-64K/0", "4/kary-2/chunksize-64K/0"]
    assert load_sweep(study).override(topos=["kary:3"]).matrix == {
        "nodes": [4],
        "chunksize": [2**18, 2**20],
    }


def test_plan_counts_every_cell_and_flags_given_override_the_file(study: Path) -> None:
    whole = runner.invoke(app, ["plan", str(study)])
    assert whole.exit_code == 0, whole.output
    assert whole.stdout.startswith("kary plan: 8 cells to run, 0 already done (skipped)")
    assert f"sweep file: {study} (sha256 " in whole.stdout
    # --iters is given: it wins; every other value (backend, sizes, axes) is the file's.
    one = runner.invoke(app, ["plan", str(study), "--iters", "1", "--json"])
    data = json.loads(one.stdout)
    assert [c["id"] for c in data["cells"]] == [
        "4/kary-1/chunksize-256K/0",
        "4/kary-1/chunksize-1M/0",
        "4/kary-2/chunksize-256K/0",
        "4/kary-2/chunksize-1M/0",
    ]
    assert data["backend"] == "local" and data["cells"][0]["sizes"] == [2**20]
    assert data["sweep_file"]["path"] == str(study)


def test_only_selects_cells_of_a_file(study: Path) -> None:
    result = runner.invoke(app, ["plan", str(study), "--only", "topo=kary:2,chunksize=1M"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("kary plan: 2 cells to run")
    assert "4/kary-2/chunksize-1M/0" in result.stdout and "kary-1" not in result.stdout
    assert "only: topo=kary:2,chunksize=1M" in result.stdout


def test_a_run_records_the_file_its_hash_and_each_cells_knobs(study: Path) -> None:
    args = ["run", str(study), "--iters", "1", "--only", "topo=kary:2", "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    file = load_sweep(study).file
    assert file is not None
    raw = study.parent / "raw"
    assert sweep_copy_path(raw, file.sha256).read_bytes() == study.read_bytes()
    record = read_record(raw / "4/kary-2/chunksize-256K/0")
    assert record is not None and record.state == "succeeded", record
    assert record.knobs == Knobs(chunksize=2**18)
    assert (record.sweep_file, record.sweep_sha256) == (str(study.resolve()), file.sha256)
    log = (raw / "4/kary-2/chunksize-256K/0/topology-experiment.out").read_text()
    assert "--chunksize=262144 --directory" in log


@pytest.mark.parametrize(
    ("text", "extra", "message"),
    [
        ("backend: slurm\n", [], "study.yaml:1: unknown backend 'slurm'"),
        ("matrix:\n  nodes: [4]\n  topo: [kary:x]\n", [], "study.yaml:3: invalid topology"),
        (STUDY, ["--only", "nodes"], "invalid --only 'nodes': expected KEY=VALUE"),
        (STUDY, ["--only", "nodes=30"], "--only nodes=30 selects none of the 8 cells"),
        (STUDY, ["--chunksize", "lots"], "--chunksize: invalid size 'lots'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, text: str, extra: list[str], message: str
) -> None:
    path = tmp_path / "study.yaml"
    path.write_text(text)
    result = runner.invoke(app, ["plan", str(path), *extra])
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr


def test_axes_and_the_flags_they_replace_cannot_both_be_given(study: Path) -> None:
    sweep = load_sweep(study)
    with pytest.raises(UserError, match="nodes is an axis"):
        plan(Sweep(**{**sweep.__dict__, "exact_nodes": 4}))
