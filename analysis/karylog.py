"""Parse kary's own log lines: one `KARY {json}` line per step, plus meta lines.

kary's template keeps the legacy `EVENT` lines too. A step announced by an
EVENT line that never got its KARY line was cut short (timeout, a killed pod):
it is a failed step, not a missing one. A distribution whose verify step
failed is failed too (analysis.verify).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from analysis.legacy import first_error
from analysis.logtext import LogText
from analysis.model import FAILED, OK, ProblemKind, Step, few
from analysis.verify import fail_unverified, verify_detail
from experiments.formats.cell_layout import format_size, size_from_label
from experiments.formats.events import VERIFY_PREFIX, split_event_label, strategy_of
from experiments.formats.kary_line import KARY_JSON, load_record, step_problem

__all__ = ["KaryLog", "parse_kary"]

_LINE = re.compile(rf"^(?:{KARY_JSON}|EVENT[ \t]+(?P<event>\S+))[ \t]*$", re.M)


@dataclass
class KaryLog:
    """Steps, meta lines and problems of one kary-format log."""

    steps: list[Step] = field(default_factory=list)
    cell: dict[str, Any] = field(default_factory=dict)
    done: dict[str, Any] | None = None
    notes: list[tuple[ProblemKind, str]] = field(default_factory=list)


def parse_kary(log: LogText) -> KaryLog:
    """Steps from KARY lines, in log order; EVENTs without a result become failed steps."""
    out = KaryLog()
    text = log.text
    seen: set[tuple[str, str]] = set()
    duplicates: list[str] = []
    unknown: list[str] = []
    bad_lines = 0
    verify_details: dict[tuple[str, str], str] = {}
    # The EVENT line that opened the step now running, and where its output starts.
    pending: tuple[str, int] | None = None
    for match in _LINE.finditer(text):
        announced = match.group("event")
        if announced is not None:
            if pending is not None:
                _add_unfinished(out.steps, seen, pending[0], "no KARY result line for this step")
            pending = (announced, match.end())
            continue
        record = load_record(match.group("json"))
        if record is None:
            bad_lines += 1
            continue
        if "meta" in record:
            if record["meta"] == "cell":
                out.cell = record
            elif record["meta"] == "done":
                out.done = record
            continue
        step = _step(record)
        if step is None:
            bad_lines += 1
            continue
        block = ""
        if pending is not None and pending[0] == f"{step.event}-{step.size_label}":
            block = text[pending[1] : match.start()]
            pending = None
        key = (step.event, step.size_label)
        if key in seen:
            duplicates.append(f"{step.event}-{step.size_label}")
            continue
        seen.add(key)
        if strategy_of(step.event) is None:
            unknown.append(step.event)
            continue
        if step.status == FAILED and block:
            detail = first_error(block)
            if detail:
                step = step._replace(reason=f"{step.reason}: {detail}")
        if step.status == FAILED and step.event.startswith(VERIFY_PREFIX):
            verify_details[key] = verify_detail(block, step.reason)
        out.steps.append(step)
    if pending is not None:
        _add_unfinished(out.steps, seen, pending[0], "log ends inside this step (truncated)")
    if bad_lines:
        out.notes.append(("partial", f"{bad_lines} malformed KARY line(s) ignored"))
    if duplicates:
        out.notes.append(("partial", f"duplicate events ignored (first kept): {few(duplicates)}"))
    if unknown:
        out.notes.append(("partial", f"unknown events ignored: {few(sorted(set(unknown)))}"))
    if out.done is None:
        out.notes.append(("partial", "no KARY done line: the run was cut short (truncated log)"))
    else:
        failed = sum(1 for s in out.steps if s.status == FAILED)
        claimed = out.done.get("failed_steps")
        if isinstance(claimed, int) and claimed != failed:
            out.notes.append(
                ("warning", f"done line counts {claimed} failed step(s), the log shows {failed}")
            )
    # After the count above: the template counts the failed verify, not the
    # distribution it condemns.
    out.steps = fail_unverified(out.steps, verify_details)
    return out


def _step(record: dict[str, Any]) -> Step | None:
    event, label = record.get("event"), record.get("size")
    size = record.get("size_bytes")
    if not isinstance(event, str) or not event:
        return None
    if not isinstance(label, str) or not label:
        label = "" if not isinstance(size, int) else format_size(size)
    if not isinstance(size, int) or isinstance(size, bool):
        size = size_from_label(label)
        if size is None:
            return None
    problem = step_problem(record)
    if problem is not None:
        return Step(event, label, size, None, FAILED, problem)
    return Step(event, label, size, float(record["seconds"]), OK, "")


def _add_unfinished(steps: list[Step], seen: set[tuple[str, str]], name: str, reason: str) -> None:
    split = split_event_label(name)
    if split is None or strategy_of(split[0]) is None or split in seen:
        return
    seen.add(split)
    steps.append(Step(split[0], split[1], size_from_label(split[1]) or 0, None, FAILED, reason))
