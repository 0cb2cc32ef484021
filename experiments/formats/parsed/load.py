"""The one loader of a parsed directory: its tables back as DataFrames, kary's own or the
seed's older CSVs.

It refuses a newer format with a clear message and reads flux-distribute's own parsed
CSVs, which have no status column (every row counts as ok) and no summary.
A table written before a column was added gets it here, from what the older
parse does say (see `_blobs_back_filled`), so an older parse still loads and
still compares.
Analysis (compare, report) and the time model's history both read through here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from experiments.errors import UserError
from experiments.formats.blobs import DEFAULT_BLOB, SEED_BLOB
from experiments.formats.cell_layout import LOG_NAME, blob_of_path, topo_from_dirname
from experiments.formats.events import strategy_of
from experiments.formats.parsed import (
    ARCHIVE_COLUMNS,
    BLOB_COLUMN,
    EVENT_COLUMNS,
    EVENTS_CSV,
    KNOB_COLUMNS,
    META_JSON,
    OVERLAYS_JSON,
    PARSED_FORMAT,
    PING_COLUMNS,
    PING_CSV,
    PLACE_COLUMNS,
    RAN_COLUMNS,
    RUN_COLUMNS,
    RUNS_CSV,
    SUMMARY_CSV,
    TEXT_COLUMNS,
)

__all__ = ["Parsed", "Summarize", "cell_values", "load_parsed"]

# An events table -> its summary table (analysis.tables.frames.summary_table).
Summarize = Callable[[pd.DataFrame], pd.DataFrame]


@dataclass
class Parsed:
    """A parsed directory in memory: the tables as DataFrames, overlays, and parse.json."""

    events: pd.DataFrame
    ping: pd.DataFrame
    runs: pd.DataFrame
    summary: pd.DataFrame
    overlays: dict[str, list[str]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


def load_parsed(parsed_dir: Path, summarize: Summarize | None = None) -> Parsed:
    """Read a parsed directory back into DataFrames; UserError if it is not one.

    flux-distribute's parsed CSVs have no summary.csv: with `summarize` (analysis's
    summary of an events table) it is computed, else it is an empty table.
    """
    parsed_dir = Path(parsed_dir)
    events_path = parsed_dir / EVENTS_CSV
    if not events_path.is_file():
        raise UserError(f"{parsed_dir} is not a parsed directory: no {EVENTS_CSV} (run kary parse)")
    meta_path = parsed_dir / META_JSON
    if not meta_path.is_file():
        return _load_seed(parsed_dir, summarize or _no_summary)
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError) as err:
        raise UserError(f"{meta_path} is unreadable: {err}") from None
    fmt = meta.get("format") if isinstance(meta, dict) else None
    if not isinstance(fmt, int) or fmt > PARSED_FORMAT:
        raise UserError(
            f"{parsed_dir} has parsed format {fmt!r}; this kary reads format "
            f"{PARSED_FORMAT}: upgrade kary or parse the raw tree again"
        )
    runs = _read_csv(parsed_dir / RUNS_CSV, RUN_COLUMNS)
    events = _places_from_runs(_read_csv(events_path, EVENT_COLUMNS), runs)
    events = _archive_counts(_blobs_back_filled(events, runs))
    summary = _added_columns_unset(_read_csv(parsed_dir / SUMMARY_CSV, None))
    return Parsed(
        events=_added_columns_unset(events),
        ping=_read_csv(parsed_dir / PING_CSV, PING_COLUMNS),
        runs=_added_columns_unset(_runs_blob_back_filled(runs)),
        summary=_summary_blob_back_filled(summary, events, summarize),
        overlays=_read_overlays(parsed_dir / OVERLAYS_JSON),
        meta=meta,
    )


def _read_csv(path: Path, columns: list[str] | None) -> pd.DataFrame:
    if not path.is_file():
        return pd.DataFrame(columns=columns or [])
    try:
        header = pd.read_csv(path, nrows=0).columns
        text = {column: str for column in header if column in TEXT_COLUMNS}
        frame = pd.read_csv(path, keep_default_na=False, na_values=[""], dtype=text)
    except (OSError, ValueError) as err:
        raise UserError(f"{path} is unreadable: {err}") from None
    for column in text:
        frame[column] = frame[column].fillna("")
    return frame


def _added_columns_unset(frame: pd.DataFrame) -> pd.DataFrame:
    """A table parsed before kary knew Flux knobs, or carried where each cell ran (and on
    what Flux, with which templates) into the events and summary: those columns, empty
    (Flux's default; not recorded)."""
    for column in (*KNOB_COLUMNS, *PLACE_COLUMNS, *RAN_COLUMNS):
        if column not in frame.columns:
            frame[column] = ""
    return frame


def _places_from_runs(events: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """An events table parsed before it carried place, links and cpu_bound takes them from
    runs.csv, cell by cell (a run's `source` is its cell's folder, an event's its log), so
    an older parse of a box study is not read as one that ran nowhere."""
    missing = [c for c in PLACE_COLUMNS if c not in events.columns and c in runs.columns]
    if not missing or events.empty or not {"source"} <= set(runs.columns) & set(events.columns):
        return events
    for column in missing:
        events[column] = cell_values(events, runs, column)
    return events


def cell_values(events: pd.DataFrame, runs: pd.DataFrame, column: str) -> np.ndarray:
    """Per events row, its cell's value of a runs.csv column ("" where runs.csv lacks
    the column or the cell): a run's `source` is its cell's folder, an event's its log.
    An array of str objects, one per events row, in its order."""
    if column not in runs.columns or "source" not in runs.columns or "source" not in events:
        return np.full(len(events), "", dtype=object)
    logs = [f"{cell}/{LOG_NAME}" if cell else LOG_NAME for cell in runs["source"].astype(str)]
    found = dict(zip(logs, runs[column].fillna("").astype(str), strict=True))
    # Through a numpy array: stepping through a pandas string column itself costs a
    # Python call per element (221,272 rows, seven columns, two trees in a compare).
    logs_of_rows = events["source"].astype(str).to_numpy(dtype=object)
    return np.array([found.get(log, "") for log in logs_of_rows], dtype=object)


def _seed_cells(runs: pd.DataFrame) -> set[str]:
    """The cells (runs.csv `source`) whose log is flux-distribute's format and that have no
    run.json: flux-distribute's own cells, whose blobs were zeros (formats/blobs.py)."""
    if not {"source", "log_format", "state"} <= set(runs.columns):
        return set()
    seed = (runs["log_format"].astype(str) == "legacy") & (runs["state"].astype(str) == "")
    return set(runs.loc[seed, "source"].astype(str))


def _blob_of_cell(cell: str, seed_cells: set[str]) -> str:
    """A cell's blob kind as an older parse tells it: its blob directory, else `zeros`
    for flux-distribute's cells, else `random` (all kary made before it said)."""
    named = blob_of_path(cell.split("/")) if cell else None
    if named is not None:
        return named
    return SEED_BLOB if cell in seed_cells else DEFAULT_BLOB


def _blobs_back_filled(events: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """An events table parsed before it carried `blob` takes it, row by row, from its
    log's path and its cell's runs.csv row (see `_blob_of_cell`)."""
    if BLOB_COLUMN in events.columns:
        return events
    seed_cells = _seed_cells(runs)
    found: dict[str, str] = {}
    blobs = []
    for log in events["source"].astype(str) if "source" in events.columns else []:
        if log not in found:
            cell = log.rpartition("/")[0] if log != LOG_NAME else ""
            found[log] = _blob_of_cell(cell, seed_cells)
        blobs.append(found[log])
    events[BLOB_COLUMN] = blobs if blobs or events.empty else DEFAULT_BLOB
    return events


def _runs_blob_back_filled(runs: pd.DataFrame) -> pd.DataFrame:
    if BLOB_COLUMN in runs.columns or "source" not in runs.columns:
        return runs
    seed_cells = _seed_cells(runs)
    runs[BLOB_COLUMN] = [_blob_of_cell(cell, seed_cells) for cell in runs["source"].astype(str)]
    return runs


def _archive_counts(events: pd.DataFrame) -> pd.DataFrame:
    """The archive columns as nullable integers, empty where a parse predates them."""
    for column in ARCHIVE_COLUMNS:
        values = events[column] if column in events.columns else pd.NA
        events[column] = pd.Series(values, index=events.index).astype("Int64")
    return events


def _summary_blob_back_filled(
    summary: pd.DataFrame, events: pd.DataFrame, summarize: Summarize | None
) -> pd.DataFrame:
    """A summary written before `blob` was a key: the events' one kind, or where they
    hold several (one group may pool them), the summary made again from the events."""
    if BLOB_COLUMN in summary.columns:
        return summary
    kinds = set(events[BLOB_COLUMN].astype(str))
    if len(kinds) > 1 and summarize is not None:
        return summarize(events)
    # Where SUMMARY_KEYS has it: after cpu_bound (an older summary has every key but it).
    at = list(summary.columns).index("cpu_bound") + 1 if "cpu_bound" in summary.columns else 0
    summary.insert(at, BLOB_COLUMN, kinds.pop() if len(kinds) == 1 else "")
    return summary


def _read_overlays(path: Path) -> dict[str, list[str]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _load_seed(parsed_dir: Path, summarize: Summarize) -> Parsed:
    """flux-distribute's parsed CSV: its seven columns and an index; no failures recorded."""
    frame = _read_csv(parsed_dir / EVENTS_CSV, None)
    frame = frame.drop(columns=[c for c in frame.columns if c.startswith("Unnamed")])
    if "service" in frame.columns and "event" not in frame.columns:
        return _load_seed_ping(parsed_dir, frame, summarize)
    missing = {"topology", "nodes", "event", "size_gb", "time_seconds"} - set(frame.columns)
    if missing:
        raise UserError(
            f"{parsed_dir / EVENTS_CSV} lacks columns {', '.join(sorted(missing))}: "
            "not a parsed events table"
        )
    frame["topo"] = [topo_from_dirname(t) or t for t in frame["topology"]]
    frame["size_bytes"] = (frame["size_gb"].astype(float) * 2**30).round().astype("int64")
    frame["size_label"] = frame["size_gb"].astype(str)
    frame["status"] = "ok"
    for column in (
        "reason", "backend", "cluster", "source", "run_state", *KNOB_COLUMNS, *PLACE_COLUMNS
    ):  # fmt: skip
        frame[column] = ""
    frame["strategy"] = [strategy_of(e) or "" for e in frame["event"]]
    # flux-distribute's image made every size with head -c N /dev/zero (formats/blobs.py).
    frame[BLOB_COLUMN] = SEED_BLOB
    for column in EVENT_COLUMNS:
        if column not in frame.columns:
            frame[column] = pd.NA
    events = _archive_counts(frame[EVENT_COLUMNS].copy())
    return Parsed(
        events=events,
        ping=pd.DataFrame(columns=PING_COLUMNS),
        runs=pd.DataFrame(columns=RUN_COLUMNS),
        summary=summarize(events),
        overlays=_read_overlays(parsed_dir / OVERLAYS_JSON),
        meta={"format": 0, "note": "flux-distribute's parsed CSV: failures were not recorded"},
    )


def _load_seed_ping(parsed_dir: Path, frame: pd.DataFrame, summarize: Summarize) -> Parsed:
    """flux-distribute's ping table: same columns as kary's first twelve; no failures recorded."""
    frame["topo"] = [topo_from_dirname(t) or t for t in frame["topology"]]
    frame["status"] = "ok"
    for column in PING_COLUMNS:
        if column not in frame.columns:
            frame[column] = ""
    events = pd.DataFrame(columns=EVENT_COLUMNS)
    return Parsed(
        events=events,
        ping=frame[PING_COLUMNS],
        runs=pd.DataFrame(columns=RUN_COLUMNS),
        summary=summarize(events),
        overlays=_read_overlays(parsed_dir / OVERLAYS_JSON),
        meta={"format": 0, "note": "flux-distribute's parsed ping CSV: failures were not recorded"},
    )


def _no_summary(events: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame()
