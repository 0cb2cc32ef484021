"""A race kept in race.json, met again: resumed, extended by a larger budget, or refused.

The same command resumes a race where it stopped.  A setting that would change what
the race's blocks or decisions mean is refused in one line naming what differs
(`rules.zone 0.05, now 0.1`), and so is another `--seed`.  A larger `--max-blocks`
extends it instead: its blocks and decisions are kept, a lane that ended not
separated goes on, and its looks spend only what the larger budget's spending
function allows beyond what they spent (sequential.py).
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from experiments.errors import UserError
from experiments.formats.race_state import read_race
from experiments.race.engine import NOT_SEPARATED, Race
from experiments.race.plan import RacePlan
from experiments.race.rules import CONTINUE

__all__ = ["resume_or_start"]


def resume_or_start(planned: RacePlan, data_dir: Path) -> Race:
    kept = read_race(data_dir)
    settings = planned.settings()
    if kept is None:
        seed = planned.seed
        race = Race.start(
            planned.candidates,
            planned.sizes,
            planned.mode,
            planned.rules,
            seed if seed is not None else secrets.randbelow(2**31),
            planned.nodes,
        )
        return race
    race = Race.from_json(kept.race)
    if planned.seed is not None and planned.seed != race.seed:
        raise UserError(
            f"{data_dir}/race.json is a race with seed {race.seed}, not --seed {planned.seed}: "
            "without --seed the same command resumes it; start another race in another "
            "--data-dir"
        )
    differing = _differences(kept.settings, settings)
    budget = [d for d in differing if d[0] == "rules.max_blocks"]
    if budget and len(differing) == 1 and int(budget[0][2]) > int(budget[0][1]):
        return _extended(race, planned)
    if differing:
        said = "; ".join(f"{name} {was!r}, now {now!r}" for name, was, now in differing)
        raise UserError(
            f"{data_dir}/race.json is a race with {said}: the same command resumes it (a "
            "larger --max-blocks extends it); start another race in another --data-dir"
        )
    return race


def _differences(kept: dict[str, Any], now: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(name, kept, now) of each setting that differs; in a dict setting, each key."""
    found = []
    for name, value in now.items():
        was = _as_kept(name, kept.get(name), value)
        if was == value:
            continue
        if isinstance(was, dict) and isinstance(value, dict):
            found += [
                (f"{name}.{key}", was.get(key), value.get(key))
                for key in sorted(set(was) | set(value))
                if was.get(key) != value.get(key)
            ]
        else:
            found.append((name, was, value))
    return found


def _extended(race: Race, planned: RacePlan) -> Race:
    """The race with a larger budget: its blocks, decisions and the error its looks spent
    kept (sequential.py spends only what the new budget allows beyond it), and every lane
    that ended not separated open again."""
    race.rules = planned.rules
    race.budget = None
    for lane in race.lanes:
        if lane.outcome == NOT_SEPARATED:
            lane.outcome, lane.why = CONTINUE, None
    return race


def _as_kept(name: str, kept: Any, now: Any) -> Any:
    """A kept setting as it compares with today's: a rule added to kary since the race
    began (a race.json without it) takes today's value, since no decision of the race
    so far could have used it."""
    if name == "rules" and isinstance(kept, dict) and isinstance(now, dict):
        return {**now, **kept}
    return kept
