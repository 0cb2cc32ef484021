"""Flux knobs in analysis: columns in the tables, statistics per setting, --only, plots, report."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from analysis_samples import kary_log, run_record, write_cell
from typer.testing import CliRunner

from analysis import parse
from analysis.page.view import strategy_views
from analysis.tables.parsed_dir import load_parsed
from experiments.cli import app
from experiments.errors import UserError
from experiments.formats.cell_layout import NO_KNOBS, Knobs, cell_id
from experiments.formats.kary_line import format_kary_line, kary_records
from experiments.formats.parsed import EVENTS_CSV

SMALL, LARGE = Knobs(chunksize=256 * 2**10), Knobs(chunksize=2**20)


def _log(iteration: int, knobs: Knobs, seconds: float) -> str:
    """kary_log's log, its cell line saying the knobs as the entrypoint does."""
    log = kary_log(4, "kary:2", iteration, sizes=("16M",), seconds=seconds)
    lines = log.splitlines(keepends=True)
    for i, line in enumerate(lines):
        record = next(iter(kary_records(line)), None)
        if record is not None and record.get("meta") == "cell":
            record["cell"] = cell_id(4, "kary:2", iteration, knobs)
            labels = {k: v for k, v in knobs.labels().items() if v}
            lines[i] = format_kary_line({**record, "knobs": labels}) + "\n"
    return "".join(lines)


@pytest.fixture
def knob_tree(tmp_path: Path) -> Path:
    """4 nodes, kary:2, chunksize 256K (1 s) against 1M (2 s), four iterations each."""
    raw = tmp_path / "raw"
    for knobs, seconds in ((SMALL, 1.0), (LARGE, 2.0)):
        for iteration in range(4):
            record = run_record(4, "kary:2", iteration, **knobs.values())
            write_cell(
                raw, cell_id(4, "kary:2", iteration, knobs), _log(iteration, knobs, seconds), record
            )
    (raw / "sweeps").mkdir()
    (raw / "sweeps" / f"{'0' * 64}.yaml").write_text("nodes: [4]\n")
    return raw


def test_the_tables_have_a_column_per_knob_and_statistics_per_setting(
    knob_tree: Path, tmp_path: Path
) -> None:
    result = parse(knob_tree, tmp_path / "parsed", plots=False)
    assert result.problems == []  # the kept sweep file is no stray; no identity disagrees
    events = pd.read_csv(tmp_path / "parsed" / EVENTS_CSV, keep_default_na=False)
    assert sorted(set(events["chunksize"])) == ["1M", "256K"]
    assert set(events["mmap"]) == {""} and set(events["purge_target_size"]) == {""}
    summary = result.parsed.summary
    distribute = summary[summary["event"] == "distribute-all-nodes"]
    assert list(zip(distribute["chunksize"], distribute["n"], strict=True)) == [
        ("256K", 4),
        ("1M", 4),
    ]
    assert list(distribute["median"]) == [2.0, 4.0]  # kary_log: 2 x seconds for the 2nd step
    assert sorted(set(result.parsed.runs["chunksize"])) == ["1M", "256K"]


def test_knobs_come_from_run_json_the_log_and_the_path_and_disagreements_are_said(
    tmp_path: Path,
) -> None:
    raw = tmp_path / "raw"
    # No run.json: the directory and the cell line agree.
    write_cell(raw, cell_id(4, "kary:2", 0, SMALL), _log(0, SMALL, 1.0))
    # run.json says 1M, the directory 256K: run.json is believed, and the clash reported.
    write_cell(
        raw,
        cell_id(4, "kary:2", 1, SMALL),
        _log(1, LARGE, 1.0),
        run_record(4, "kary:2", 1, chunksize=2**20),
    )
    result = parse(raw, tmp_path / "parsed", plots=False)
    runs = result.parsed.runs.sort_values("iteration")
    assert list(runs["chunksize"]) == ["256K", "1M"]
    assert [str(p) for p in result.problems] == [
        "warning 4/kary-2/chunksize-256K/1/topology-experiment.out: the directory says "
        "knobs chunksize 256K, run.json says chunksize 1M (used)"
    ]


def test_only_parses_the_cells_it_selects(knob_tree: Path, tmp_path: Path) -> None:
    result = parse(knob_tree, tmp_path / "parsed", plots=False, only="chunksize=1M,iteration=0")
    assert result.cells == 1
    assert set(result.parsed.events["chunksize"]) == {"1M"}
    assert result.parsed.meta["only"] == "chunksize=1M,iteration=0"
    with pytest.raises(UserError, match=r"^--only nodes=30 selects none of the 8 cells in "):
        parse(knob_tree, tmp_path / "none", plots=False, only="nodes=30")


def test_kary_parse_only_is_one_line_when_bad(knob_tree: Path, tmp_path: Path) -> None:
    args = ["parse", "--data", str(knob_tree), "--out", str(tmp_path / "p"), "--no-plots"]
    good = CliRunner().invoke(app, [*args, "--only", "chunksize=256K"])
    assert good.exit_code == 0, good.output
    assert good.stdout.startswith("parsed 4 logs in 4 cells")
    bad = CliRunner().invoke(app, [*args, "--only", "chunk=1M"])
    assert bad.exit_code == 2
    assert bad.stderr.splitlines() == [
        "kary: error: invalid --only key 'chunk': choose from nodes, topo, blob, chunksize, mmap, "
        "purge_target_size, iteration"
    ]


def test_plots_and_report_compare_the_settings_of_a_knob_that_varies(
    knob_tree: Path, tmp_path: Path
) -> None:
    result = parse(knob_tree, tmp_path / "parsed")
    plots = sorted(p.name for p in result.written if p.suffix == ".png")
    assert "knob-chunksize-distribute-all-nodes.png" in plots
    assert not any(name.startswith("knob-mmap") for name in plots)  # mmap never varied
    (view,) = strategy_views(result.parsed)
    assert view["design_title"] == "topology, knobs"
    (group,) = view["groups"]
    assert [row["design"] for row in group["rows"]] == [
        "kary:2 · chunksize 256K",
        "kary:2 · chunksize 1M",
    ]
    (verdict,) = group["matrix"]
    # Four runs a side, all of one below all of the other: Mann-Whitney p = 0.029.
    assert (verdict["status"], verdict["design"]) == ("clear", "kary:2 · chunksize 256K")
    assert "does chunksize matter?" in (tmp_path / "parsed" / "report.html").read_text()


def test_a_tree_without_knobs_reads_as_before(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    for iteration in range(2):
        write_cell(raw, cell_id(4, "kary:2", iteration), kary_log(4, "kary:2", iteration))
    result = parse(raw, tmp_path / "parsed")
    assert not any(p.name.startswith("knob-") for p in result.written)
    (view,) = strategy_views(result.parsed)
    assert view["design_title"] == "topology"
    assert {row["design"] for group in view["groups"] for row in group["rows"]} == {"kary:2"}
    assert NO_KNOBS.labels() == {"chunksize": "", "mmap": "", "purge_target_size": ""}


def test_a_parsed_directory_from_before_knobs_loads_with_them_unset(
    knob_tree: Path, tmp_path: Path
) -> None:
    out = tmp_path / "parsed"
    parse(knob_tree, out, plots=False)
    for name in (EVENTS_CSV, "runs.csv", "summary.csv"):
        frame = pd.read_csv(out / name)
        frame.drop(columns=["chunksize", "mmap", "purge_target_size"]).to_csv(
            out / name, index=False
        )
    parsed = load_parsed(out)
    assert set(parsed.events["chunksize"]) == {""}
    assert json.loads((out / "parse.json").read_text())["format"] == 1
    assert strategy_views(parsed)[0]["design_title"] == "topology"
