"""Parse flux-distribute's log format: `EVENT <name>-<size>` lines, each followed by bash `time`.

A step's block runs from its EVENT line to the next one (or the end of the
benchmark). flux-distribute never looked at exit status, so a step that printed an
error still had a `real` line and was recorded as a short timing. Here a block
that shows an error, or has no `real` line, is a failed step with a reason and
no time.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import repeat

from analysis.read.log_text import LogText
from analysis.read.records import FAILED, OK, PingStep, ProblemKind, Step, few, step_of
from experiments.formats.cell_layout import size_from_label
from experiments.formats.events import split_event_label, strategy_of

__all__ = ["LegacyLog", "first_error", "parse_legacy", "parse_real", "ping_error"]

# bash `time` (`real\t1m9.978s`), `time -p` (`real 69.97`) and `1h2m3.4s` forms.
_TIME = r"real[ \t]+(?:(?P<h>[0-9]+)h)?(?:(?P<m>[0-9]+)m)?(?P<s>[0-9]+(?:[.,][0-9]+)?)s?"
_REAL = re.compile(rf"^{_TIME}[ \t]*$", re.M)
# Led by a literal newline so the regex engine can skip ahead at C speed
# (a leading `^` under re.M is tried at every position); run on "\n" + text.
_SCAN = re.compile(rf"\n(?:EVENT[ \t]+(?P<event>\S+)|{_TIME})[ \t]*$", re.M)
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
# A cheap first look (substring tests run at C speed): most logs hold no error
# at all, and then _ERROR never runs.
_ERROR_HINTS = (
    "Exit ", "Killed", "Terminated", "Aborted", "Segmentation fault", "Bus error",
    "flux-archive: ", "flux-exec: ", "No such file", "command not found",
    "Permission denied", "Out of memory",
)  # fmt: skip
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
    return None if match is None else _seconds(match.group("h"), match.group("m"), match.group("s"))


def _seconds(hours: str | None, minutes: str | None, seconds: str) -> float:
    value = float(seconds) if "," not in seconds else float(seconds.replace(",", "."))
    if minutes:
        value += int(minutes) * 60
    if hours:
        value += int(hours) * 3600
    return value


def first_error(block: str) -> str | None:
    """The first line of a block that shows the step failed, or None."""
    match = _ERROR.search(block)
    return match.group(0).strip()[:200] if match else None


def parse_legacy(log: LogText) -> LegacyLog:
    """Every EVENT block of a seed-format log, as archive steps or pings.

    One regex pass finds the EVENT and `real` lines of the whole text; error
    lines are looked for only when the text holds a hint of one, and then
    assigned to the block they fall in.
    """
    out = LegacyLog()
    text = log.text
    events: list[tuple[str, int, int]] = []  # (name, start of EVENT line, end of it)
    seconds: list[float | None] = []
    # Scan from the first EVENT line on (the header is often kilobytes of pip
    # and jq output); _SCAN is led by a newline, so pad a log that starts with one.
    pad = 1 if text.startswith("EVENT") else 0
    scan = "\n" + text if pad else text
    first = scan.find("\nEVENT")
    if first < 0:
        return out
    if "EVENT flux-ping-" in text or _may_hold_errors(text, first):
        # Block boundaries are needed (ping replies, error lines): keep positions.
        for match in _SCAN.finditer(scan, first):
            name = match.group("event")
            if name is not None:
                events.append((name, match.start() + 1 - pad, match.end() - pad))
                seconds.append(None)
            elif events and seconds[-1] is None:
                seconds[-1] = _seconds(match.group("h"), match.group("m"), match.group("s"))
    else:
        # The common case, a clean log: findall builds tuples at C speed.
        found = _SCAN.findall(scan, first)
        clean = _clean_steps(found)
        if clean is not None:
            out.steps = clean
            return out
        for name, hours, minutes, secs in found:
            if name:
                events.append((name, 0, 0))
                seconds.append(None)
            elif events and seconds[-1] is None:
                if hours or "," in secs:
                    seconds[-1] = _seconds(hours, minutes, secs)
                else:  # bash's `real 0m1.234s`: no call for the usual form
                    seconds[-1] = float(secs) + int(minutes) * 60 if minutes else float(secs)
    errors = _errors_by_block(text, events)
    seen: set[str] = set()
    duplicates: list[str] = []
    unknown: list[str] = []
    truncated = not log.ended
    last = len(events) - 1
    steps = out.steps
    for i, (name, _, end) in enumerate(events):
        if name in seen:
            duplicates.append(name)
            continue
        seen.add(name)
        key = _archive_key(name)
        if key is not None:
            error, took = errors.get(i) if errors else None, seconds[i]
            if error is None and took is not None:
                steps.append(step_of((*key, took, OK, "")))
            else:
                steps.append(_failed_step(key, error, i == last and truncated))
            continue
        ping = _PING_EVENT.match(name) if name.startswith("flux-ping-") else None
        if ping is not None:
            block = text[end : len(text) if i == last else events[i + 1][1]]
            out.pings.append(_ping_step(ping, block, truncated=i == last and truncated))
            continue
        unknown.append(name)
    if duplicates:
        out.notes.append(("partial", f"duplicate events ignored (first kept): {few(duplicates)}"))
    if unknown:
        out.notes.append(("partial", f"unknown events ignored: {few(unknown)}"))
    if events and truncated and (out.steps or out.pings):
        cut = (out.steps[-1].status if out.steps else out.pings[-1].status) == FAILED
        if cut:
            out.notes.append(("partial", "log ends inside a step (truncated)"))
    return out


def _clean_steps(found: list[tuple[str, str, str, str]]) -> list[Step] | None:
    """The steps of a clean log's EVENT and `real` lines, column by column; None unless
    every line is an archive step's EVENT followed by exactly one bash `real 0m1.234s`
    and no event comes twice (the loop in parse_legacy judges every other log).

    This is flux-distribute's every log: a step built per line in Python was most of its parse.
    """
    if not found or len(found) % 2:
        return None
    names, hours, minutes, secs = zip(*found, strict=True)
    events = names[0::2]
    if not all(events) or any(names[1::2]) or any(hours) or "," in "".join(secs):
        return None
    keys = _archive_keys(events)
    if keys is None:
        return None
    took_minutes, took = minutes[1::2], secs[1::2]
    if took_minutes.count("0") == len(took_minutes):  # bash's `real 0m1.234s`
        seconds = list(map(float, took))
    else:
        pairs = zip(took_minutes, took, strict=True)
        seconds = [float(s) + int(m) * 60 if m else float(s) for m, s in pairs]
    event, label, size = keys
    count = len(seconds)
    rows = zip(event, label, size, seconds, repeat(OK, count), repeat("", count), strict=True)
    return list(map(step_of, rows))


@lru_cache(maxsize=1024)
def _archive_keys(
    events: tuple[str, ...],
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[int, ...]] | None:
    """(event, size label, bytes) columns of these EVENT names; None if one is not an
    archive step or comes twice.  Cached: the logs of a sweep run the same steps."""
    if len(set(events)) != len(events):
        return None
    keys = [_archive_key(name) for name in events]
    if None in keys:
        return None
    event, label, size = zip(*keys, strict=True)
    return event, label, size


def _may_hold_errors(text: str, start: int) -> bool:
    """Cheap test first: every error form above has ': ' or one of a few words."""
    return ": " in text[start:] and any(hint in text for hint in _ERROR_HINTS)


def _errors_by_block(text: str, events: list[tuple[str, int, int]]) -> dict[int, str]:
    """The first error line of each EVENT block that has one, by block index."""
    if not events or not events[0][2] or not _may_hold_errors(text, events[0][1]):
        return {}
    starts = [start for _, start, _ in events]
    found: dict[int, str] = {}
    for match in _ERROR.finditer(text, events[0][2]):
        block = bisect_right(starts, match.start()) - 1
        found.setdefault(block, match.group(0).strip()[:200])
    return found


@lru_cache(maxsize=65536)
def _archive_key(name: str) -> tuple[str, str, int] | None:
    """`distribute-all-nodes-2` -> (event, size label, bytes); None if not an archive step."""
    split = split_event_label(name)
    if split is None or strategy_of(split[0]) is None:
        return None
    return split[0], split[1], size_from_label(split[1]) or 0


def _failed_step(key: tuple[str, str, int], error: str | None, truncated: bool) -> Step:
    if error is None:
        error = "log ends inside this step (truncated)" if truncated else "no 'real' timing line"
    return Step(key[0], key[1], key[2], None, FAILED, error)


def _ping_step(match: re.Match[str], block: str, truncated: bool) -> PingStep:
    service, size, rank = match.group("service"), match.group("size"), int(match.group("rank"))
    reply = _PING_REPLY.search(block)
    pad = int(size) * 2**20
    if reply is None:
        reason = "log ends inside this ping (truncated)" if truncated else ping_error(block)
        return PingStep(service, rank, size, pad, None, None, FAILED, reason)
    hops = len(reply.group("route").split("!"))
    return PingStep(
        service, rank, size, int(reply.group("pad")), float(reply.group("ms")), hops, OK, ""
    )


def ping_error(block: str) -> str:
    """Why a ping failed: the first line of its output that is not its header or a broker's log."""
    for line in block.splitlines():
        line = line.strip()
        if line and not _PING_ECHO.match(line) and not re.match(_BROKER_LOG, line):
            return line[:200]
    return "no ping reply"
