"""csv_text writes what pandas' to_csv writes, byte for byte, and faster."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import parse_tree
from analysis.tables.csv_text import csv_text


def test_every_parsed_table_is_written_as_pandas_writes_it(
    small_tree: Path, flux_distribute: Path, tmp_path: Path
) -> None:
    # A kary tree with a failed step (its reason has a colon and brackets) and
    # flux-distribute's ping tree (nullable hops, ms and seconds as floats).
    for tree in (small_tree, flux_distribute / "raw-ping-kind"):
        parsed = parse_tree(tree, tmp_path / f"parsed-{tree.name}", plots=False).parsed
        for table in (parsed.events, parsed.ping, parsed.runs, parsed.summary):
            assert csv_text(table) == table.to_csv(index=False)


def test_awkward_values_are_written_as_pandas_writes_them() -> None:
    frame = pd.DataFrame(
        {
            "text": pd.array(["a,b", 'say "hi"', "two\nlines", "", None, " lead"], dtype="str"),
            "floats": [0.1 + 0.2, 1e-7, 1e16, -0.0, np.nan, np.inf],
            "ints": [0, -1, 2**40, 3, 4, 5],
            "flags": [True, False, True, True, False, False],
            "maybe": pd.array([1, None, 3, None, 5, 6], dtype="Int64"),
            "objects": ["x", None, np.nan, 7, 1.5, pd.NA],
        }
    )
    assert csv_text(frame) == frame.to_csv(index=False)
    assert csv_text(frame.iloc[:0]) == frame.iloc[:0].to_csv(index=False)


@pytest.mark.parametrize(
    "values",
    [
        [0.1 + 0.2, 1e-7, 1e16, -0.0, np.inf, 2.0],  # all floats: one map(repr)
        [0.1 + 0.2, None, 2.0],  # a missing time (a worker's rows)
        [0.5, np.nan],
        [np.float64(0.1), 1.0],  # a float subclass
        [3, 0.5],  # an int in a float column
    ],
)
def test_float_cells_write_each_float_as_pandas_does(values: list[object]) -> None:
    from analysis.tables.csv_cells import float_cells

    column = pd.Series([np.nan if v is None else v for v in values], dtype="float64")
    expected = column.to_frame("x").to_csv(index=False).splitlines()[1:]
    assert float_cells(values) == [cell.strip('"') for cell in expected]


@pytest.mark.parametrize(
    "frame",
    [
        pd.DataFrame({"only": ["", "x"]}),  # one column: pandas quotes the empty cell
        pd.DataFrame({"a": ["carriage\rreturn"], "b": [1]}),  # quoting varies by Python
        pd.DataFrame({"when": pd.to_datetime(["2026-01-01"]), "b": [1]}),  # not handled here
    ],
)
def test_what_csv_text_does_not_handle_goes_to_pandas(frame: pd.DataFrame) -> None:
    assert csv_text(frame) == frame.to_csv(index=False)


_WRITE_FORKED = """
import sys
import numpy as np
import pandas as pd
import analysis.tables.csv_text as ct
ct.ROWS_PER_JOB = 10  # fork even for a small frame
forked = []
real = ct.Forked
ct.Forked = lambda tasks, workers: forked.append(workers) or real(tasks, workers)
rows = 95
text = [f"row {i}" if i % 7 else 'a "quoted", row' for i in range(rows)]
frame = pd.DataFrame(
    {"text": pd.array(text, dtype="str"), "seconds": np.linspace(0, 1, rows), "n": range(rows)}
)
same = ct.csv_text(frame, jobs=3) == frame.to_csv(index=False)
sys.stdout.write(f"{forked} {same}")
"""


def test_rows_written_by_forked_workers_join_into_the_same_text() -> None:
    import subprocess
    import sys

    # A fresh interpreter has one thread, so it may fork (pytest's may not).
    done = subprocess.run(
        [sys.executable, "-c", _WRITE_FORKED], capture_output=True, text=True, check=True
    )
    assert done.stdout == "[2] True"  # this process and two workers
