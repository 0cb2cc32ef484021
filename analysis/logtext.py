"""Turn a raw log file into clean text once, so the parsers can run regexes over it.

Real logs carry ANSI colour (jq, pip), CRLF line ends, carriage-return progress
bars and, when a pod dies, half-written or binary garbage. Normalising the
whole text up front keeps every parser a handful of whole-file regexes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["LogText", "decode_log", "header_value", "overlay_lines"]

# CSI sequences (colours, cursor moves) and the two-byte ESC forms.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
# Control characters other than tab and newline (after CR handling).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# The seed and kary templates end the benchmark with `echo "SCRIPT entrypoint"; cat $0`;
# what follows is the script text and the broker's shutdown noise, never a step.
_END_MARKER = re.compile(r"^SCRIPT entrypoint[ \t]*$", re.M)
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
    text = data.decode("utf-8", errors="replace")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        # CRLF ends become LF; a lone CR (progress bars) starts a new line.
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    end = _END_MARKER.search(text)
    if end is not None:
        return LogText(text[: end.start()], ended=True)
    return LogText(text, ended=False)


_OVERLAY = re.compile(r"^TOPOLOGY diagram[ \t]*\n(.*?)^TOPOLOGY description[ \t]*$", re.M | re.S)


def overlay_lines(text: str) -> list[str]:
    """The `flux overlay status` lines printed between the TOPOLOGY markers."""
    match = _OVERLAY.search(text)
    if match is None:
        return []
    return [line.rstrip() for line in match.group(1).splitlines() if line.strip()]


def header_value(text: str, marker: str) -> str | None:
    """The line after a header marker (`NODES`, `TOPOLOGY description`), stripped."""
    match = re.search(rf"^{re.escape(marker)}[ \t]*\n[ \t]*(\S[^\n]*)$", text, re.M)
    return match.group(1).strip() if match else None
