"""Find the cells of a raw tree by walking it, whatever its depth from the root.

A cell is a directory holding any of the files a run leaves (the log,
`run.json`, `minicluster.yaml`, `entrypoint.sh`); its identity comes from the
`<nodes>/<topo>[/<knobs>]/<iteration>` directory names above it when they read
as such (flux-distribute's and kary's layout, experiments.formats.cell_layout), and is
completed or corrected from the files themselves later (see `analysis.read.cell`).
The sweep files a run keeps at `sweeps/<sha256>.yaml` are kary's too, not strays,
and so is a race's `race.json` at the root.
A billed sweep's smoke cells (`smoke/` at the root, or any folder holding the
`.kary-smoke` marker) are a check run before the study, not its data: the walk
passes over them, so a parse holds exactly the study's cells.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from experiments.formats.cell_layout import (
    LOG_NAME,
    MINICLUSTER_NAME,
    RECORD_NAME,
    SMOKE_DIR,
    SMOKE_MARKER,
    SWEEPS_DIR,
    Knobs,
    cell_of_path,
    knobs_of_path,
)
from experiments.formats.race_state import RACE_NAME

__all__ = ["CELL_FILES", "LOG_NAME", "RECORD_NAME", "CellDir", "find_cells"]

# Files a runner leaves in a cell; anything else there is a stray file.
CELL_FILES = frozenset({LOG_NAME, RECORD_NAME, MINICLUSTER_NAME, "entrypoint.sh"})


@dataclass(frozen=True)
class CellDir:
    """A cell directory and what its path says about it (None where it says nothing)."""

    dir: str  # the directory, as the walk joined it (a Path per cell was a third of the walk)
    rel: str  # path relative to the data directory, with '/' separators
    nodes: int | None
    topo: str | None
    iteration: int | None
    knobs: Knobs | None  # None: the path is not a cell's layout, so it says nothing of knobs
    has_log: bool
    has_record: bool

    @property
    def path(self) -> Path:
        return Path(self.dir)


def find_cells(
    data_dir: Path, unreadable: list[tuple[str, str]] | None = None
) -> tuple[list[CellDir], list[str]]:
    """Every cell directory under data_dir, and the stray files found on the way.

    Hidden files and directories (`.git`, temp files of atomic writes) are not
    data and are passed over silently. Symlinked directories are not followed,
    so a link loop cannot hang the walk. Directories that cannot be listed are
    appended to `unreadable` as (relative path, reason).  Cells come in walk
    order (directory names sorted).
    """
    cells: list[CellDir] = []
    strays: list[str] = []
    # os.scandir, not os.walk: the type of each entry comes with the listing,
    # and relative paths are built by joining names (os.path.relpath per
    # directory was a third of the walk of an 8,000-cell tree).
    pending = [(str(data_dir), "")]
    while pending:
        path, rel = pending.pop()
        try:
            with os.scandir(path) as listing:
                entries = [(e.name, e.is_dir(), e.is_symlink()) for e in listing]
        except OSError as err:
            if unreadable is not None:
                unreadable.append((rel or ".", err.strerror or type(err).__name__))
            continue
        if rel == SMOKE_DIR or any(name == SMOKE_MARKER for name, _, _ in entries):
            continue  # the smoke cells: never the study's rows, nor strays
        names = {name for name, is_dir, _ in entries if not is_dir and name[0] != "."}
        is_cell = not names.isdisjoint(CELL_FILES)
        if rel == SWEEPS_DIR:  # the sweep files runs kept
            names = {n for n in names if not n.endswith(".yaml")}
        if not rel:  # a race's state, at the root (`kary parse` keeps it for the report)
            names.discard(RACE_NAME)
        for name in sorted(names):
            if not is_cell or name not in CELL_FILES:
                strays.append(f"{rel}/{name}" if rel else name)
        if is_cell:
            cells.append(_cell(path, rel, names))
        subdirs = sorted(
            (name for name, is_dir, link in entries if is_dir and not link and name[0] != "."),
            reverse=True,  # popped last-in first-out: visited in sorted order
        )
        pending += [(f"{path}/{name}", f"{rel}/{name}" if rel else name) for name in subdirs]
    return cells, strays


def _cell(path: str, rel: str, names: set[str]) -> CellDir:
    parts = rel.split("/") if rel else []
    nodes, topo, iteration = cell_of_path(parts)
    laid_out = None not in (nodes, topo, iteration)
    return CellDir(
        dir=path,
        rel=rel,
        nodes=nodes,
        topo=topo,
        iteration=iteration,
        knobs=knobs_of_path(parts) if laid_out else None,
        has_log=LOG_NAME in names,
        has_record=RECORD_NAME in names,
    )
