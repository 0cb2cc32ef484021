"""The report's race section: who survived each block, every decision, the answer, the cost.

Read from the race.json `kary parse` keeps beside the tables
(formats/race_state.py).  The chart reads as irace's elimination plots do: a
row per topology, a column per block attempt, a filled square where the
topology ran in a complete block, a hollow one where the block was voided (it
ran again), and the row ends where the test dropped it.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from experiments.formats.cell_layout import format_size
from experiments.formats.race_state import read_race
from experiments.race.answer import answer_text
from experiments.race.engine import Race
from experiments.race.rules import uniform_runs_a_side

__all__ = ["race_view"]

_CELL = 14
_LABEL = 90


def race_view(parsed_dir: Path) -> dict[str, Any] | None:
    """What the page shows of the race kept in `parsed_dir`, or None without one."""
    kept = read_race(parsed_dir)
    if kept is None:
        return None
    race = Race.from_json(kept.race)
    runs = race.runs()
    plain = len(race.candidates) * len(race.sizes)
    uniform = uniform_runs_a_side(len(race.candidates), race.rules.confidence) * plain
    void = [b for b in race.blocks if b.void]
    return {
        "answer": answer_text(race),
        "mode": race.mode,
        "rules": (
            f"confidence {race.rules.confidence:g}, zone {race.rules.zone:.0%}, first test "
            f"after {race.rules.first_test} blocks, at most {race.rules.max_blocks} blocks; "
            f"seed {race.seed}"
        ),
        "chart": _chart(race),
        "test": _test_named(race),
        "decisions": _decisions(race),
        "voided": [
            {"iteration": b.iteration, "size": format_size(b.size_bytes), "reason": b.void}
            for b in void
        ],
        "cost": (
            f"{runs} runs ({sum(len(b.order) for b in void)} of them in voided blocks) and "
            f"{race.node_seconds():,.0f} node-seconds of timed distribution; a plain sweep "
            f"runs {plain} (one iteration, which decides nothing), the uniform design that "
            f"could reach the same confidence {uniform}"
        ),
    }


def _test_named(race: Race) -> str:
    """The test the race's looks used (decide.py names it in each decision)."""
    names = [d.test for lane in race.lanes for d in lane.decisions if d.p is not None]
    return names[-1] if names else "none: the race ended before its first test"


def _decisions(race: Race) -> list[dict[str, str]]:
    rows = []
    by_iteration = {b.iteration: b for b in race.blocks}
    for lane in race.lanes:
        last = lane.decisions[-1] if lane.decisions else None
        for iteration, decision in zip(lane.blocks, lane.decisions, strict=True):
            if decision.p is None:
                continue
            # The look the race stopped at shows the race's ending (not separated,
            # stopped), not only what the test decided.
            outcome = lane.outcome if decision is last and lane.decided else decision.outcome
            dropped = ", ".join(
                f"{c.candidate} (p adj {c.p_adjusted:.3g})"
                for c in decision.comparisons
                if c.dropped and c.p_adjusted is not None
            )
            rows.append(
                {
                    "block": str(iteration),
                    "size": format_size(by_iteration[iteration].size_bytes),
                    "n": str(decision.blocks),
                    "survivors": str(len(decision.survivors)),
                    "level": "" if decision.level is None else f"{decision.level:.3g}",
                    "p": "" if decision.p is None else f"{decision.p:.3g}",
                    "best": decision.best,
                    "dropped": dropped or "none",
                    "outcome": outcome,
                }
            )
    return rows


def _chart(race: Race) -> str:
    """The elimination chart as inline SVG."""
    dropped_at: dict[str, int] = {}
    for lane in race.lanes:
        for iteration, decision in zip(lane.blocks, lane.decisions, strict=True):
            for name in decision.dropped:
                dropped_at.setdefault(name, iteration)
    last = max((b.iteration for b in race.blocks), default=0)
    order = sorted(race.candidates, key=lambda c: (-dropped_at.get(c, last + 1), c))
    width = _LABEL + _CELL * (len(race.blocks) + 1)
    height = _CELL * (len(order) + 2)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'role="img" aria-label="who survived each block">'
    ]
    for row, name in enumerate(order):
        y = _CELL * (row + 1)
        parts.append(
            f'<text x="{_LABEL - 6}" y="{y + _CELL - 3}" text-anchor="end" '
            f'font-size="11">{escape(name)}</text>'
        )
        for column, block in enumerate(race.blocks):
            if name not in block.order:
                continue
            x = _LABEL + _CELL * column
            style = 'fill="none" stroke="#999"' if block.void else 'fill="#3b6ea5"'
            parts.append(
                f'<rect x="{x + 1}" y="{y + 1}" width="{_CELL - 2}" height="{_CELL - 2}" '
                f"{style}><title>{escape(name)}, block {block.iteration} "
                f"({format_size(block.size_bytes)}){' void' if block.void else ''}"
                "</title></rect>"
            )
        if name in dropped_at:
            column = next(i for i, b in enumerate(race.blocks) if b.iteration == dropped_at[name])
            x = _LABEL + _CELL * (column + 1)
            parts.append(
                f'<text x="{x + 3}" y="{y + _CELL - 3}" font-size="11" fill="#b33">✕</text>'
            )
    for column, block in enumerate(race.blocks):
        x = _LABEL + _CELL * column
        parts.append(
            f'<text x="{x + _CELL / 2}" y="{height - 2}" text-anchor="middle" '
            f'font-size="9">{block.iteration}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
