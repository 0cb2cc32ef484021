"""`parse_tree`: a raw tree in, a parsed directory out, problems listed, the raw tree untouched.

Damaged input never stops a parse: each file that was skipped or only partly
read is reported as a `Problem` with its reason, and every good row is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from analysis.cells import CellResult, parse_cell
from analysis.forked import Forked, can_fork, usable_cores
from analysis.model import Problem, step_of
from analysis.output import PARSED_FORMAT, Parsed, write_parsed
from analysis.stats import CI_LEVEL
from analysis.tables import build_tables, summary_table
from analysis.walk import CellDir, find_cells
from experiments.errors import UserError
from experiments.formats.events import topology_order_key
from experiments.model.cell_filter import CellFilter
from experiments.version import __version__

__all__ = ["ParseResult", "parse_tree", "read_tree"]

_KIND_ORDER = {"skipped": 0, "partial": 1, "warning": 2, "ignored": 3}
_CI_METHOD = (
    "distribution-free order-statistic interval of the median (binomial); "
    f"{CI_LEVEL:.0%} when n >= 6, else [min, max] with its exact coverage in ci_coverage; "
    "empty when n < 3"
)


@dataclass
class ParseResult:
    """What `parse_tree` read and wrote, and what was wrong with the input."""

    parsed: Parsed
    problems: list[Problem]
    cells: int
    logs: int
    written: list[Path] = field(default_factory=list)

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

    A large tree's logs are parsed by `jobs` processes (default: one per usable
    core), this one and forked workers.  `only` keeps the cells it selects (--only).
    """
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise UserError(f"--data {data_dir}: no such directory")
    unreadable: list[tuple[str, str]] = []
    cells, strays = find_cells(data_dir, unreadable)
    if not cells:
        raise UserError(
            f"--data {data_dir}: no cells found (no topology-experiment.out or run.json below it)"
        )
    jobs = usable_cores() if jobs is None else jobs
    results = sorted(parse_cells(cells, jobs), key=_cell_order)
    if only is not None:
        results = _selected(results, only, data_dir)
        cells = [r.cell for r in results]
    _warn_duplicate_cells(results)
    events, ping, runs, overlays = build_tables(results)
    problems = [p for r in results for p in r.problems]
    problems += [Problem(stray, "ignored", "not a kary file") for stray in strays]
    problems += [Problem(d, "skipped", f"unreadable directory ({why})") for d, why in unreadable]
    problems.sort(key=lambda p: (_KIND_ORDER[p.kind], p.path))
    logs = sum(1 for c in cells if c.has_log)
    meta = {
        "format": PARSED_FORMAT,
        "kary_version": __version__,
        # Absolute, so the report names the raw tree wherever it was parsed from.
        "data": str(data_dir.resolve()),
        "cells": len(cells),
        "logs": logs,
        "steps": len(events),
        "steps_failed": int((events["status"] == "failed").sum()),
        "pings": len(ping),
        "pings_failed": int((ping["status"] == "failed").sum()),
        "ci_method": _CI_METHOD,
        "problems": [p._asdict() for p in problems],
    }
    if only is not None:
        meta["only"] = only.text  # these tables hold only the cells it selects
    parsed = Parsed(events, ping, runs, summary_table(events), overlays, meta)
    return parsed, problems, len(cells), logs


# Below this many cells per process, forking costs more than it saves.
CELLS_PER_JOB = 500


def parse_cells(cells: list[CellDir], jobs: int) -> list[CellResult]:
    """`parse_cell` of each cell, in order.

    With jobs > 1, enough cells and forking safe, the cells are split into
    `jobs` slices: this process parses the first while forked workers parse
    the others and send them back with their steps as columns (unpickling
    220,000 named tuples one by one took longer than parsing them).
    """
    jobs = min(jobs, len(cells) // CELLS_PER_JOB)
    if jobs < 2 or not can_fork():
        return [parse_cell(cell) for cell in cells]
    size = -(-len(cells) // jobs)
    slices = [cells[i : i + size] for i in range(0, len(cells), size)]
    workers = Forked([partial(_parse_packed, part) for part in slices[1:]], len(slices) - 1)
    results = [parse_cell(cell) for cell in slices[0]]
    for packed, columns in workers.results():
        for result, steps in zip(packed, columns, strict=True):
            result.steps = list(map(step_of, zip(*steps, strict=True)))
        results += packed
    return results


def _parse_packed(
    cells: list[CellDir],
) -> tuple[list[CellResult], list[tuple[tuple[object, ...], ...]]]:
    """A forked worker's part: the results without their steps, and each one's steps as columns."""
    results = [parse_cell(cell) for cell in cells]
    columns = [tuple(zip(*result.steps, strict=True)) for result in results]
    for result in results:
        result.steps = []
    return results, columns


def parse_tree(
    data_dir: Path, out_dir: Path, plots: bool = True, only: CellFilter | None = None
) -> ParseResult:
    """Parse the raw tree at data_dir into out_dir: tables, overlays, parse.json, and with
    `plots` the PNGs in plots/ and report.html.  `only` keeps the cells it selects."""
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    _check_dirs(data_dir, out_dir)
    parsed, problems, cells, logs = read_tree(data_dir, only=only)
    if not plots:
        written = write_parsed(out_dir, parsed)
        return ParseResult(parsed, problems, cells, logs, written)
    from analysis.plots import start_plots  # matplotlib is slow to import

    # The plots are drawn in forked processes while this one writes the tables
    # and prepares the report, which then waits for them.
    pending = start_plots(parsed, out_dir / "plots")
    try:
        written = write_parsed(out_dir, parsed)
        from analysis.report_page import REPORT_NAME, write_report

        report = write_report([out_dir], out_dir / REPORT_NAME, pending.wait)
    finally:
        drawn = pending.wait()
    written += drawn
    written.append(report)
    return ParseResult(parsed, problems, cells, logs, written)


def _check_dirs(data_dir: Path, out_dir: Path) -> None:
    data, out = data_dir.resolve(), out_dir.resolve()
    if out == data or data in out.parents:
        raise UserError(f"--out {out_dir} is inside --data {data_dir}: the raw tree is read-only")
    plots = out / "plots"
    if data == plots or plots in data.parents:
        raise UserError(f"--data {data_dir} is inside {plots}, which parse rewrites")
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out_dir} exists and is not a directory")


def _selected(results: list[CellResult], only: CellFilter, data_dir: Path) -> list[CellResult]:
    """The cells `only` selects; one it cannot identify cannot match."""
    kept = [
        r
        for r in results
        if r.identified and only.matches(r.nodes, r.topo, r.iteration, r.knobs)  # type: ignore[arg-type]
    ]
    if not kept:
        raise UserError(
            f"--only {only.text} selects none of the {len(results)} cells in {data_dir}"
        )
    return kept


def _warn_duplicate_cells(results: list[CellResult]) -> None:
    """Two folders holding the same run (backend, cluster, nodes, topology, iteration)
    would count one iteration twice."""
    first: dict[tuple[object, ...], str] = {}
    # A folder whose path spells its identity is the original; an odd name the copy.
    by_path = sorted(
        results, key=lambda r: (r.cell.topo is None or r.cell.nodes is None, r.cell.rel)
    )
    for result in by_path:
        if not result.identified or not (result.steps or result.pings):
            continue
        record = result.record
        key = (
            record.backend if record else None,
            record.cluster if record else None,
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


def _cell_order(result: CellResult) -> tuple[object, ...]:
    return (
        result.nodes if result.nodes is not None else 1 << 62,
        topology_order_key(result.topo or ""),
        result.iteration if result.iteration is not None else 1 << 62,
        result.cell.rel,
    )
