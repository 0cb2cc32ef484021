"""The one loader of a parsed directory: its tables back as DataFrames, kary's own or the
seed's older CSVs.

It refuses a newer format with a clear message and reads the seed's own parsed
CSVs, which have no status column (every row counts as ok) and no summary.
Analysis (compare, report) and the time model's history both read through here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from experiments.errors import UserError
from experiments.formats.cell_layout import LOG_NAME, topo_from_dirname
from experiments.formats.events import strategy_of
from experiments.formats.parsed import (
    EVENT_COLUMNS,
    EVENTS_CSV,
    KNOB_COLUMNS,
    META_JSON,
    OVERLAYS_JSON,
    PARSED_FORMAT,
    PING_COLUMNS,
    PING_CSV,
    PLACE_COLUMNS,
    RUN_COLUMNS,
    RUNS_CSV,
    SUMMARY_CSV,
    TEXT_COLUMNS,
)

__all__ = ["Parsed", "Summarize", "load_parsed"]

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

    The seed's parsed CSVs have no summary.csv: with `summarize` (analysis's
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
    return Parsed(
        events=_added_columns_unset(events),
        ping=_read_csv(parsed_dir / PING_CSV, PING_COLUMNS),
        runs=_added_columns_unset(runs),
        summary=_added_columns_unset(_read_csv(parsed_dir / SUMMARY_CSV, None)),
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
    """A table parsed before kary knew Flux knobs, or carried where each cell ran into
    the events and summary: those columns, empty (Flux's default; not recorded)."""
    for column in (*KNOB_COLUMNS, *PLACE_COLUMNS):
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
    logs = [f"{cell}/{LOG_NAME}" if cell else LOG_NAME for cell in runs["source"].astype(str)]
    for column in missing:
        found = dict(zip(logs, runs[column].fillna("").astype(str), strict=True))
        events[column] = [found.get(str(log), "") for log in events["source"]]
    return events


def _read_overlays(path: Path) -> dict[str, list[str]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _load_seed(parsed_dir: Path, summarize: Summarize) -> Parsed:
    """The seed's parsed CSV: its seven columns and an index; no failures recorded."""
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
    for column in EVENT_COLUMNS:
        if column not in frame.columns:
            frame[column] = pd.NA
    events = frame[EVENT_COLUMNS]
    return Parsed(
        events=events,
        ping=pd.DataFrame(columns=PING_COLUMNS),
        runs=pd.DataFrame(columns=RUN_COLUMNS),
        summary=summarize(events),
        overlays=_read_overlays(parsed_dir / OVERLAYS_JSON),
        meta={"format": 0, "note": "the seed's parsed CSV: failures were not recorded"},
    )


def _load_seed_ping(parsed_dir: Path, frame: pd.DataFrame, summarize: Summarize) -> Parsed:
    """The seed's ping table: same columns as kary's first twelve; no failures recorded."""
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
        meta={"format": 0, "note": "the seed's parsed ping CSV: failures were not recorded"},
    )


def _no_summary(events: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame()
