"""The `KARY {json}` line: the one reader of kary's machine-readable log lines.

templates/entrypoint.sh.j2 writes one line per timed step,

    KARY {"event": "distribute-all-nodes", "size": "64M", "size_bytes": 67108864,
          "seconds": 1.23, "rc": 0}

and meta lines (`{"meta": "cell", ...}`, `{"meta": "cold-cache", ...}`,
`{"meta": "done", "failed_steps": 0}`).

A step whose precondition failed carries a `void` field with the reason
(one of VOID_REASONS): the step ran, or was skipped, but what it measured is
not what its labels say (a warm cache timed as a cold one, a cache size the
cell did not have, a blob of the wrong size), so it is no timing even with
rc 0.  Logs written before the field parse as they always did.

A distribution of an archive is timed cold only where the log shows it: the
`cold-cache` line for its size and strategy comes before it and says that no
rank other than 0 still caches a blob (`cached_blobs`, each 0).  `ColdCache`
reads those lines in log order and voids a distribution without one
(VOID_NO_COLD_RECORD) or after one that shows blobs still cached
(VOID_STILL_CACHED), whatever its exit status said.  The direct baseline moves
no blob through a cache and needs none.  The runner's verdict, the Kubernetes
backend's report and `kary parse` all read them here, so they cannot disagree
on what a line says: `KARY` then spaces or tabs, then a JSON object; a step is
a timing only when its rc is 0 and its seconds a finite number >= 0.

`format_kary_line` writes a line exactly as the template prints it; tests build
their logs with it, and a seam test holds the template to it byte for byte.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

from experiments.formats.events import STRATEGIES, strategy_events, strategy_of

__all__ = [
    "KARY_JSON",
    "VOID_BACKING_STORE",
    "VOID_BLOB",
    "VOID_CACHE_SIZE",
    "VOID_COLD_CACHE",
    "VOID_NO_ARCHIVE",
    "VOID_NO_COLD_RECORD",
    "VOID_REASONS",
    "VOID_STILL_CACHED",
    "ColdCache",
    "content_store",
    "content_store_text",
    "format_kary_line",
    "has_kary_lines",
    "kary_records",
    "load_record",
    "meta_record",
    "step_problem",
    "step_timings",
    "step_void",
]

# Why a step is void: the precondition that failed.  The template prints these
# words (experiments/model/render.py passes them in) and the tables show them.
VOID_COLD_CACHE = "cold cache not established"  # `flux content dropcache` failed
VOID_CACHE_SIZE = "cache size not set"  # `flux module reload content purge-target-size=` failed
VOID_BACKING_STORE = "content backing store not reloaded"  # rank 0 ran without one
VOID_BLOB = "blob not made"  # generation failed, or the blob is short
VOID_NO_ARCHIVE = "archive not created"  # not run: an extract would wait for it forever
# Read from the log, not printed by the template: the cold cache a distribution needs
# was not shown (see the module doc).
VOID_NO_COLD_RECORD = "no cold-cache record before the distribution"
VOID_STILL_CACHED = "blobs still cached after the cache drop"
VOID_REASONS: tuple[str, ...] = (
    VOID_COLD_CACHE,
    VOID_CACHE_SIZE,
    VOID_BACKING_STORE,
    VOID_BLOB,
    VOID_NO_ARCHIVE,
)

# `KARY`, blanks, then the JSON text (group "json") up to trailing blanks.
KARY_JSON = r"KARY[ \t]+(?P<json>\S.*?)"
_LINE = re.compile(rf"^{KARY_JSON}[ \t]*$", re.M)
_STEP_LINE = re.compile(r'^KARY[ \t]+\{[ \t]*"event"', re.M)


def has_kary_lines(log: str) -> bool:
    """True when a log has step lines (a kary-format log, not flux-distribute's EVENT/time one)."""
    return "KARY" in log and _STEP_LINE.search(log) is not None


def load_record(text: str) -> dict[str, Any] | None:
    """The JSON object of one line's JSON text, or None when it is not one."""
    try:
        record = json.loads(text)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def kary_records(log: str) -> Iterator[dict[str, Any] | None]:
    """Every KARY line's object in log order; None for a line whose JSON is damaged."""
    if "KARY" not in log:
        return
    for match in _LINE.finditer(log):
        yield load_record(match.group("json"))


def meta_record(log: str, name: str) -> dict[str, Any] | None:
    """The last `KARY {"meta": name, ...}` line's object (`cell`, `done`), or None."""
    found = None
    for record in kary_records(log):
        if record is not None and record.get("meta") == name:
            found = record
    return found


def content_store(meta: Mapping[str, Any] | None) -> dict[str, str] | None:
    """The cell meta line's content store (backing module, sqlite journal_mode and
    synchronous), only the fields it printed; None when it printed none (older logs)."""
    store = (meta or {}).get("content_store")
    if not isinstance(store, dict):
        return None
    kept = {
        key: str(store[key])
        for key in ("backing", "journal_mode", "synchronous")
        if isinstance(store.get(key), str) and store[key]
    }
    return kept or None


def content_store_text(store: object) -> str:
    """`WAL/NORMAL` (sqlite's journal mode and synchronous), the backing module when
    it is not sqlite, "" when unknown: the parsed tables' `content_store`."""
    if not isinstance(store, dict):
        return ""
    if store.get("journal_mode") or store.get("synchronous"):
        return f"{store.get('journal_mode') or '?'}/{store.get('synchronous') or '?'}"
    return str(store.get("backing") or "")


def step_problem(record: dict[str, Any]) -> str | None:
    """Why a step record is not a timing (None when it is one: rc 0 and a valid time)."""
    rc, seconds = record.get("rc"), record.get("seconds")
    if not isinstance(rc, int) or isinstance(rc, bool):
        return "no exit status in the KARY line"
    if rc != 0:
        error = record.get("error")
        return f"exit status {rc}" + (f": {error}" if isinstance(error, str) and error else "")
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
        return "no time in the KARY line"
    if not math.isfinite(seconds) or seconds < 0:
        return f"impossible time {seconds!r}"
    return None


def step_void(record: dict[str, Any]) -> str | None:
    """Why a step record is void (None when it is not).

    A step that ran and failed (a non-zero exit status) is failed, not void:
    its own failure is the more basic fact.  Any other step with a non-empty
    `void` field is void, whatever its time; a step the template skipped has
    neither a time nor an exit status.
    """
    void = record.get("void")
    if not isinstance(void, str) or not void:
        return None
    rc = record.get("rc")
    if isinstance(rc, int) and not isinstance(rc, bool) and rc != 0:
        return None
    return void


def format_kary_line(record: Mapping[str, Any]) -> str:
    """`KARY {"event": ..., "seconds": 1.230000, "rc": 0}`, as the entrypoint prints it.

    Keys in the record's order, `json.dumps` spacing; `seconds` has the six
    decimals the template's awk (`%.6f`) gives it.  No trailing newline.
    """
    fields = (f"{json.dumps(key)}: {_json_value(key, value)}" for key, value in record.items())
    return "KARY {" + ", ".join(fields) + "}"


def _json_value(key: str, value: Any) -> str:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if key == "seconds" and number and math.isfinite(value):
        return f"{value:.6f}"
    return json.dumps(value)


# The strategies whose blobs pass through the content caches (all but `direct`).
_CACHED_STRATEGIES = frozenset(STRATEGIES) - {"direct"}


class ColdCache:
    """A log's `cold-cache` lines, read in log order with `read`; `void(step)` says why a
    distribution step is void for want of a shown cold cache (None when it has one,
    is not such a distribution, or is no timing anyway: failed, or void already)."""

    def __init__(self) -> None:
        self._last: dict[tuple[str, str], Mapping[str, Any]] = {}

    def read(self, record: Mapping[str, Any]) -> None:
        """Note a record; only cold-cache lines matter."""
        if record.get("meta") == "cold-cache":
            self._last[(str(record.get("size")), str(record.get("strategy")))] = record

    def void(self, step: Mapping[str, Any]) -> str | None:
        event = step.get("event")
        strategy = strategy_of(event) if isinstance(event, str) else None
        if strategy not in _CACHED_STRATEGIES:
            return None
        if strategy_events(strategy).distribute_wave(str(event)) is None:
            return None  # not a distribution (create, verify, delete, clean)
        if step_void(dict(step)) is not None or step_problem(dict(step)) is not None:
            return None
        cold = self._last.get((str(step.get("size")), strategy))
        if cold is None:
            return VOID_NO_COLD_RECORD
        cached = cold.get("cached_blobs")
        counts = cached.values() if isinstance(cached, dict) else [None]
        # Each rank's count must be shown, and 0: a rank that kept a blob serves it warm.
        if any(not isinstance(n, int) or isinstance(n, bool) or n != 0 for n in counts):
            return VOID_STILL_CACHED
        return None


def step_timings(log: str) -> list[tuple[dict[str, Any], str | None]]:
    """Every step record of a log in order, with why it is no timing (void, by its own
    field or for want of a shown cold cache, or failed); None for a timing."""
    cold = ColdCache()
    found: list[tuple[dict[str, Any], str | None]] = []
    for record in kary_records(log):
        if record is None:
            continue
        cold.read(record)
        if "event" in record:
            found.append((record, step_void(record) or cold.void(record) or step_problem(record)))
    return found
