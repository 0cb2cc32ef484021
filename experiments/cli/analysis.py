"""`kary parse` and `kary compare`: thin commands over the `analysis` package.

`analysis` (pandas, matplotlib) is imported inside the commands, so that every other
kary command starts without paying for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from experiments.cli.only_option import Only
from experiments.errors import UserError
from experiments.files import write_atomic

if TYPE_CHECKING:
    from analysis.tree import ParseResult

__all__ = ["register"]


def _count(n: int, noun: str) -> str:
    """`1 step`, `2 steps`."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _parse_line(result: ParseResult, out: Path) -> str:
    """`parsed 1 of 2 logs in 2 cells: 1 step (0 failed); ...`: what gave rows, of what
    was found (a skipped log is found, not parsed)."""
    meta = result.meta
    logs = _count(result.logs, "log")
    if result.logs_parsed != result.logs:
        logs = f"{result.logs_parsed} of {logs}"
    line = (
        f"parsed {logs} in {_count(result.cells, 'cell')}: {_count(meta['steps'], 'step')} "
        f"({meta['steps_failed']} failed"
        + (f", {meta['steps_void']} void" if meta.get("steps_void") else "")
        + ")"
    )
    if meta["pings"]:
        line += f", {_count(meta['pings'], 'ping')} ({meta['pings_failed']} failed)"
    unsucceeded = meta.get("cells_unsucceeded") or {}
    if unsucceeded:
        states = ", ".join(f"{n} {state}" for state, n in unsucceeded.items())
        total = sum(unsucceeded.values())
        them = "it" if total == 1 else "them"
        line += f"; {_count(total, 'cell')} not succeeded ({states}): no timing from {them}"
    skipped, partial = len(result.skipped), len(result.partial)
    if skipped or partial:
        line += f"; {_count(skipped, 'file')} skipped, {partial} partly parsed (see stderr)"
    return f"{line}; wrote {out}"


def register(app: typer.Typer) -> None:
    @app.command("parse", short_help="Raw tree to tables, statistics, plots and report.")
    def parse_command(
        data: Path = typer.Option(Path("data/raw"), "--data", help="Raw tree to read."),
        out: Path = typer.Option(Path("data/parsed"), "--out", help="Parsed directory to write."),
        no_plots: bool = typer.Option(
            False, "--no-plots", help="Write the tables only (no plots, no report)."
        ),
        strict: bool = typer.Option(
            False, "--strict", help="Exit 1 when any file was skipped or only partly parsed."
        ),
        only: Only = None,
    ) -> None:
        """Parse a raw tree into tables, a summary, plots and report.html; problems go to stderr.

        Example:

        \b
            kary parse --data data/raw --out data/parsed
            kary parse --data data/raw --out data/parsed-30 --only nodes=30
        """
        from analysis import parse

        result = parse(data, out, plots=not no_plots, only=only)
        for problem in result.problems:
            typer.echo(f"kary parse: {problem}", err=True)
        typer.echo(_parse_line(result, out))
        raise typer.Exit(result.exit_code(strict))

    @app.command("compare", short_help="Two parsed trees: what got slower or faster.")
    def compare_command(
        before: Path = typer.Argument(..., help="Parsed directory A (the baseline)."),
        after: Path = typer.Argument(..., help="Parsed directory B."),
        factor: float = typer.Option(
            1.10, "--factor", help="Mark ratios of medians beyond this factor (either way)."
        ),
        only_changed: bool = typer.Option(
            False, "--only-changed", help="Show only the marked rows."
        ),
        csv: Path | None = typer.Option(None, "--csv", help="Also write the table as CSV."),
        allow_mixed: bool = typer.Option(
            False,
            "--allow-mixed",
            help="Compare steps that ran in different settings (backend, place, links, "
            "blob, knobs) anyway; each such row is labelled.",
        ),
    ) -> None:
        """Compare two parsed trees: ratio of medians and a Mann-Whitney test per step.

        A step is slower (+) or faster (-) only when the ratio of medians is beyond
        the factor AND the Mann-Whitney U test (two-sided) gives p < 0.05; ~ beyond
        the factor but p >= 0.05; ? unsure: fewer than 3 runs on a side, or too few
        for p < 0.05 to be possible (3 vs 3 gives at best p = 0.1); ! fails in B
        and never in A.

        A step is compared only with itself run in the same setting: backend, place,
        links, blob kind, Flux knobs. Two trees with no step in common, or whose
        common steps differ in setting (real Flux against the emulator, a box at
        200Mbit against one at 100Mbit), are refused unless --allow-mixed.

        Exit status 0: nothing got slower. 1: something got slower (+) or newly
        fails (!). 2: bad input (not a parsed directory, a bad --factor, nothing
        in common, or settings that differ).

        Example:

        \b
            kary compare data/parsed-before data/parsed --factor 1.10
        """
        from analysis import compare_parsed, format_comparison, load_parsed

        if not factor > 1:
            raise UserError(f"invalid --factor {factor}: must be greater than 1, e.g. 1.10")
        comparison = compare_parsed(
            load_parsed(before), load_parsed(after), factor, allow_mixed=allow_mixed
        )
        if csv is not None:
            write_atomic(csv, comparison.table.to_csv(index=False))
        typer.echo(format_comparison(comparison, only_changed=only_changed), nl=False)
        raise typer.Exit(comparison.exit_code)
