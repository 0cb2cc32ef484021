"""`parse_tree`: a raw tree in, a parsed directory out, problems listed, the raw tree untouched.

Damaged input never stops a parse: each file that was skipped or only partly
read is reported as a `Problem` with its reason, and every good row is kept.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analysis.read.cell import CellResult
from analysis.read.records import Problem
from analysis.read.walk import CellDir, find_cells
from analysis.read.workers import can_fork, usable_cores
from analysis.tables.rows import overlays_of
from analysis.tree_slices import start_slices
from experiments.errors import UserError
from experiments.formats.cell_layout import network_of_path
from experiments.formats.events import topology_order_key
from experiments.formats.parsed import PARSED_FORMAT, write_parsed_files
from experiments.formats.race_state import keep_race
from experiments.model.cell_filter import CellFilter
from experiments.version import __version__

if TYPE_CHECKING:
    from analysis.plots.figures import PendingPlots
    from analysis.plots.process import PlotProcess
    from analysis.tables.parsed_dir import Parsed
    from analysis.tables.parsed_rows import ParsedRows

__all__ = ["ParseResult", "parse_tree", "read_tree"]

_KIND_ORDER = {"skipped": 0, "partial": 1, "warning": 2, "ignored": 3}
_CI_METHOD = (
    "distribution-free order-statistic interval of the median (binomial); "
    "{level:.0%} when n >= 6, else [min, max] with its exact coverage in ci_coverage; "
    "empty when n < 3"
)


@dataclass
class ParseResult:
    """What `parse_tree` read and wrote, and what was wrong with the input."""

    rows: ParsedRows
    problems: list[Problem]
    cells: int
    logs: int  # found: the cells holding a log
    logs_parsed: int = 0  # of those, the logs that gave rows (the rest were skipped)
    written: list[Path] = field(default_factory=list)

    @cached_property
    def parsed(self) -> Parsed:
        """The tables as DataFrames (pandas is imported on first use)."""
        from analysis.tables.parsed_dir import parsed_of_rows

        return parsed_of_rows(self.rows)

    @property
    def meta(self) -> dict[str, Any]:
        """parse.json: format, counts and problems."""
        return self.rows.meta

    @property
    def skipped(self) -> list[Problem]:
        return [p for p in self.problems if p.kind == "skipped"]

    @property
    def partial(self) -> list[Problem]:
        return [p for p in self.problems if p.kind == "partial"]

    def exit_code(self, strict: bool = False) -> int:
        """0, or 1 under strict when any file was skipped or only partly parsed."""
        return 1 if strict and (self.skipped or self.partial) else 0


def read_tree(
    data_dir: Path, jobs: int | None = None, only: CellFilter | None = None
) -> tuple[Parsed, list[Problem], int, int]:
    """Parse a raw tree in memory: (tables, problems, cells found, logs found). Writes nothing.

    A large tree's logs are parsed by `jobs` forked processes (default: one
    per usable core).  `only` keeps the cells it selects (--only).
    """
    from analysis.tables.parsed_dir import parsed_of_rows

    tree = _read(data_dir, jobs, only)
    return parsed_of_rows(tree.rows), tree.problems, tree.cells, tree.logs


@dataclass
class _Tree:
    rows: ParsedRows
    problems: list[Problem]
    cells: int
    logs: int
    logs_parsed: int


def _read(data_dir: Path, jobs: int | None, only: CellFilter | None) -> _Tree:
    data_dir = Path(data_dir)
    if data_dir.exists() and not data_dir.is_dir():
        raise UserError(f"--data {data_dir} is a file: name the raw tree's folder")
    if not data_dir.is_dir():
        raise UserError(f"--data {data_dir}: no such directory")
    unreadable: list[tuple[str, str]] = []
    cells, strays = find_cells(data_dir, unreadable)
    if not cells:
        raise UserError(
            f"--data {data_dir}: no cells found (no topology-experiment.out or run.json below it)"
        )
    # The tables' order, as far as the paths tell; the files may still correct it.
    cells.sort(key=_path_order)
    pending = start_slices(cells, usable_cores() if jobs is None else jobs)
    # numpy is imported while the workers parse (see analysis.tree_slices).
    from analysis.tables.group_stats import CI_LEVEL
    from analysis.tables.parsed_rows import ParsedRows, take_cells

    slices = pending.results()
    found = [result for part in slices for result in part.results]
    results = sorted(found, key=_cell_order)
    if only is not None:
        results = _selected(results, only, data_dir)
    _warn_duplicate_cells(results)
    in_order = len(results) == len(found) and all(
        a is b for a, b in zip(results, found, strict=True)
    )
    if in_order:
        rows = ParsedRows(
            [part.rows for part in slices], events_texts=[s.events_csv for s in slices]
        )
    else:
        position = {id(result): i for i, result in enumerate(found)}
        order = [position[id(result)] for result in results]
        rows = ParsedRows([take_cells([part.rows for part in slices], order)])
    problems = [p for r in results for p in r.problems]
    problems += [Problem(stray, "ignored", "not a kary file") for stray in strays]
    problems += [Problem(d, "skipped", f"unreadable directory ({why})") for d, why in unreadable]
    problems.sort(key=lambda p: (_KIND_ORDER[p.kind], p.path))
    logs = sum(1 for r in results if r.cell.has_log)
    logs_parsed = sum(1 for r in results if r.cell.has_log and r.measured)
    rows.overlays = overlays_of(results)
    rows.meta = {
        "format": PARSED_FORMAT,
        "kary_version": __version__,
        # Absolute, so the report names the raw tree wherever it was parsed from.
        "data": str(data_dir.resolve()),
        "cells": len(results),
        "logs": logs,
        "steps": rows.steps,
        "steps_failed": rows.steps_failed,
        "pings": rows.pings,
        "pings_failed": rows.pings_failed,
        "ci_method": _CI_METHOD.format(level=CI_LEVEL),
        "problems": [p._asdict() for p in problems],
    }
    if rows.steps_void:  # only then: a tree without void steps parses as it did
        rows.meta["steps_void"] = rows.steps_void
    unsucceeded = _unsucceeded_cells(results)
    if unsucceeded:  # only then, as steps_void: their steps are void (analysis.read.cell)
        rows.meta["cells_unsucceeded"] = unsucceeded
    if only is not None:
        rows.meta["only"] = only.text  # these tables hold only the cells it selects
    return _Tree(rows, problems, len(results), logs, logs_parsed)


def parse_tree(
    data_dir: Path, out_dir: Path, plots: bool = True, only: CellFilter | None = None
) -> ParseResult:
    """Parse the raw tree at data_dir into out_dir: tables, overlays, parse.json, and with
    `plots` the PNGs in plots/ and report.html.  `only` keeps the cells it selects."""
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    _check_dirs(data_dir, out_dir)
    plotter = None
    if plots and can_fork():
        from analysis.plots.process import PlotProcess

        # Forked now, so it imports matplotlib while this process reads the tree.
        plotter = PlotProcess(out_dir / "plots")
    try:
        return _parse(data_dir, out_dir, plots, only, plotter)
    finally:
        if plotter is not None:
            plotter.stop()


def _parse(
    data_dir: Path,
    out_dir: Path,
    plots: bool,
    only: CellFilter | None,
    plotter: PlotProcess | None,
) -> ParseResult:
    tree = _read(data_dir, None, only)
    result = ParseResult(tree.rows, tree.problems, tree.cells, tree.logs, tree.logs_parsed)
    # A race's state goes beside the tables, for the report's race section.
    race = keep_race(data_dir, out_dir)
    if not plots:
        result.written = _write(out_dir, result) + ([race] if race else [])
        return result
    # The plots are drawn in forked processes while this one writes the tables
    # and prepares the report, which then waits for them.
    if plotter is not None:
        plotter.draw(result.parsed)
        pending: PlotProcess | PendingPlots = plotter
    else:
        from analysis.plots.figures import start_plots  # matplotlib is slow to import

        pending = start_plots(result.parsed, out_dir / "plots")
    try:
        written = _write(out_dir, result)
        from analysis.page.builder import REPORT_NAME, write_report

        report = write_report([out_dir], out_dir / REPORT_NAME, pending.wait)
    except BaseException:
        # No plot worker outlives the parse (the plot process is stopped by the
        # caller), and this error, not a plot's, is the one raised.
        if plotter is None:
            with contextlib.suppress(Exception):
                pending.wait()
        raise
    written += pending.wait()
    written += [race] if race else []
    written.append(report)
    result.written = written
    return result


def _write(out_dir: Path, result: ParseResult) -> list[Path]:
    """The parsed directory's files, from the rows (no pandas) unless a value needs
    pandas' own CSV writer (a carriage return)."""
    rows = result.rows
    texts = rows.texts()
    if any(text is None for text in texts.values()):
        from analysis.tables.parsed_dir import write_parsed

        return write_parsed(out_dir, result.parsed)
    return write_parsed_files(out_dir, texts, rows.overlays, rows.meta)  # type: ignore[arg-type]


def _check_dirs(data_dir: Path, out_dir: Path) -> None:
    data, out = data_dir.resolve(), out_dir.resolve()
    if out == data or data in out.parents:
        raise UserError(f"--out {out_dir} is inside --data {data_dir}: the raw tree is read-only")
    plots = out / "plots"
    if data == plots or plots in data.parents:
        raise UserError(f"--data {data_dir} is inside {plots}, which parse rewrites")
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out_dir} exists and is not a directory")


def _unsucceeded_cells(results: list[CellResult]) -> dict[str, int]:
    """{state: cells} of the cells whose run.json says other than succeeded, by state."""
    states = Counter(
        r.record.state for r in results if r.record is not None and r.record.state != "succeeded"
    )
    return dict(sorted(states.items()))


def _selected(results: list[CellResult], only: CellFilter, data_dir: Path) -> list[CellResult]:
    """The cells `only` selects; one it cannot identify cannot match."""
    kept = [
        r
        for r in results
        if r.identified and only.matches(r.nodes, r.topo, r.iteration, r.knobs, blob=r.blob)  # type: ignore[arg-type]
    ]
    if not kept:
        raise UserError(
            f"--only {only.text} selects none of the {len(results)} cells in {data_dir}"
        )
    return kept


def _warn_duplicate_cells(results: list[CellResult]) -> None:
    """Two folders holding the same run (backend, cluster, place, links, blob, nodes,
    topology, knobs, iteration) would count one iteration twice."""
    first: dict[tuple[object, ...], str] = {}
    # A folder whose path spells its identity is the original; an odd name the copy.
    by_path = sorted(
        results, key=lambda r: (r.cell.topo is None or r.cell.nodes is None, r.cell.rel)
    )
    for result in by_path:
        if not result.identified or not result.measured:
            continue
        record = result.record
        extra = (record.model_extra or {}) if record else {}
        key = (
            record.backend if record else None,
            record.cluster if record else None,
            str(extra.get("place")),
            # Cells on other links are other cells (cell_layout's network directory).
            str(network_of_path(result.cell.rel.split("/"))),
            result.blob,  # zero blobs are other cells (cell_layout's blob directory)
            result.nodes,
            result.topo,
            result.knobs,
            result.iteration,
        )
        if key in first:
            result.note(
                "warning",
                f"same nodes, topology and iteration as {first[key]}: both kept "
                "(a copied folder counts twice)",
            )
        else:
            first[key] = result.cell.rel


def _path_order(cell: CellDir) -> tuple[object, ...]:
    """`_cell_order` as the directory names tell it."""
    return (
        cell.nodes if cell.nodes is not None else 1 << 62,
        topology_order_key(cell.topo or ""),
        cell.iteration if cell.iteration is not None else 1 << 62,
        cell.rel,
    )


def _cell_order(result: CellResult) -> tuple[object, ...]:
    return (
        result.nodes if result.nodes is not None else 1 << 62,
        topology_order_key(result.topo or ""),
        result.iteration if result.iteration is not None else 1 << 62,
        result.cell.rel,
    )
