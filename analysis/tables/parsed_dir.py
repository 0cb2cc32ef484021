"""A parse's tables as DataFrames, written as a parsed directory and loaded back.

The directory's format (file names, columns, version), its file writer and its
loader are experiments.formats.parsed's; here the DataFrames become CSV text
byte for byte as pandas writes it, and a seed's parsed directory gets the
summary it never had.
"""

from __future__ import annotations

from pathlib import Path

from analysis.read.workers import usable_cores
from analysis.tables.csv_text import csv_text
from analysis.tables.frames import summary_frame, summary_table, tables_of
from analysis.tables.parsed_rows import ParsedRows
from experiments.formats.parsed import (
    EVENTS_CSV,
    PING_CSV,
    RUNS_CSV,
    SUMMARY_CSV,
    write_parsed_files,
)
from experiments.formats.parsed.load import Parsed
from experiments.formats.parsed.load import load_parsed as read_parsed

__all__ = ["Parsed", "load_parsed", "parsed_of_rows", "write_parsed"]


def parsed_of_rows(rows: ParsedRows) -> Parsed:
    """A parse's rows (analysis.tables.parsed_rows) as DataFrames."""
    events, ping, runs = tables_of(rows.parts)
    return Parsed(events, ping, runs, summary_frame(rows.summary), rows.overlays, rows.meta)


def write_parsed(
    out_dir: Path, parsed: Parsed, jobs: int | None = None, events_csv: str | None = None
) -> list[Path]:
    """Write every table of `parsed` into out_dir (atomically, file by file).

    `events_csv`: the events table's text, when the parse's workers already
    wrote it (byte for byte what `csv_text(parsed.events)` gives).  Else the
    events table of a large tree is written by `jobs` processes (default: one
    per usable core).
    """
    if events_csv is None:
        events_csv = csv_text(parsed.events, usable_cores() if jobs is None else jobs)
    tables = {
        EVENTS_CSV: events_csv,
        PING_CSV: csv_text(parsed.ping),
        RUNS_CSV: csv_text(parsed.runs),
        SUMMARY_CSV: csv_text(parsed.summary),
    }
    return write_parsed_files(out_dir, tables, parsed.overlays, parsed.meta)


def load_parsed(parsed_dir: Path) -> Parsed:
    """A parsed directory as DataFrames (experiments.formats.parsed.load), a seed's
    directory with its summary computed."""
    return read_parsed(parsed_dir, summarize=summary_table)
