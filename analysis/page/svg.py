"""Inline SVG for the report: each design's TBON as a tree, and one strip of iterations.

SVG is drawn by hand, not by matplotlib: a tree of 6 ranks is a dozen shapes,
stays crisp at any zoom and weighs a few hundred bytes. Every value that goes
into the markup is a number or passes through `_esc`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from experiments.model.topology import Tree

__all__ = [
    "LEVEL_COLORS",
    "strip_svg",
    "tree_svg",
]

# Meaning, not decoration: the root, the level the middle strategy fills first,
# the leaves (what the leaves strategy fills), and everything else.
LEVEL_COLORS = {"root": "#24292f", "middle": "#8250df", "leaf": "#0969da", "inner": "#8c959f"}
_OK_DOT = "#0b3d91"
_FAILED = "#cf222e"
_BEST_BAND = "#aceebb"
_BAND = "#d8dee4"

# Past this many ranks the drawing is dots without numbers; past the limit, none.
_LABELLED_RANKS = 48
# A numbered rank needs 20 px of its own; a wide, shallow tree (kary:16 on 30
# nodes) may grow the drawing to this width rather than overlap its numbers.
_LABEL_STEP = 20.0
_LABELLED_MAX_WIDTH = 620
_DRAWN_RANKS = 1024


def _esc(text: object) -> str:
    return escape(str(text), quote=True)


def _fmt(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _layout(tree: Tree) -> list[float]:
    """x slot per rank: leaves side by side in depth-first order, parents centred above."""
    x = [0.0] * tree.size
    next_slot = 0
    # Iterative post-order: a chain of 100,000 ranks (kary:1) must not recurse.
    stack: list[tuple[int, bool]] = [(0, False)]
    while stack:
        rank, seen = stack.pop()
        kids = tree.children[rank]
        if not kids:
            x[rank] = next_slot
            next_slot += 1
        elif seen:
            x[rank] = (x[kids[0]] + x[kids[-1]]) / 2
        else:
            stack.append((rank, True))
            stack.extend((kid, False) for kid in reversed(kids))
    return x


def _role(tree: Tree, rank: int) -> str:
    level = tree.level[rank]
    if level == 0:
        return "root"
    if level == tree.depth:
        return "leaf"
    if tree.depth >= 2 and level == tree.depth // 2:
        return "middle"
    return "inner"


def tree_svg(tree: Tree, max_width: int = 300, max_height: int = 260) -> str:
    """The tree as inline SVG: rank 0 on top, one row per level, coloured by role."""
    if tree.size > _DRAWN_RANKS:
        return ""
    slots = _layout(tree)
    width_slots = max(slots) + 1
    labelled = (
        tree.size <= _LABELLED_RANKS and _LABEL_STEP * (width_slots - 1) + 22 <= _LABELLED_MAX_WIDTH
    )
    if labelled:
        radius = 9.0
        step_x = (max_width - 2 * radius - 4) / max(width_slots, 1)
        step_x = max(_LABEL_STEP, min(26.0, step_x))
    else:
        step_x = max(1.2, min(8.0, (max_width - 10) / max(width_slots, 1)))
        radius = min(3.0, max(step_x / 2.4, 0.8))
    step_y = min(40.0, (max_height - 2 * radius - 4) / max(tree.depth, 1))
    pad = radius + 2
    width = (width_slots - 1) * step_x + 2 * pad
    height = tree.depth * step_y + 2 * pad

    def at(rank: int) -> tuple[float, float]:
        return pad + slots[rank] * step_x, pad + tree.level[rank] * step_y

    parts = [
        f'<svg class="tbon" width="{_fmt(width)}" '
        f'height="{_fmt(height)}" viewBox="0 0 {_fmt(width)} {_fmt(height)}" role="img" '
        f'aria-label="{_esc(tree.topology)} on {tree.size} nodes">'
    ]
    stroke = 1.2 if labelled else 0.6
    for parent, child in tree.edges():
        (x1, y1), (x2, y2) = at(parent), at(child)
        parts.append(
            f'<line x1="{_fmt(x1)}" y1="{_fmt(y1)}" x2="{_fmt(x2)}" y2="{_fmt(y2)}" '
            f'stroke="#afb8c1" stroke-width="{stroke}"/>'
        )
    for rank in range(tree.size):
        x, y = at(rank)
        color = LEVEL_COLORS[_role(tree, rank)]
        parts.append(
            f'<circle cx="{_fmt(x)}" cy="{_fmt(y)}" r="{_fmt(radius)}" fill="{color}">'
            f"<title>rank {rank}, level {tree.level[rank]}</title></circle>"
        )
        if labelled:
            parts.append(
                f'<text x="{_fmt(x)}" y="{_fmt(y + 3.6)}" text-anchor="middle" '
                f'font-size="10" font-weight="600" fill="#fff">{rank}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class Scale:
    """The seconds shown across one strip (shared by every topology of a group)."""

    low: float
    high: float

    @staticmethod
    def of(values: Sequence[float]) -> Scale:
        finite = [v for v in values if math.isfinite(v)]
        if not finite:
            return Scale(0.0, 1.0)
        low, high = min(finite), max(finite)
        if high - low < 1e-9:
            low, high = low * 0.95, high * 1.05 + 1e-6
        return Scale(low, high)


def strip_svg(
    times: Sequence[tuple[object, float]],
    failed: Sequence[str],
    median: float | None,
    ci: tuple[float, float] | None,
    scale: Scale,
    best: bool = False,
    width: int = 150,
    coverage: float | None = None,
) -> str:
    """One group's iterations on a shared axis: dots, the median tick, its interval band.

    `times` is (iteration, seconds) per ok step; `failed` lists failed iterations,
    drawn as red crosses at the right end, never as a time. The band's tooltip
    states its coverage (75% for three runs' [min, max]).
    """
    height, mid, pad = 24, 12.0, 5.0
    cross_room = 14.0 if failed else 0.0
    span = width - 2 * pad - cross_room

    def x_of(value: float) -> float:
        return pad + (value - scale.low) / (scale.high - scale.low) * span

    parts = [
        f'<svg class="strip" width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        f'<line x1="{_fmt(pad)}" y1="{mid}" x2="{_fmt(pad + span)}" y2="{mid}" '
        'stroke="#d0d7de" stroke-width="1"/>',
    ]
    if ci is not None:
        x1, x2 = x_of(ci[0]), x_of(ci[1])
        covers = f", {coverage:.0%} coverage" if coverage is not None else ""
        parts.append(
            f'<rect x="{_fmt(x1)}" y="{mid - 6}" width="{_fmt(max(x2 - x1, 1.5))}" height="12" '
            f'rx="3" fill="{_BEST_BAND if best else _BAND}"><title>interval of the median '
            f"(n={len(times)}{covers}): {ci[0]:.3f}–{ci[1]:.3f} s</title></rect>"
        )
    if median is not None and math.isfinite(median):
        xm = x_of(median)
        parts.append(
            f'<line x1="{_fmt(xm)}" y1="{mid - 9}" x2="{_fmt(xm)}" y2="{mid + 9}" '
            f'stroke="#1f2328" stroke-width="2"><title>median {median:.3f} s</title></line>'
        )
    for index, (iteration, seconds) in enumerate(times):
        # A small fixed vertical offset keeps equal times from hiding each other.
        y = mid + (index % 3 - 1) * 3.5
        parts.append(
            f'<circle cx="{_fmt(x_of(seconds))}" cy="{_fmt(y)}" r="3.3" fill="{_OK_DOT}" '
            f'fill-opacity="0.65"><title>iteration {_esc(iteration)}: {seconds:.3f} s'
            "</title></circle>"
        )
    if failed:
        xc = width - pad - 5
        parts.append(
            f'<g stroke="{_FAILED}" stroke-width="2.2"><title>failed: iteration'
            f"{'s' if len(failed) > 1 else ''} {_esc(', '.join(map(str, failed)))}</title>"
            f'<line x1="{_fmt(xc - 4)}" y1="{mid - 4}" x2="{_fmt(xc + 4)}" y2="{mid + 4}"/>'
            f'<line x1="{_fmt(xc - 4)}" y1="{mid + 4}" x2="{_fmt(xc + 4)}" y2="{mid - 4}"/></g>'
        )
    parts.append("</svg>")
    return "".join(parts)
