"""The parse writes its tables from rows, without pandas: the same bytes pandas writes from
the DataFrames, in every order the cells can take."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from analysis_samples import kary_log, legacy_log, ping_log, run_record, write_cell

from analysis import parse_tree
from analysis.tables.frames import summary_table
from analysis.tables.parsed_dir import write_parsed
from experiments.model.cell_filter import parse_only


def _tree(root: Path, moved: bool = True) -> Path:
    """Seed and kary logs, failures, a knob, a ping run, whole and fractional GB, and
    (`moved`) a cell whose run.json moves it before every other (path order is not cell
    order: the rows are then reordered)."""
    write_cell(root, "4/kary-1/0", legacy_log(4, "kary:1", sizes=(1, 2)))
    write_cell(root, "4/kary-1/1", legacy_log(4, "kary:1", sizes=(1, 2)))
    failing = {"distribute-all-nodes-1": "[1-3]: Exit 1\n\nreal\t0m0.017s\n"}
    write_cell(root, "4/kary-1/2", legacy_log(4, "kary:1", sizes=(1, 2), blocks=failing))
    for iteration in range(3):
        write_cell(
            root,
            f"4/kary-2/chunksize-256K/{iteration}",
            kary_log(4, "kary:2", iteration, rc={"distribute-all-nodes-64M": iteration % 2}),
            run_record(4, "kary:2", iteration, chunksize=256 * 1024, cluster="eks-6"),
        )
    write_cell(
        root, "4/kary-1/9", ping_log(failed_rank=2), run_record(4, "kary:1", 9, experiment="ping")
    )
    if moved:
        write_cell(root, "moved/here", kary_log(2, "kary:1", 0), run_record(2, "kary:1", 0))
    return root


def _pandas_wrote(result_parsed: object, out: Path) -> dict[str, bytes]:
    write_parsed(out, result_parsed, jobs=1)  # type: ignore[arg-type]
    return {path.name: path.read_bytes() for path in sorted(out.iterdir())}


@pytest.mark.parametrize(
    ("moved", "only"),
    [
        (False, None),
        (True, None),
        (True, "nodes=4"),
        (False, "topo=kary:2"),
        (False, "topo=kary:1"),
    ],
)
def test_rows_write_the_bytes_pandas_writes(tmp_path: Path, moved: bool, only: str | None) -> None:
    raw = _tree(tmp_path / "raw", moved)
    result = parse_tree(raw, tmp_path / "rows", plots=False, only=parse_only(only))
    written = {path.name: path.read_bytes() for path in result.written}
    assert written == _pandas_wrote(result.parsed, tmp_path / "pandas")
    events = result.parsed.events
    if only is None:
        # The moved cell leads; a ping, a failure and a knob are all in the tables.
        assert events["nodes"].iloc[0] == (2 if moved else 4)
        assert len(result.parsed.ping) == 16
        assert set(events["status"]) == {"ok", "failed"}
        assert "256K" in set(events["chunksize"])
    if only == "topo=kary:1":  # seed logs alone are kept: their sizes are whole GB
        assert events["size_gb"].dtype == "int64" and set(events["size_gb"]) == {1, 2}
    # The summary made from rows is the one made from the events DataFrame.
    pd.testing.assert_frame_equal(result.parsed.summary, summary_table(events))


def test_a_carriage_return_in_a_value_goes_to_pandas_writer(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    write_cell(raw, "4/kary-1/0", legacy_log(4, "kary:1", sizes=(1,)))
    write_cell(
        raw,
        "4/kary-2/0",
        kary_log(4, "kary:2", 0),
        run_record(4, "kary:2", 0, state="failed", error="line one\rline two"),
    )
    result = parse_tree(raw, tmp_path / "rows", plots=False)
    written = {path.name: path.read_bytes() for path in result.written}
    assert written == _pandas_wrote(result.parsed, tmp_path / "pandas")
    assert b"line one\rline two" in written["runs.csv"]


_NO_PLOTS = """
import sys
from experiments.cli import main
try:
    main(["parse", "--data", sys.argv[1], "--out", sys.argv[2], "--no-plots"])
except SystemExit as done:
    assert done.code == 0, done.code
print(sorted(name for name in ("pandas", "matplotlib") if name in sys.modules))
"""


def test_parse_without_plots_never_imports_pandas(tmp_path: Path) -> None:
    raw = _tree(tmp_path / "raw")
    out = subprocess.run(
        [sys.executable, "-c", _NO_PLOTS, str(raw), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.splitlines()[-1] == "[]"
    assert (tmp_path / "out" / "summary.csv").read_text().count("\n") > 10


def test_summary_groups_are_numbered_once_per_design_and_steps(tmp_path: Path) -> None:
    """Cells of one design running the same steps share their group numbers (numbered
    once); a cell of that design with other steps gets its own, in first-seen order."""
    from analysis.read.cell import parse_cell
    from analysis.read.walk import find_cells
    from analysis.tables.rows import table_rows

    root = tmp_path / "raw"
    write_cell(root, "4/kary-2/0", legacy_log(4, "kary:2", sizes=(1,)))
    write_cell(root, "4/kary-2/1", legacy_log(4, "kary:2", sizes=(1, 2)))
    write_cell(root, "4/kary-2/2", legacy_log(4, "kary:2", sizes=(1,)))
    cells, _ = find_cells(root)
    rows = table_rows([parse_cell(cell) for cell in cells])
    one, both = [0, 1, 2], [0, 1, 2, 3, 4, 5]
    assert list(rows.group_ids) == one + both + one
    assert list(rows.groups) == [
        (0, event, size, int(size) * 2**30)
        for size in ("1", "2")
        for event in ("create-archive", "distribute-all-nodes", "clean-all-nodes")
    ]
    assert len(rows.steps_groups) == 2  # the two step sequences of the design
    rows.pack()
    assert rows.steps_groups == {}  # numbering done: not sent back by a worker


def test_packed_text_columns_are_coded_and_read_as_the_lists_they_were() -> None:
    """A worker sends each text column as its distinct values and a byte per row (a
    large parse held 8 bytes a row a column); it still reads as its list."""
    import pickle

    from analysis.tables.rows import CodedColumn, TableRows

    rows = TableRows()
    rows.events["uid"] = ["kary-1-4"] * 3 + ["kary-2-4"] * 2
    rows.events["reason"] = ["", None, "", "a, b", ""]
    rows.events["archive_chunks"] = [1, True, None, 1.0, 2]  # not text: a dict would merge 1s
    rows.pack()
    uid, reason = rows.events["uid"], rows.events["reason"]
    assert isinstance(uid, CodedColumn) and uid.codes.itemsize == 1
    assert list(uid) == ["kary-1-4"] * 3 + ["kary-2-4"] * 2
    assert (len(uid), uid.count("kary-2-4"), uid.count("nothing")) == (5, 2, 0)
    assert list(reason) == ["", None, "", "a, b", ""]
    assert rows.events["archive_chunks"] == [1, True, None, 1.0, 2]
    assert list(pickle.loads(pickle.dumps(uid))) == list(uid)
    many = CodedColumn.of([str(i) for i in range(70_000)])
    assert many.codes.itemsize == 4 and list(many)[-1] == "69999"
