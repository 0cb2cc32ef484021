"""Flux idsets as `flux exec -r/-x` read and print them: `all`, `3`, `1-4,7`, `[1-4,7]`."""

from __future__ import annotations

__all__ = ["encode_idset", "parse_idset"]


def parse_idset(text: str, size: int) -> set[int]:
    """The ranks `text` names; `all` is 0..size-1.  ValueError for anything else."""
    text = text.strip()
    if text == "all":
        return set(range(size))
    body = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    ranks: set[int] = set()
    for part in body.split(","):
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"invalid idset {text!r}")
        first, last = int(lo), int(hi) if sep else int(lo)
        if last < first:
            raise ValueError(f"invalid idset {text!r}")
        ranks.update(range(first, last + 1))
    return ranks


def encode_idset(ranks: set[int] | list[int], brackets: bool = False) -> str:
    """`[1-3,5]` style text (brackets only when asked, as flux-core's IDSET_FLAG_BRACKETS
    adds them only around more than one id)."""
    ordered = sorted(set(ranks))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    text = ",".join(parts)
    if brackets and len(ordered) > 1:
        return f"[{text}]"
    return text
