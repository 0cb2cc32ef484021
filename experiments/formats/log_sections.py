"""Sections of rank 0's log as the entrypoint prints them: the one reader of each.

`flux overlay status` goes between a `TOPOLOGY diagram` line and a `TOPOLOGY
description` line (templates/entrypoint.sh.j2).  The runner checks it against
the cell's topology (execution/outcome.py) and `kary parse` keeps it
(analysis/read): both read it here.
"""

from __future__ import annotations

import re

__all__ = ["find_line", "overlay_lines"]

_OVERLAY = re.compile(r"TOPOLOGY diagram[ \t]*\n(.*?)^TOPOLOGY description[ \t]*$", re.M | re.S)


def find_line(text: str, literal: str, start: int = 0) -> int:
    """Index of the first line that starts with `literal`, or -1.

    str.find runs at C speed; a `^...` regex under re.M tries every position.
    """
    pos = text.find(literal, start)
    while pos > 0 and text[pos - 1] != "\n":
        pos = text.find(literal, pos + 1)
    return pos


def overlay_lines(text: str) -> list[str]:
    """The `flux overlay status` lines printed between the TOPOLOGY markers."""
    pos = find_line(text, "TOPOLOGY diagram")
    match = _OVERLAY.match(text, pos) if pos >= 0 else None
    if match is None:
        return []
    return [line.rstrip() for line in match.group(1).splitlines() if line.strip()]
