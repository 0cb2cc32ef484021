"""summary.csv without pandas: per (backend, cluster, place, links, cpu_bound, blob,
nodes, topology, knobs, event, size) statistics of the events table, in the order a reader expects.

The one implementation of the summary: the parse makes it from its workers'
rows (`summary_of_rows`), and `analysis.tables.frames.summary_table` from a
DataFrame's columns; both end in `summary_of`.  seconds_per_gb is the median
divided by the size in GiB.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from analysis.read.records import is_void
from analysis.tables.csv_cells import kind_cells, quoted, table_text
from analysis.tables.group_stats import SUMMARY_STATS, group_stats
from analysis.tables.rows import TableRows, size_gb_of
from experiments.formats.cell_layout import knob_label_order
from experiments.formats.events import event_sort_key, strategy_of, topology_order_key
from experiments.formats.parsed import (
    BLOB_COLUMN,
    KNOB_COLUMNS,
    PLACE_COLUMNS,
    RAN_COLUMNS,
    SUMMARY_KEYS,
)

__all__ = ["SUMMARY_COLUMNS", "Summary", "summary_of", "summary_of_rows"]

_STATS = [*SUMMARY_STATS, "seconds_per_gb"]
SUMMARY_COLUMNS = [*SUMMARY_KEYS, *_STATS]
# Every statistic in seconds or a ratio is rounded: timings are given to the
# microsecond, and interpolated quartiles and ratios would otherwise print
# float noise (0.031246000000000003).  The counts are whole already.
_ROUNDED = (*(s for s in SUMMARY_STATS if s not in ("n", "failed")), "seconds_per_gb")
_INT_KEYS = ("nodes", "size_bytes")
_SIZE_GB = SUMMARY_KEYS.index("size_gb")


@dataclass
class Summary:
    """The summary's rows: each group's SUMMARY_KEYS values, and its statistics.

    `whole_gb`: size_gb is written as integers (as the events table's column).
    """

    keys: list[tuple[object, ...]]
    stats: dict[str, np.ndarray]
    whole_gb: bool

    def kinds(self) -> dict[str, str]:
        """Each column's kind (analysis.tables.csv_cells.kind_cells): the keys' as in the events
        table (size_gb whole or not), the counts whole, the other statistics floats."""
        kinds = {name: "int" if name in _INT_KEYS else "text" for name in SUMMARY_KEYS}
        kinds["size_gb"] = "int" if self.whole_gb else "float"
        kinds.update({name: "int" if name in ("n", "failed") else "float" for name in _STATS})
        return kinds

    def columns(self) -> dict[str, list[object]]:
        """Each column's values, in SUMMARY_COLUMNS order."""
        keys = {name: [key[i] for key in self.keys] for i, name in enumerate(SUMMARY_KEYS)}
        return {**keys, **{name: self.stats[name].tolist() for name in _STATS}}

    def csv(self) -> str:
        """summary.csv's text, as pandas writes the summary's DataFrame."""
        kinds = self.kinds()
        cells = [kind_cells(kinds[name], values) for name, values in self.columns().items()]
        text = table_text(quoted(SUMMARY_COLUMNS), cells)
        if text is None:  # a carriage return in a key: never in a key kary writes
            raise ValueError("summary keys hold a carriage return")
        return text


def summary_of(
    keys: Sequence[tuple[object, ...]],
    values: np.ndarray,
    ok: np.ndarray,
    gid: np.ndarray,
    whole_gb: bool,
    void: np.ndarray | None = None,
) -> Summary:
    """The summary of rows whose group (an index into `keys`) is `gid`; groups keep the
    order of `keys` where the sort order ties.

    Rows marked in `void` (a failed precondition: analysis.read.records.is_void) are
    left out altogether, neither a timing nor a failure, and a group of void
    rows only is no group of the summary.
    """
    count = len(keys)
    if void is not None and void.any():
        kept = ~void
        values, ok, gid = values[kept], ok[kept], gid[kept]
    stats = group_stats(values, ok, gid, count)
    if void is not None and void.any():
        present = np.flatnonzero(stats["n"] + stats["failed"] > 0)
        keys = [keys[int(group)] for group in present]
        stats = {name: column[present] for name, column in stats.items()}
        count = len(keys)
    size_gb = np.array([key[_SIZE_GB] for key in keys], dtype=float)
    stats["seconds_per_gb"] = stats["median"] / size_gb
    for name in _ROUNDED:
        stats[name] = stats[name].round(6)
    order = sorted(range(count), key=lambda group: _sort_key(keys[group]))
    return Summary(
        [keys[group] for group in order],
        {name: column[order] for name, column in stats.items()},
        whole_gb,
    )


def summary_of_rows(parts: Sequence[TableRows]) -> Summary:
    """The summary of these rows (the events table is their rows one after the other)."""
    global_ids: dict[tuple[tuple[object, ...], str, str, int], int] = {}
    pieces = []
    for part in parts:
        cells = list(part.cell_keys)
        local = [
            global_ids.setdefault((cells[cell], event, label, size), len(global_ids))
            for cell, event, label, size in part.groups
        ]
        pieces.append(np.asarray(local, dtype=np.int64)[_ids(part)])
    keys = [
        (*cell, event, strategy_of(event), label, size, size_gb_of(size))
        for cell, event, label, size in global_ids
    ]
    gid = np.concatenate(pieces) if pieces else np.array([], dtype=np.int64)
    if not parts:
        return summary_of([], np.array([]), np.array([]), np.array([]), True)
    values = np.concatenate([_floats(part.events["time_seconds"]) for part in parts])
    status = np.concatenate([np.array(list(part.events["status"]), dtype=object) for part in parts])
    ok = status == "ok"
    # Only the rows that are not ok can be void: a Python call per row would
    # cost at a few hundred thousand steps.
    void = np.zeros(len(status), dtype=bool)
    not_ok = np.flatnonzero(~ok)
    void[not_ok] = [is_void(s) for s in status[not_ok]]
    return summary_of(keys, values, ok.astype(bool), gid, all(p.whole_gb for p in parts), void)


def _ids(part: TableRows) -> np.ndarray:
    ids = part.group_ids
    return np.frombuffer(ids, dtype=np.int64) if not isinstance(ids, list) else np.array(ids)


def _floats(values: object) -> np.ndarray:
    if isinstance(values, list):
        return np.array([np.nan if v is None else v for v in values], dtype=float)
    return np.frombuffer(values, dtype=float)  # type: ignore[call-overload]


def _sort_key(key: tuple[object, ...]) -> tuple[object, ...]:
    """Nodes, topology (kary:1 .. kary:16, binomial), knobs, event, size."""
    named = dict(zip(SUMMARY_KEYS, key, strict=True))
    return (
        str(named["backend"]),
        str(named["cluster"]),
        *(str(named[name]) for name in PLACE_COLUMNS),
        str(named[BLOB_COLUMN]),
        named["nodes"],
        topology_order_key(str(named["topo"])),
        tuple(knob_label_order(str(named[name])) for name in KNOB_COLUMNS),
        tuple(str(named[name]) for name in RAN_COLUMNS),
        event_sort_key(str(named["event"])),
        named["size_bytes"],
    )
