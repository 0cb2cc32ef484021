"""The parsed tables as DataFrames: made from cells' rows (analysis.tables.rows), and the
summary.

Rows are gathered as plain columns and tuples and turned into one DataFrame
per table at the end: building a DataFrame row by row (flux-distribute's
`df.loc[i, :] = row`) copies the frame on every insert and is orders of
magnitude slower.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from itertools import chain

import numpy as np
import pandas as pd

from analysis.read.records import void_mask
from analysis.tables.rows import TableRows
from analysis.tables.summary_rows import SUMMARY_COLUMNS, Summary, summary_of
from experiments.formats.parsed import (
    BLOB_COLUMN,
    EVENT_COLUMNS,
    EVENT_KINDS,
    KNOB_COLUMNS,
    PING_COLUMNS,
    PING_KINDS,
    PLACE_COLUMNS,
    RAN_COLUMNS,
    RUN_COLUMNS,
    RUN_KINDS,
    SUMMARY_KEYS,
)

__all__ = ["SUMMARY_KEYS", "summary_frame", "summary_table", "tables_of"]

# The keys that tell the summary's groups apart: the others follow from them
# (strategy from event, size_gb from size_bytes), and factorizing fewer text
# columns took a quarter off the summary's time.
_SUMMARY_GROUPS = [
    "backend", "cluster", *PLACE_COLUMNS, BLOB_COLUMN, "nodes", "topology", "topo",
    *KNOB_COLUMNS, *RAN_COLUMNS, "event", "size_label", "size_bytes",
]  # fmt: skip


def tables_of(parts: Sequence[TableRows]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(events, ping, runs): the rows of `parts`, one after the other, as tables."""
    events: dict[str, object] = {}
    for name in EVENT_COLUMNS:
        pieces = [part.events[name] for part in parts]
        if name in _NUMBERS:
            events[name] = np.concatenate([_numbers(p, _NUMBERS[name]) for p in pieces or [[]]])
        else:
            events[name] = list(chain.from_iterable(pieces))
    pings = list(chain.from_iterable(part.ping for part in parts))
    runs = list(chain.from_iterable(part.runs for part in parts))
    if not len(events["uid"]):  # type: ignore[arg-type]
        kinds = {"time_seconds": "float", "size_gb": "float", **EVENT_KINDS}
        events_frame = _frame([], EVENT_COLUMNS, kinds)
    else:
        events_frame = pd.DataFrame(events)
        for column, kind in EVENT_KINDS.items():
            events_frame[column] = events_frame[column].astype(_CASTS[kind])  # type: ignore[call-overload]
    if len(events_frame) and all(part.whole_gb for part in parts):
        # flux-distribute wrote whole GB sizes as integers (`1`, not `1.0`): keep that.
        events_frame["size_gb"] = events_frame["size_gb"].astype("int64")
    return (
        events_frame,
        _frame(pings, PING_COLUMNS, PING_KINDS),
        _frame(runs, RUN_COLUMNS, RUN_KINDS),
    )


# The events table's number columns and their dtypes.
_NUMBERS: dict[str, object] = {
    "iteration": np.int64, "nodes": np.int64, "size_bytes": np.int64,
    "time_seconds": np.float64, "size_gb": np.float64,
}  # fmt: skip


def _numbers(values: object, dtype: object) -> np.ndarray:
    """A number column as an array: a typed array (as a worker packs one) is read
    without a copy; numpy reads a list of numbers faster than pandas infers one."""
    if isinstance(values, array):
        return np.frombuffer(values, dtype=dtype)  # type: ignore[call-overload]
    return np.array(values, dtype=dtype)  # type: ignore[call-overload]


def _frame(
    rows: list[tuple[object, ...]], columns: list[str], kinds: Mapping[str, str]
) -> pd.DataFrame:
    """A table of row tuples; float and Int64 columns cast (pandas infers the others as
    `records_csv` writes them)."""
    frame = pd.DataFrame.from_records(rows, columns=columns)
    for column, kind in kinds.items():
        if kind in _CASTS:
            frame[column] = frame[column].astype(_CASTS[kind])  # type: ignore[call-overload]
    return frame


_CASTS = {"float": "float64", "Int64": "Int64"}
# The dtype of a summary column of each kind (analysis.tables.csv_cells.kind_cells).
_DTYPES = {"int": "int64", "float": "float64"}


def summary_table(events: pd.DataFrame) -> pd.DataFrame:
    """summary.csv of an events table, as a DataFrame (see analysis.tables.summary_rows)."""
    if events.empty:
        return summary_frame(summary_of([], np.array([]), np.array([]), np.array([]), False))
    frame = events.assign(
        **{
            # A column of NaN only is float: as text first, so "" fills it.
            c: events[c].astype(object).fillna("")
            for c in ("backend", "cluster", *PLACE_COLUMNS, BLOB_COLUMN, *RAN_COLUMNS)
            if c in events.columns and events[c].hasnans
        }
    )
    gid = frame.groupby(_SUMMARY_GROUPS, dropna=False, sort=False).ngroup().to_numpy()
    _, first = np.unique(gid, return_index=True)
    columns = [_python_values(frame[name].iloc[first]) for name in SUMMARY_KEYS]
    summary = summary_of(
        list(zip(*columns, strict=True)),
        frame["time_seconds"].to_numpy(dtype=float),
        (frame["status"] == "ok").to_numpy(),
        gid,
        frame["size_gb"].dtype.kind in "iu",
        void_mask(frame["status"]).to_numpy(dtype=bool),
    )
    return summary_frame(summary)


def summary_frame(summary: Summary) -> pd.DataFrame:
    """The summary as a DataFrame, with the dtypes of the events table's columns."""
    kinds = summary.kinds()
    columns = {
        name: pd.Series(values, dtype=_DTYPES.get(kinds[name], "str"))
        for name, values in summary.columns().items()
    }
    return pd.DataFrame(columns)[SUMMARY_COLUMNS]


def _python_values(column: pd.Series) -> list[object]:
    """A column's values as Python objects, None where missing."""
    return [None if pd.isna(value) else value for value in column.tolist()]
