"""The parsed directory's files: their names, and writing them (no pandas here).

A parsed directory holds topologies-events.csv, ping-events.csv, runs.csv,
summary.csv, topologies.json, parse.json (format stamp, counts, problems) and
plots/.  The CSV texts come from the parse's rows (`analysis.parsed_rows`) or
from DataFrames (`analysis.output.write_parsed`); both are written here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from experiments.files import write_atomic

__all__ = [
    "EVENTS_CSV",
    "META_JSON",
    "OVERLAYS_JSON",
    "PARSED_FORMAT",
    "PING_CSV",
    "RUNS_CSV",
    "SUMMARY_CSV",
    "write_parsed_files",
]

PARSED_FORMAT = 1
EVENTS_CSV = "topologies-events.csv"
PING_CSV = "ping-events.csv"
RUNS_CSV = "runs.csv"
SUMMARY_CSV = "summary.csv"
OVERLAYS_JSON = "topologies.json"
META_JSON = "parse.json"


def write_parsed_files(
    out_dir: Path,
    tables: dict[str, str],
    overlays: dict[str, list[str]],
    meta: dict[str, Any],
) -> list[Path]:
    """Write the four tables' CSV texts (by file name), topologies.json and parse.json into
    out_dir, atomically file by file; the paths written, in that order."""
    files = {
        **{name: tables[name] for name in (EVENTS_CSV, PING_CSV, RUNS_CSV, SUMMARY_CSV)},
        OVERLAYS_JSON: json.dumps(overlays, indent=4, ensure_ascii=False) + "\n",
        META_JSON: json.dumps(meta, indent=2) + "\n",
    }
    written = []
    for name, text in files.items():
        write_atomic(out_dir / name, text)
        written.append(out_dir / name)
    return written
