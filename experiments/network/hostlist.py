"""Slurm/Flux hostlists: `node[1-8,10]` <-> node1 ... node8, node10.

Compression groups names by the text before their trailing number; a number
written with leading zeros keeps its width (`node[01-12]`). Expansion reads the
same syntax, so what `compress_hostlist` writes, `expand_hostlist` reads back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from experiments.errors import UserError
from experiments.model.topology import consecutive_runs

__all__ = ["compress_hostlist", "expand_hostlist"]

_TRAILING_NUMBER = re.compile(r"^(?P<prefix>.*?)(?P<digits>[0-9]+)$")
_BRACKET = re.compile(r"^(?P<prefix>[^\[\]]*)\[(?P<body>[^\[\]]+)\](?P<suffix>[^\[\]]*)$")
_RANGE = re.compile(r"^(?P<lo>[0-9]+)(?:-(?P<hi>[0-9]+))?$")


def _ranges(numbers: list[int], width: int) -> str:
    return ",".join(
        f"{lo:0{width}d}" if lo == hi else f"{lo:0{width}d}-{hi:0{width}d}"
        for lo, hi in consecutive_runs(numbers)
    )


def compress_hostlist(names: Iterable[str]) -> str:
    """Sorted, de-duplicated hostlist text: `node[1-3,7],gpu05,login`."""
    plain: set[str] = set()
    # (prefix, width) -> numbers; width 0 means "written without leading zeros".
    groups: dict[tuple[str, int], set[int]] = {}
    for name in names:
        match = _TRAILING_NUMBER.match(name)
        if match is None:
            plain.add(name)
            continue
        digits = match.group("digits")
        width = len(digits) if digits.startswith("0") and len(digits) > 1 else 0
        groups.setdefault((match.group("prefix"), width), set()).add(int(digits))
    # An unpadded number as wide as a padded group belongs to it: node09,node10 -> node[09-10].
    for (prefix, width), numbers in list(groups.items()):
        if width == 0:
            continue
        unpadded = groups.get((prefix, 0), set())
        fits = {n for n in unpadded if len(str(n)) == width}
        if fits:
            numbers |= fits
            unpadded -= fits
            if not unpadded:
                del groups[(prefix, 0)]
    entries: list[tuple[str, str]] = [(name, name) for name in plain]
    for (prefix, width), numbers in groups.items():
        ordered = sorted(numbers)
        if len(ordered) == 1:
            entries.append((prefix, f"{prefix}{ordered[0]:0{width}d}"))
        else:
            entries.append((prefix, f"{prefix}[{_ranges(ordered, width)}]"))
    return ",".join(text for _, text in sorted(entries))


def _split_top_level(text: str) -> list[str]:
    """Split on commas and whitespace outside brackets."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise UserError(f"invalid hostlist {text.strip()!r}: unbalanced ']'")
        if depth == 0 and (char == "," or char.isspace()):
            if current:
                parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth != 0:
        raise UserError(f"invalid hostlist {text.strip()!r}: unbalanced '['")
    if current:
        parts.append("".join(current))
    return parts


def expand_hostlist(text: str) -> list[str]:
    """`node[1-3],gpu7` -> [node1, node2, node3, gpu7], in the order written."""
    names: list[str] = []
    for part in _split_top_level(text):
        if "[" not in part and "]" not in part:
            names.append(part)
            continue
        match = _BRACKET.match(part)
        if match is None:
            raise UserError(f"invalid hostlist entry {part!r}: one [...] range per name")
        for item in match.group("body").split(","):
            bounds = _RANGE.match(item.strip())
            if bounds is None:
                raise UserError(f"invalid hostlist entry {part!r}: bad range {item!r}")
            lo_text, hi_text = bounds.group("lo"), bounds.group("hi") or bounds.group("lo")
            lo, hi = int(lo_text), int(hi_text)
            if hi < lo:
                raise UserError(f"invalid hostlist entry {part!r}: range {item!r} runs backwards")
            width = len(lo_text) if lo_text.startswith("0") else 0
            names.extend(
                f"{match.group('prefix')}{n:0{width}d}{match.group('suffix')}"
                for n in range(lo, hi + 1)
            )
    return names
