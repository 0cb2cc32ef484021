"""The parsed tables as DataFrames: made from cells' rows (analysis.table_rows), and the
summary.

Rows are gathered as plain columns and tuples and turned into one DataFrame
per table at the end: building a DataFrame row by row (the seed's
`df.loc[i, :] = row`) copies the frame on every insert and is orders of
magnitude slower.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from itertools import chain

import numpy as np
import pandas as pd

from analysis.stats import SUMMARY_STATS, summarize
from analysis.table_rows import (
    EVENT_COLUMNS,
    KNOB_COLUMNS,
    PING_COLUMNS,
    RUN_COLUMNS,
    TableRows,
)
from experiments.formats.cell_layout import knob_label_order
from experiments.formats.events import event_sort_key, topology_order_key

__all__ = [
    "SUMMARY_KEYS",
    "order_summary",
    "summary_table",
    "tables_of",
]

SUMMARY_KEYS = [
    "backend",
    "cluster",
    "nodes",
    "topology",
    "topo",
    *KNOB_COLUMNS,
    "event",
    "strategy",
    "size_label",
    "size_bytes",
    "size_gb",
]

# The keys that tell the summary's groups apart: the others follow from them
# (strategy from event, size_gb from size_bytes), and factorizing fewer text
# columns took a quarter off the summary's time.
_SUMMARY_GROUPS = [
    "backend", "cluster", "nodes", "topology", "topo", *KNOB_COLUMNS, "event", "size_label",
    "size_bytes",
]  # fmt: skip
# Every statistic in seconds or a ratio is rounded; the counts are whole already.
_ROUNDED = (*(s for s in SUMMARY_STATS if s not in ("n", "failed")), "seconds_per_gb")


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
        floats: dict[str, object] = {name: float for name, t in _NUMBERS.items() if t is float}
        events_frame = _frame([], EVENT_COLUMNS, floats)
    else:
        events_frame = pd.DataFrame(events)
    if len(events_frame) and all(part.whole_gb for part in parts):
        # The seed wrote whole GB sizes as integers (`1`, not `1.0`): keep that.
        events_frame["size_gb"] = events_frame["size_gb"].astype("int64")
    return (
        events_frame,
        _frame(pings, PING_COLUMNS, {"time_ms": float, "time_seconds": float, "hops": "Int64"}),
        _frame(runs, RUN_COLUMNS, {}),
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
    rows: list[tuple[object, ...]], columns: list[str], dtypes: dict[str, object]
) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(rows, columns=columns)
    for column, dtype in dtypes.items():
        frame[column] = frame[column].astype(dtype)  # type: ignore[call-overload]
    return frame


def summary_table(events: pd.DataFrame) -> pd.DataFrame:
    """summary.csv: per (backend, cluster, nodes, topology, event, size) statistics.

    seconds_per_gb is the median divided by the size in GiB.
    """
    missing = {c: events[c].fillna("") for c in ("backend", "cluster") if events[c].hasnans}
    frame = events.assign(**missing) if missing else events
    summary = summarize(frame, SUMMARY_KEYS, group_by=_SUMMARY_GROUPS)
    summary["seconds_per_gb"] = summary["median"] / summary["size_gb"].astype(float)
    # Timings are given to the microsecond; interpolated quartiles and ratios
    # would otherwise print float noise (0.031246000000000003).
    for column in _ROUNDED:
        summary[column] = summary[column].astype(float).round(6)
    return order_summary(summary)


def order_summary(summary: pd.DataFrame) -> pd.DataFrame:
    """Sort as a reader expects: nodes, topology (kary:1 .. kary:16, binomial), event, size."""
    if summary.empty:
        return summary.reset_index(drop=True)
    keys = pd.DataFrame(
        {
            "backend": summary["backend"].astype(str),
            "cluster": summary["cluster"].astype(str),
            "nodes": summary["nodes"],
            "topo": [topology_order_key(t) for t in summary["topo"].astype(str)],
            "knobs": [
                tuple(knob_label_order(str(label)) for label in labels)
                for labels in summary[KNOB_COLUMNS].itertuples(index=False)
            ],
            "event": [event_sort_key(e) for e in summary["event"].astype(str)],
            "size": summary["size_bytes"],
        }
    )
    order = np.lexsort(
        [
            keys[c].to_numpy() if c in ("nodes", "size") else _codes(keys[c])
            for c in reversed(keys.columns)
        ]
    )
    return summary.iloc[order].reset_index(drop=True)


def _codes(column: pd.Series) -> np.ndarray:
    """Dense ranks of a column of sortable values (tuples included)."""
    ranks = {value: i for i, value in enumerate(sorted(set(column)))}
    return np.array([ranks[v] for v in column])
