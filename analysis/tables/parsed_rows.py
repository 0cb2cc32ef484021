"""A parse's tables as its workers' rows: written as CSV text without pandas, made into
DataFrames only when asked (`analysis.tables.frames.parsed_of_rows`).

`kary parse --no-plots` never imports pandas: the events text comes from the
workers, the ping and runs tables from their row tuples, and the summary from
numpy (analysis.tables.summary_rows).  The text is the same byte for byte as pandas
writes the DataFrames (tests compare them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate, chain
from typing import Any, Protocol, TypeVar

from analysis.read.records import is_void
from analysis.tables.csv_cells import quoted
from analysis.tables.rows import TableRows, events_csv_rows, records_csv
from analysis.tables.summary_rows import Summary, summary_of_rows
from experiments.formats.parsed import (
    EVENT_COLUMNS,
    EVENTS_CSV,
    PING_COLUMNS,
    PING_CSV,
    PING_KINDS,
    RUN_COLUMNS,
    RUN_KINDS,
    RUNS_CSV,
    SUMMARY_CSV,
)

__all__ = ["ParsedRows", "take_cells"]


class _Chunked(Protocol):
    """A text kept compressed: its UTF-8 bytes a piece at a time."""

    def chunks(self) -> Iterator[bytes]: ...


_PING_STATUS = PING_COLUMNS.index("status")
T = TypeVar("T")


@dataclass
class ParsedRows:
    """The tables' rows: `parts` one after the other; `events_texts`, where the workers
    wrote them, each part's events rows as CSV (see analysis.tree_slices)."""

    parts: list[TableRows]
    overlays: dict[str, list[str]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    # Each a str, or a text kept compressed (analysis.tree_slices.CompressedText).
    events_texts: list[str | _Chunked | None] | None = None

    @property
    def steps(self) -> int:
        return sum(len(part.events["uid"]) for part in self.parts)

    @property
    def steps_failed(self) -> int:
        return sum(part.events["status"].count("failed") for part in self.parts)

    @property
    def steps_void(self) -> int:
        # Counted by distinct status (a handful), not step by step: a Counter counts
        # in C, and testing each of 220,000 statuses in Python was a share of the
        # parent's serial work after the workers.
        counts = Counter(chain.from_iterable(part.events["status"] for part in self.parts))
        return sum(n for status, n in counts.items() if is_void(status))

    @property
    def pings(self) -> int:
        return sum(len(part.ping) for part in self.parts)

    @property
    def pings_failed(self) -> int:
        return sum(row[_PING_STATUS] == "failed" for part in self.parts for row in part.ping)

    @property
    def whole_gb(self) -> bool:
        """size_gb is written as integers: every part's sizes are whole GB."""
        return all(part.whole_gb for part in self.parts)

    @cached_property
    def summary(self) -> Summary:
        return summary_of_rows(self.parts)

    def texts(self) -> dict[str, str | Iterable[str | bytes] | None]:
        """The four tables' CSV texts by file name, the events table's in pieces (see
        _events_text); None for a table with a value only pandas' writer writes (a
        carriage return)."""
        return {
            EVENTS_CSV: self._events_text(),
            PING_CSV: records_csv(_joined(p.ping for p in self.parts), PING_COLUMNS, PING_KINDS),
            RUNS_CSV: records_csv(_joined(p.runs for p in self.parts), RUN_COLUMNS, RUN_KINDS),
            SUMMARY_CSV: self.summary.csv(),
        }

    def _events_text(self) -> Iterable[str | bytes] | None:
        """The header line, then each part's rows: never joined, as the rows of a large
        tree are hundreds of MB (experiments.files.write_atomic writes them in turn)."""
        whole = self.whole_gb
        texts = self.events_texts or [None] * len(self.parts)
        # A part whose rows were all whole GB, in a table that is not, is
        # written again with floats (`1.0`, as the table's float column writes it).
        rows = [
            text if text is not None and part.whole_gb == whole else events_csv_rows(part, whole)
            for part, text in zip(self.parts, texts, strict=True)
        ]
        header = quoted(list(EVENT_COLUMNS))
        if header is None or any(text is None for text in rows):
            return None
        pieces = ([text] if isinstance(text, str) else text.chunks() for text in rows)  # type: ignore[union-attr]
        return chain([",".join(header) + "\n"], chain.from_iterable(pieces))


def take_cells(parts: Sequence[TableRows], order: Sequence[int]) -> TableRows:
    """The rows of the cells `order` picks, in that order, as one part: `order` indexes
    the parts' cells one after the other (each part's `counts`)."""
    counts = [count for part in parts for count in part.counts]
    out = TableRows(counts=[counts[i] for i in order])
    pick_events, pick_ping, pick_runs = (
        _picker([count[table] for count in counts], order) for table in range(3)
    )
    for name in EVENT_COLUMNS:
        out.events[name] = pick_events(_joined(part.events[name] for part in parts))
    # Whole GB or not, as the rows kept say (a worker packed the sizes as floats).
    sizes: list[float] = out.events["size_gb"]  # type: ignore[assignment]
    out.whole_gb = all(float(gb).is_integer() for gb in sizes)
    if out.whole_gb:
        out.events["size_gb"] = [int(gb) for gb in sizes]
    out.ping = pick_ping(_joined(part.ping for part in parts))
    out.runs = pick_runs(_joined(part.runs for part in parts))
    # The summary's groups, numbered again in the order they now first appear.
    keys: list[tuple[tuple[object, ...], str, str, int]] = []
    for part in parts:
        cells = list(part.cell_keys)
        keys += [(cells[cell], event, label, size) for cell, event, label, size in part.groups]
    offsets = accumulate((len(part.groups) for part in parts[:-1]), initial=0)
    ids = [offset + i for part, offset in zip(parts, offsets, strict=True) for i in part.group_ids]
    for group in pick_events(ids):
        cell, event, label, size = keys[group]
        number = out.cell_keys.setdefault(cell, len(out.cell_keys))
        out.group_ids.append(out.groups.setdefault((number, event, label, size), len(out.groups)))
    return out


def _joined(pieces: Iterable[Iterable[T]]) -> list[T]:
    return list(chain.from_iterable(pieces))


def _picker(sizes: list[int], order: Sequence[int]) -> Callable[[list[T]], list[T]]:
    """Picks, from the rows of every cell (`sizes` rows each), those of the cells in `order`."""
    starts = list(accumulate(sizes, initial=0))

    def pick(rows: list[T]) -> list[T]:
        return [row for i in order for row in rows[starts[i] : starts[i + 1]]]

    return pick
