"""race.json: a race's state in the raw tree, beside the cells its blocks ran.

`<data-dir>/race.json` holds what the race was asked (`settings`: what shapes
its cells and its decisions, so a resumed race refuses a changed one) and where
it is (`race`: every block attempt with its iteration, times or void reason,
every lane's survivors and decisions with their statistics).  The cells are
ordinary cells of the raw tree (`<nodes>/<topo>/<iteration>/`, one size each),
so `kary parse` reads them like any others.

Written atomically after every block; the format is stamped and a newer or
unknown one is refused with one line.  This module owns the file; the race's
structure (experiments/race/engine.py) turns `race` into objects.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from experiments.errors import UserError
from experiments.files import read_document, write_atomic

__all__ = [
    "RACE_FORMAT",
    "RACE_NAME",
    "RaceFile",
    "keep_race",
    "race_path",
    "read_race",
    "write_race",
]

RACE_NAME = "race.json"
RACE_FORMAT = 1


def race_path(data_dir: Path) -> Path:
    return Path(data_dir) / RACE_NAME


class RaceFile:
    """What race.json holds: the settings it was started with and the race's state."""

    def __init__(self, settings: dict[str, Any], race: dict[str, Any]) -> None:
        self.settings = settings
        self.race = race

    def to_json(self) -> dict[str, Any]:
        return {"format": RACE_FORMAT, "settings": self.settings, "race": self.race}


def read_race(data_dir: Path) -> RaceFile | None:
    """The race kept in `data_dir`, or None when no race was started there."""
    path = race_path(data_dir)
    if not path.is_file():
        return None
    data = read_document(path, "race state", "json")
    if not isinstance(data, dict) or not isinstance(data.get("race"), dict):
        raise UserError(f"race state {path} is not a kary race (no `race` object)")
    found = data.get("format")
    if found != RACE_FORMAT:
        raise UserError(
            f"race state {path} has format {found!r}; this kary reads format {RACE_FORMAT}: "
            "use the kary that started it, or another --data-dir"
        )
    settings = data.get("settings")
    return RaceFile(settings if isinstance(settings, dict) else {}, data["race"])


def write_race(data_dir: Path, state: RaceFile) -> None:
    write_atomic(race_path(data_dir), json.dumps(state.to_json(), indent=1) + "\n")


def keep_race(raw_dir: Path, parsed_dir: Path) -> Path | None:
    """`kary parse`: the raw tree's race, checked and kept beside the parsed tables for
    the report; None when the raw tree holds no race."""
    state = read_race(raw_dir)
    if state is None:
        return None
    Path(parsed_dir).mkdir(parents=True, exist_ok=True)
    write_race(parsed_dir, state)
    return race_path(parsed_dir)
