"""Parsed history as the time model sees it: sweeps of cells, each step's seconds,
each cell's wall time where run.json recorded it, and where the sweep ran.

A sweep is one parsed directory (kary's own, or flux-distribute's CSVs, read through
analysis's one loader).  Failed steps are left out (kary's CSVs mark them); the
seed's CSVs record failed steps as ~0.015 s, so a time under a fifth of the
median of its (event, size) in its sweep is taken as a failure and dropped.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pandas as pd

from experiments.errors import UserError
from experiments.estimate.coverage import Environment
from experiments.estimate.structure import Step, cell_steps
from experiments.formats.blobs import DEFAULT_BLOB
from experiments.formats.events import GENERATE_BLOB, STRATEGIES, VERIFY_PREFIX
from experiments.formats.parsed import EVENTS_CSV
from experiments.formats.parsed.load import load_parsed
from experiments.formats.run_record import ALLOCATION, BOX, TEST_INSTANCE
from experiments.model.plan import Cell
from experiments.model.topology import build_tree

__all__ = ["ObservedCell", "Sweep", "find_parsed_dirs", "load_sweep", "load_sweeps"]

_NEEDED = {"event", "status", "time_seconds", "size_bytes", "nodes", "topology"}
# Columns of settings that put cells of one uid and iteration side by side in a tree.
_CELL_SETTINGS = ("blob", "links", "chunksize", "mmap", "purge_target_size")
# Below this share of its (event, size)'s median a seed timing is a failed step.
_FAILED_SHARE = 0.2


@dataclass(frozen=True)
class ObservedCell:
    """One cell of history: what ran, the seconds of each step that succeeded, and
    its wall time (None where run.json did not record one or a step is missing)."""

    cell: Cell
    verify: bool
    generate: bool
    seconds: Mapping[tuple[str, int], float]  # (event, size bytes) -> seconds
    wall: float | None

    def steps(self) -> list[Step]:
        return cell_steps(self.cell, self.verify, self.generate)

    def observed(self) -> list[tuple[Step, float]]:
        """The cell's timed steps that history holds a time for, with that time."""
        return [
            (step, self.seconds[(step.event, step.size)])
            for step in self.steps()
            if step.event is not None and (step.event, step.size) in self.seconds
        ]


@dataclass(frozen=True)
class Sweep:
    """One parsed directory: its cells and where they ran.  `total_wall` is a
    known wall time of the whole sweep (e.g. from a README) where run.json has none."""

    name: str
    environment: Environment
    cells: tuple[ObservedCell, ...]
    total_wall: float | None = None

    @property
    def walls_known(self) -> bool:
        return bool(self.cells) and all(c.wall is not None for c in self.cells)


def find_parsed_dirs(root: Path) -> list[Path]:
    """Every parsed directory at or below `root` (or the one whose events CSV it names)."""
    root = Path(root)
    if root.is_file():
        return [root.parent] if root.name == EVENTS_CSV else []
    return sorted({path.parent for path in root.rglob(EVENTS_CSV)})


def load_sweeps(history: Path, totals: Mapping[str, float] | None = None) -> list[Sweep]:
    """Every parsed directory below `history` as a sweep (UserError if there is none)."""
    dirs = find_parsed_dirs(history)
    if not dirs:
        raise UserError(f"--history {history}: no {EVENTS_CSV} found")
    sweeps = [load_sweep(folder, (totals or {}).get(str(folder))) for folder in dirs]
    return [s for s in sweeps if s.cells]


# Sweeps already read, by folder and its files' identity: one `kary race` or `kary plan`
# fits the same --history several times (the sweep's estimate, the race's, its spread).
# A Sweep is frozen, so sharing one is safe; a rewritten file reads afresh.
_READ: dict[tuple[object, ...], Sweep] = {}


def load_sweep(folder: Path, total_wall: float | None = None, what: str = "--history") -> Sweep:
    """One parsed directory as a sweep; UserError (one line, led by `what`) if it is not one."""
    key = _folder_key(Path(folder), total_wall)
    if key is not None and key in _READ:
        return _READ[key]
    sweep = _load_sweep(folder, total_wall, what)
    if key is not None:
        _READ[key] = sweep
    return sweep


def _folder_key(folder: Path, total_wall: float | None) -> tuple[object, ...] | None:
    """The folder and every file in it, by inode, size and change time; None if unlistable."""
    try:
        stats = [(entry.name, entry.stat()) for entry in os.scandir(folder) if entry.is_file()]
    except OSError:
        return None
    files = tuple(sorted((name, st.st_ino, st.st_size, st.st_mtime_ns) for name, st in stats))
    return (str(folder.resolve()), total_wall, files)


def _load_sweep(folder: Path, total_wall: float | None, what: str) -> Sweep:
    try:
        parsed = load_parsed(folder)
    except UserError as err:
        raise UserError(f"{what}: {err}") from None
    events = parsed.events
    missing = _NEEDED - set(events.columns)
    if missing:
        raise UserError(
            f"{what}: {Path(folder) / EVENTS_CSV} lacks columns {', '.join(sorted(missing))}"
        )
    if not len(events):
        return Sweep(str(folder), Environment("kubernetes", None, str(folder)), ())
    events = _timed(events)
    runs = parsed.runs
    environment = _environment(events, runs, str(folder))
    walls = _walls(runs)
    cells = []
    # One cell per uid and iteration, and per setting a tree holds side by side (blob
    # kind, links, Flux knobs: each has its own directory level).
    keys = ["uid", "iteration", *(c for c in _CELL_SETTINGS if c in events.columns)]
    for _, rows in events.groupby(keys, sort=True, dropna=False):
        blob = _first(rows, "blob") or DEFAULT_BLOB
        key = (str(rows["uid"].iloc[0]), int(rows["iteration"].iloc[0]), blob)
        observed = _cell(rows, walls.get(key))
        if observed is not None:
            cells.append(observed)
    return Sweep(str(folder), environment, tuple(cells), total_wall)


def _timed(events: pd.DataFrame) -> pd.DataFrame:
    """Rows with a size; `seconds` set only on successful, plausible steps."""
    rows = events.assign(
        size=pd.to_numeric(events["size_bytes"], errors="coerce"),
        seconds=pd.to_numeric(events["time_seconds"], errors="coerce"),
        iteration=pd.to_numeric(events["iteration"], errors="coerce").fillna(0).astype(int),
        nodes=pd.to_numeric(events["nodes"], errors="coerce"),
    )
    rows = rows.dropna(subset=["size", "nodes"])
    rows = rows[rows["size"] > 0]
    ok = rows["status"].astype(str) == "ok"
    rows.loc[~ok, "seconds"] = float("nan")
    median = rows.groupby(["event", "size"])["seconds"].transform("median")
    rows.loc[rows["seconds"] < _FAILED_SHARE * median, "seconds"] = float("nan")
    topo = rows["topo"] if "topo" in rows.columns else rows["topology"]
    # Seed topology names use '-' ("kary-2"); ours use ':'.
    topo = topo.fillna("").astype(str)
    topo = topo.where(topo != "", rows["topology"].astype(str))
    return rows.assign(topo=topo.str.replace("-", ":", n=1), size=rows["size"].astype("int64"))


def _cell(rows: pd.DataFrame, wall: float | None) -> ObservedCell | None:
    nodes, topo = int(rows["nodes"].iloc[0]), str(rows["topo"].iloc[0])
    try:
        build_tree(topo, nodes)
    except Exception:  # history may name designs this kary cannot build
        return None
    events = rows["event"].astype(str)
    strategy_col = rows["strategy"] if "strategy" in rows.columns else pd.Series("", rows.index)
    strategies = tuple(s for s in STRATEGIES if (strategy_col.astype(str) == s).any())
    if not strategies:
        return None
    sizes = tuple(sorted({int(size) for size in rows["size"]}))
    # What the blobs held (kary parse labels flux-distribute's `zeros`): it decides which terms
    # the cell can inform (structure.cell_steps).
    blob = _first(rows, "blob") or DEFAULT_BLOB
    cell = Cell(nodes, topo, int(rows["iteration"].iloc[0]), sizes, strategies, blob=blob)
    timed = rows.dropna(subset=["seconds"])
    seconds = {
        (str(event), int(size)): float(value)
        for event, size, value in zip(timed["event"], timed["size"], timed["seconds"], strict=True)
    }
    observed = ObservedCell(
        cell,
        verify=bool(events.str.startswith(VERIFY_PREFIX).any()),
        generate=bool((events == GENERATE_BLOB).any()),
        seconds=seconds,
        wall=None,
    )
    # A wall time explains the overhead only when every step's time is known.
    complete = all(
        step.event is None or (step.event, step.size) in seconds for step in observed.steps()
    )
    if wall is not None and complete:
        return ObservedCell(cell, observed.verify, observed.generate, seconds, wall)
    return observed


def _walls(runs: pd.DataFrame) -> dict[tuple[str, int, str], float]:
    """(uid, iteration, blob) -> seconds from run.json's started to finished, for succeeded
    cells (a cell of each blob kind shares its uid and iteration with the other's)."""
    if not len(runs) or not {"started", "finished", "uid", "iteration"} <= set(runs.columns):
        return {}
    walls = {}
    for row in runs.itertuples(index=False):
        state = str(getattr(row, "state", "succeeded"))
        try:
            started = datetime.fromisoformat(str(row.started))
            finished = datetime.fromisoformat(str(row.finished))
            blob = getattr(row, "blob", "")
            blob = DEFAULT_BLOB if pd.isna(blob) or not blob else str(blob)
            key = (str(row.uid), int(str(row.iteration)), blob)
        except (TypeError, ValueError):
            continue
        seconds = (finished - started).total_seconds()
        if state == "succeeded" and seconds > 0:
            walls[key] = seconds
    return walls


def _first(frame: pd.DataFrame, column: str) -> str:
    if column not in frame.columns:
        return ""
    values = [str(v) for v in frame[column].dropna() if str(v).strip()]
    return values[0] if values else ""


def _environment(events: pd.DataFrame, runs: pd.DataFrame, name: str) -> Environment:
    """Where the sweep ran, from what kary recorded; flux-distribute's CSVs record nothing
    (flux-distribute ran every sweep under the Flux Operator: kubernetes, machines unknown)."""
    backend = _first(runs, "backend") or _first(events, "backend")
    if backend == "flux":
        place = _first(runs, "place") or TEST_INSTANCE
        if place == ALLOCATION:
            return Environment("flux", ALLOCATION)
        host = (_first(runs, "cluster") or _first(events, "cluster")).removeprefix("flux:")
        if not host:
            return Environment("flux", None, name)
        # A box's timings follow its links: its history informs box plans only.
        return Environment("flux", f"{BOX if place == BOX else TEST_INSTANCE} on {host}")
    if backend == "local":
        return Environment("local", "emulator")
    machine = _first(runs, "instance_type")
    return Environment(backend or "kubernetes", machine or None, None if machine else name)
