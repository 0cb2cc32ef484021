"""Turn a raw log file into clean text once, so the parsers can run regexes over it.

Real logs carry ANSI colour (jq, pip), CRLF line ends, carriage-return progress
bars and, when a pod dies, half-written or binary garbage. Normalising the
whole text up front keeps every parser a handful of whole-file regexes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from experiments.formats.log_sections import find_line, overlay_lines

__all__ = ["LogText", "decode_log", "find_line", "header_value", "overlay_lines"]

# CSI sequences (colours, cursor moves) and the two-byte ESC forms.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|[@-Z\\-_])")
_CONTROL_BYTES = bytes([*range(0, 9), 11, 12, *range(14, 27), *range(28, 32), 127])
# flux-distribute and kary templates end the benchmark with `echo "SCRIPT entrypoint"; cat $0`;
# what follows is the script text and the broker's shutdown noise, never a step.
_END_MARKER = re.compile(r"SCRIPT entrypoint[ \t]*$", re.M)
_MARKERS = (b"EVENT ", b"KARY ", b"TOPOLOGY ")


@dataclass(frozen=True)
class LogText:
    """A log's text, cleaned, cut at the end-of-benchmark marker."""

    text: str
    ended: bool  # the end marker was seen: the benchmark ran to its end


def decode_log(data: bytes) -> LogText | str:
    """Clean text of a log, or the reason it is not a log (a one-line string)."""
    if not data.strip():
        return "empty file"
    if b"\x00" in data and not any(marker in data for marker in _MARKERS):
        return "binary file (not a text log)"
    # Control bytes other than tab, LF, CR and ESC go first, in one C-speed pass.
    data = data.translate(None, _CONTROL_BYTES)
    text = data.decode("utf-8", errors="replace")
    if "\x1b" in text:
        text = _ANSI.sub("", text).replace("\x1b", "")
    if "\r" in text:
        # CRLF ends become LF; a lone CR (progress bars) starts a new line.
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    end = find_line(text, "SCRIPT entrypoint")
    while end >= 0 and _END_MARKER.match(text, end) is None:
        end = find_line(text, "SCRIPT entrypoint", end + 1)
    if end >= 0:
        return LogText(text[:end], ended=True)
    return LogText(text, ended=False)


_VALUE = re.compile(r"[ \t]*\n[ \t]*(\S[^\n]*)$", re.M)


def header_value(text: str, marker: str) -> str | None:
    """The line after a header marker (`NODES`, `TOPOLOGY description`), stripped."""
    pos = find_line(text, marker)
    while pos >= 0:
        match = _VALUE.match(text, pos + len(marker))
        if match is not None:
            return match.group(1).strip()
        pos = find_line(text, marker, pos + 1)
    return None
