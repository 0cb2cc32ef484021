"""The `KARY {json}` line: the one reader of kary's machine-readable log lines.

templates/entrypoint.sh.j2 writes one line per timed step,

    KARY {"event": "distribute-all-nodes", "size": "64M", "size_bytes": 67108864,
          "seconds": 1.23, "rc": 0}

and meta lines (`{"meta": "cell", ...}`, `{"meta": "cold-cache", ...}`,
`{"meta": "done", "failed_steps": 0}`).  The runner's verdict, the Kubernetes
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

__all__ = [
    "KARY_JSON",
    "format_kary_line",
    "has_kary_lines",
    "kary_records",
    "load_record",
    "step_problem",
]

# `KARY`, blanks, then the JSON text (group "json") up to trailing blanks.
KARY_JSON = r"KARY[ \t]+(?P<json>\S.*?)"
_LINE = re.compile(rf"^{KARY_JSON}[ \t]*$", re.M)
_STEP_LINE = re.compile(r'^KARY[ \t]+\{[ \t]*"event"', re.M)


def has_kary_lines(log: str) -> bool:
    """True when a log has step lines (a kary-format log, not the seed's EVENT/time one)."""
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
