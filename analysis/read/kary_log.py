"""Parse kary's own log lines: one `KARY {json}` line per step, plus meta lines.

kary's template keeps the legacy `EVENT` lines too. A step announced by an
EVENT line that never got its KARY line was cut short (timeout, a killed pod):
it is a failed step, not a missing one. A distribution whose verify step
failed is failed too (analysis.read.verify). A step whose KARY line says `void`
(a precondition failed: experiments.formats.kary_line) has status
`void: <reason>` and no time; so has a distribution without a cold-cache line
before it that shows every rank's cache empty (kary_line.ColdCache).

After each archive is made, a `{"meta": "archive", "size": "16M", "strategy":
"all", "blob": "zeros", "chunks": 16, "store_objects_added": 4}` line says what
it held: its chunks and how many objects rank 0's content store gained (its new
distinct chunks and its own few objects, formats/blobs.py); `archives` keeps
them by (size label, strategy).

The ping experiment's lines (`{"event": "flux-ping-broker", "rank": 3,
"ms": 0.41, "hops": 6, ...}`) become pings, not steps: `ms` is the round trip
flux ping reported, `hops` the length of its route.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from analysis.read.log_text import LogText
from analysis.read.records import FAILED, OK, PingStep, ProblemKind, Step, few, is_void, void_status
from analysis.read.seed_log import first_error, ping_error
from analysis.read.verify import fail_unverified, verify_detail
from experiments.formats.cell_layout import format_size, size_from_label
from experiments.formats.events import (
    VERIFY_PREFIX,
    ping_service,
    ping_step_name,
    split_event_label,
    strategy_of,
)
from experiments.formats.kary_line import (
    KARY_JSON,
    ColdCache,
    load_record,
    step_problem,
    step_void,
)

__all__ = ["ArchiveCounts", "KaryLog", "parse_kary"]

_LINE = re.compile(rf"^(?:{KARY_JSON}|EVENT[ \t]+(?P<event>\S+))[ \t]*$", re.M)
# The EVENT line of one ping: `flux-ping-broker-size-16M-rank-3`.
_PING_EVENT = re.compile(r"^flux-ping-(?P<service>\w+)-size-(?P<size>[^-\s]+)-rank-(?P<rank>\d+)$")


class ArchiveCounts(NamedTuple):
    """What one archive held, as its log's archive line says (None where it does not)."""

    chunks: int | None
    store_objects_added: int | None


@dataclass
class KaryLog:
    """Steps, meta lines and problems of one kary-format log."""

    steps: list[Step] = field(default_factory=list)
    pings: list[PingStep] = field(default_factory=list)
    cell: dict[str, Any] = field(default_factory=dict)
    # Each archive line's counts by (size label, strategy); the first line of each kept.
    archives: dict[tuple[str, str], ArchiveCounts] = field(default_factory=dict)
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
    cold = ColdCache()
    # The EVENT line that opened the step now running, and where its output starts.
    pending: tuple[str, int] | None = None
    for match in _LINE.finditer(text):
        announced = match.group("event")
        if announced is not None:
            if pending is not None:
                _add_unfinished(out, seen, pending[0], "no KARY result line for this step")
            pending = (announced, match.end())
            continue
        record = load_record(match.group("json"))
        if record is None:
            bad_lines += 1
            continue
        if "meta" in record:
            cold.read(record)
            if record["meta"] == "cell":
                out.cell = record
            elif record["meta"] == "done":
                out.done = record
            elif record["meta"] == "archive":
                _add_archive(out, record)
            continue
        service = ping_service(str(record.get("event")))
        if service is not None:
            name = _ping_name(record, service)
            block = ""
            if pending is not None and pending[0] == name:
                block, pending = text[pending[1] : match.start()], None
            ping = _ping(record, service, block)
            if ping is None:
                bad_lines += 1
            elif (name, "") in seen:
                duplicates.append(name)
            else:
                seen.add((name, ""))
                out.pings.append(ping)
            continue
        step = _step(record, cold.void(record))
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
        _add_unfinished(out, seen, pending[0], "log ends inside this step (truncated)")
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
        failed += sum(1 for p in out.pings if p.status == FAILED)
        claimed = out.done.get("failed_steps")
        if isinstance(claimed, int) and claimed != failed:
            out.notes.append(
                ("warning", f"done line counts {claimed} failed step(s), the log shows {failed}")
            )
        preconditions = out.done.get("failed_preconditions")
        if isinstance(preconditions, int) and preconditions > 0:
            void = sum(1 for s in out.steps if is_void(s.status))
            out.notes.append(
                (
                    "warning",
                    f"{preconditions} precondition(s) failed: {void} step(s) void, not timed",
                )
            )
    # After the count above: the template counts the failed verify, not the
    # distribution it condemns.
    out.steps = fail_unverified(out.steps, verify_details)
    return out


def _add_archive(out: KaryLog, record: dict[str, Any]) -> None:
    size, strategy = record.get("size"), record.get("strategy")
    if not isinstance(size, str) or not isinstance(strategy, str):
        return
    counts = ArchiveCounts(_count(record.get("chunks")), _count(record.get("store_objects_added")))
    out.archives.setdefault((size, strategy), counts)


def _count(value: Any) -> int | None:
    """A count the line gives, or None (null: the store did not say; or not a count)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _step(record: dict[str, Any], cold_void: str | None = None) -> Step | None:
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
    void = step_void(record) or cold_void
    if void is not None:  # the measured seconds stay in the raw log only
        return Step(event, label, size, None, void_status(void), void)
    problem = step_problem(record)
    if problem is not None:
        return Step(event, label, size, None, FAILED, problem)
    return Step(event, label, size, float(record["seconds"]), OK, "")


def _ping_name(record: dict[str, Any], service: str) -> str:
    """The EVENT name that announced a ping's KARY line."""
    return ping_step_name(service, str(record.get("size")), _int(record.get("rank"), -1))


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _ping(record: dict[str, Any], service: str, block: str) -> PingStep | None:
    """A ping from its KARY line (None when the line lacks its rank or size)."""
    rank, pad = _int(record.get("rank"), -1), _int(record.get("size_bytes"), -1)
    if rank < 0 or pad < 0:
        return None
    label = record.get("size")
    if not isinstance(label, str) or not label:
        label = format_size(pad) if pad else "0"
    ms = record.get("ms")
    reply = float(ms) if isinstance(ms, (int, float)) and not isinstance(ms, bool) else None
    problem = step_problem(record)
    if problem is not None or reply is None or not reply >= 0:
        problem = problem or "no ping reply"
        detail = ping_error(block) if block else ""
        if detail and detail != "no ping reply":
            problem = f"{problem}: {detail}"
        return PingStep(service, rank, label, pad, None, None, FAILED, problem)
    hops = _int(record.get("hops"), 0)
    return PingStep(service, rank, label, pad, reply, hops if hops > 0 else None, OK, "")


def _add_unfinished(out: KaryLog, seen: set[tuple[str, str]], name: str, reason: str) -> None:
    ping = _PING_EVENT.match(name)
    if ping is not None:
        service = ping_service(f"flux-ping-{ping['service']}")
        if service is not None and (name, "") not in seen:
            seen.add((name, ""))
            size = size_from_label(ping["size"]) or 0
            reason = reason.replace("step", "ping")
            out.pings.append(
                PingStep(service, int(ping["rank"]), ping["size"], size, None, None, FAILED, reason)
            )
        return
    split = split_event_label(name)
    if split is None or strategy_of(split[0]) is None or split in seen:
        return
    seen.add(split)
    out.steps.append(Step(split[0], split[1], size_from_label(split[1]) or 0, None, FAILED, reason))
