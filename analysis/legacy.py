"""Parse the seed's log format: `EVENT <name>-<size>` lines, each followed by bash `time`.

A step's block runs from its EVENT line to the next one (or the end of the
benchmark). The seed never looked at exit status, so a step that printed an
error still had a `real` line and was recorded as a short timing. Here a block
that shows an error, or has no `real` line, is a failed step with a reason and
no time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from analysis.events import size_from_label, split_event_label, strategy_of
from analysis.logtext import LogText
from analysis.model import FAILED, OK, PingStep, ProblemKind, Step, few

__all__ = ["LegacyLog", "first_error", "parse_legacy", "parse_real"]

_EVENT = re.compile(r"^EVENT[ \t]+(\S+)[ \t]*$", re.M)
# bash `time` (`real\t1m9.978s`), `time -p` (`real 69.97`) and `1h2m3.4s` forms.
_REAL = re.compile(
    r"^real[ \t]+(?:(?P<h>[0-9]+)h)?(?:(?P<m>[0-9]+)m)?(?P<s>[0-9]+(?:[.,][0-9]+)?)s?[ \t]*$",
    re.M,
)
# Broker log lines (`broker.err[0]: ...`) interleave with any step's output and
# say nothing about the step's own exit status.
_BROKER_LOG = r"[\w.-]+\.(?:emerg|alert|crit|err|warning|notice|info|debug)\[[0-9]+\]: "
# Output that means the step failed: flux exec's per-rank exit or signal report
# (`[1-5]: Exit 1`), flux-archive/flux-exec errors, crashes, missing files.
_ERROR = re.compile(
    rf"^(?!{_BROKER_LOG})(?:"
    r"(?:flux-exec: )?\[?[0-9][0-9,\-]*\]?: (?:Exit [1-9][0-9]*|Killed|Terminated|Aborted"
    r"|Segmentation fault|Bus error).*"
    r"|flux-(?:archive|exec): .*"
    r"|.*(?:Segmentation fault|No such file or directory|command not found|Permission denied"
    r"|Killed|Out of memory).*"
    r")$",
    re.M,
)
_PING_EVENT = re.compile(
    r"^flux-ping-(?P<service>[\w-]+?)-size-(?P<size>[0-9]+)-rank-(?P<rank>[0-9]+)$"
)
_PING_REPLY = re.compile(
    r"^\S+\.ping pad=(?P<pad>[0-9]+) seq=[0-9]+ time=(?P<ms>[0-9.]+) ms \((?P<route>[^)]*)\)",
    re.M,
)
_PING_ECHO = re.compile(r"^flux-ping [0-9]+!\S+[ \t]*$")


@dataclass
class LegacyLog:
    """What a legacy log holds: archive steps, pings, and what was wrong with it."""

    steps: list[Step] = field(default_factory=list)
    pings: list[PingStep] = field(default_factory=list)
    notes: list[tuple[ProblemKind, str]] = field(default_factory=list)


def parse_real(block: str) -> float | None:
    """Seconds from the first `real` line of a block, None when there is none."""
    match = _REAL.search(block)
    if match is None:
        return None
    hours, minutes, seconds = match.group("h"), match.group("m"), match.group("s")
    return int(hours or 0) * 3600 + int(minutes or 0) * 60 + float(seconds.replace(",", "."))


def first_error(block: str) -> str | None:
    """The first line of a block that shows the step failed, or None."""
    match = _ERROR.search(block)
    return match.group(0).strip()[:200] if match else None


def parse_legacy(log: LogText) -> LegacyLog:
    """Every EVENT block of a seed-format log, as archive steps or pings."""
    out = LegacyLog()
    text = log.text
    matches = list(_EVENT.finditer(text))
    seen: set[str] = set()
    duplicates: list[str] = []
    unknown: list[str] = []
    for i, match in enumerate(matches):
        name = match.group(1)
        last = i + 1 == len(matches)
        block = text[match.end() : len(text) if last else matches[i + 1].start()]
        if name in seen:
            duplicates.append(name)
            continue
        seen.add(name)
        ping = _PING_EVENT.match(name)
        if ping is not None:
            out.pings.append(_ping_step(ping, block, truncated=last and not log.ended))
            continue
        split = split_event_label(name)
        if split is None or strategy_of(split[0]) is None:
            unknown.append(name)
            continue
        out.steps.append(_archive_step(split[0], split[1], block, last and not log.ended))
    if duplicates:
        out.notes.append(("partial", f"duplicate events ignored (first kept): {few(duplicates)}"))
    if unknown:
        out.notes.append(("partial", f"unknown events ignored: {few(unknown)}"))
    if matches and not log.ended and (out.steps or out.pings):
        cut = (out.steps[-1].status if out.steps else out.pings[-1].status) == FAILED
        if cut:
            out.notes.append(("partial", "log ends inside a step (truncated)"))
    return out


def _archive_step(event: str, label: str, block: str, truncated: bool) -> Step:
    size = size_from_label(label) or 0
    seconds = parse_real(block)
    error = first_error(block)
    if error is not None:
        return Step(event, label, size, None, FAILED, error)
    if seconds is None:
        reason = "log ends inside this step (truncated)" if truncated else "no 'real' timing line"
        return Step(event, label, size, None, FAILED, reason)
    return Step(event, label, size, seconds, OK, "")


def _ping_step(match: re.Match[str], block: str, truncated: bool) -> PingStep:
    service, size, rank = match.group("service"), match.group("size"), int(match.group("rank"))
    reply = _PING_REPLY.search(block)
    pad = int(size) * 2**20
    if reply is None:
        reason = "log ends inside this ping (truncated)" if truncated else _ping_error(block)
        return PingStep(service, rank, size, pad, None, None, FAILED, reason)
    hops = len(reply.group("route").split("!"))
    return PingStep(
        service, rank, size, int(reply.group("pad")), float(reply.group("ms")), hops, OK, ""
    )


def _ping_error(block: str) -> str:
    for line in block.splitlines():
        line = line.strip()
        if line and not _PING_ECHO.match(line) and not re.match(_BROKER_LOG, line):
            return line[:200]
    return "no ping reply"
