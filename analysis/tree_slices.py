"""Parse a tree's cells in slices, in forked workers when the tree is large.

Each slice of cells becomes a `ParsedSlice`: the cells' results without their
steps, the rows they give the tables (analysis.tables.rows) and the events rows
already written as CSV text.  A worker sends those back, not 220,000 named
tuples: unpickling steps one by one took longer than parsing them.

Nothing here imports pandas or numpy: the workers fork from a parent that has
not imported them yet.  `start_slices` forks, the parent imports numpy while
they parse, then `PendingSlices.results()` waits.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial

from analysis.read.cell import CellResult, parse_cell
from analysis.read.walk import CellDir
from analysis.read.workers import Forked, can_fork
from analysis.tables.rows import TableRows, events_csv_rows, table_rows

__all__ = ["CELLS_PER_JOB", "CompressedText", "ParsedSlice", "PendingSlices", "start_slices"]

# Below this many cells per worker, forking costs more than it saves.
CELLS_PER_JOB = 500
# Slices per worker: a worker that finishes early takes the next slice, so
# one slowed by the parent's imports does not hold the others up.
_SLICES_PER_JOB = 2
# At most this many cells a slice: a worker holds one slice's steps, rows and
# text at once, so a 100,000-cell tree in four slices held 0.4 GB a worker.
_MAX_CELLS_PER_SLICE = 5000
# A slice's events text longer than this is sent back compressed (zlib level 1,
# a seventh of its size): the parent holds every slice's text until it writes
# the table, which at 100,000 cells was 0.43 GB.  Below it (every tree of up to
# ~15,000 cells) compressing would only cost time.
_COMPRESS_ABOVE = 16 * 2**20


@dataclass
class ParsedSlice:
    """Some cells parsed: results (steps and pings dropped), table rows, events CSV rows.

    `events_csv` is written with size_gb as integers if `rows.whole_gb`; None
    where a value needs pandas' own writer.
    """

    results: list[CellResult]
    rows: TableRows
    events_csv: str | CompressedText | None


@dataclass(frozen=True)
class CompressedText:
    """A text as zlib's level-1 stream of its UTF-8; `chunks()` gives it back bytes a
    few MiB at a time, so it is never whole in memory again."""

    data: bytes

    @classmethod
    def of(cls, text: str) -> CompressedText:
        return cls(zlib.compress(text.encode(), 1))

    def chunks(self) -> Iterator[bytes]:
        stream = zlib.decompressobj()
        view = memoryview(self.data)
        for start in range(0, len(view), _CHUNK):
            yield stream.decompress(view[start : start + _CHUNK])
        yield stream.flush()


_CHUNK = 1 << 20


def parse_slice(cells: Sequence[CellDir]) -> ParsedSlice:
    """Parse these cells and make their table rows; the steps are dropped once tabled."""
    results = [parse_cell(cell) for cell in cells]
    rows = table_rows(results)
    for result in results:
        result.steps, result.pings = [], []
    text = events_csv_rows(rows, rows.whole_gb)
    rows.pack()
    if text is not None and len(text) > _COMPRESS_ABOVE:
        return ParsedSlice(results, rows, CompressedText.of(text))
    return ParsedSlice(results, rows, text)


class PendingSlices:
    """Slices being parsed by forked workers, or, for a small tree or where forking is
    unsafe, parsed here on `results()`."""

    def __init__(self, cells: Sequence[CellDir], jobs: int) -> None:
        workers = min(jobs, len(cells) // CELLS_PER_JOB)
        self._forked: Forked[ParsedSlice] | None = None
        self._serial: Callable[[], ParsedSlice] | None = None
        if workers < 2 or not can_fork():
            self._serial = partial(parse_slice, cells)
            return
        count = max(workers * _SLICES_PER_JOB, -(-len(cells) // _MAX_CELLS_PER_SLICE))
        size = -(-len(cells) // count)
        slices = [cells[i : i + size] for i in range(0, len(cells), size)]
        tasks = [partial(parse_slice, part) for part in slices]
        # No garbage collection in the workers: parsing makes objects, not cycles,
        # and the collector walking them was a tenth of the parse.
        self._forked = Forked(tasks, workers, collect=False)

    def results(self) -> list[ParsedSlice]:
        """Every slice, in the order of the cells (a worker's error is raised)."""
        if self._forked is not None:
            return self._forked.results()
        assert self._serial is not None
        return [self._serial()]


def start_slices(cells: Sequence[CellDir], jobs: int) -> PendingSlices:
    """Start parsing `cells` with up to `jobs` forked workers; `results()` waits for them."""
    return PendingSlices(cells, jobs)
