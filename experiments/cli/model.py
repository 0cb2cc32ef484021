"""`kary model check`: does the time model predict sweeps it was not fitted on?

The estimate package (pandas, scipy) is imported inside the command, so that
every other kary command starts without paying for it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from experiments.errors import UserError

if TYPE_CHECKING:
    from experiments.estimate.model_check import CheckRow

__all__ = ["app"]

app = typer.Typer(
    short_help="Check the time model against history.",
    help="Check the time model against history.",
    no_args_is_help=True,
)


def _totals(values: list[str]) -> dict[str, float]:
    """`DIR=SECONDS` pairs: known wall times of whole sweeps."""
    totals = {}
    for value in values:
        folder, sep, seconds = value.rpartition("=")
        try:
            total = float(seconds)
        except ValueError:
            total = -1.0
        if not sep or not folder or total <= 0:
            raise UserError(f"invalid --total {value!r}: expected DIR=SECONDS, e.g. eks=9716")
        totals[folder] = total
    return totals


def _seconds(value: float) -> str:
    return f"{value:,.0f} s" if value >= 100 else f"{value:.1f} s"


def _table(rows: list[CheckRow]) -> list[str]:
    width = max(len(r.sweep) for r in rows)
    lines = [
        f"{'sweep':<{width}}  {'cells':>5}  {'compared':<8}  "
        f"{'predicted (low - high)':<32}  {'actual':>10}  {'error':>6}  inside  width"
    ]
    for r in rows:
        predicted = f"{_seconds(r.predicted)} ({_seconds(r.low)} - {_seconds(r.high)})"
        lines.append(
            f"{r.sweep:<{width}}  {r.cells:>5}  {r.compared:<8}  {predicted:<32}  "
            f"{_seconds(r.actual):>10}  {r.error:>+6.0%}  {'yes' if r.inside else 'NO':<6}  "
            f"x{r.width:.2f}"
        )
        lines += [f"{'':<{width}}    extrapolated: {text}" for text in r.extrapolated]
    return lines


@app.command("check", short_help="Leave each sweep out and predict it from the rest.")
def check(
    dirs: list[Path] = typer.Argument(
        ..., metavar="DIR...", help="Parsed directories, one sweep each (kary parse --out)."
    ),
    total: list[str] = typer.Option(
        [],
        "--total",
        metavar="DIR=SECONDS",
        help="Known wall time of a whole sweep whose run.json has none (repeatable).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the rows as JSON."),
) -> None:
    """Leave each sweep out, fit the time model on the others, and predict it.

    Per sweep: predicted (low - high) against actual, and whether the actual fell
    inside the 80% interval.  Compared are the cells' wall times where run.json
    recorded them, else a --total, else the sum of the timed steps.

    Example:

    \b
        kary model check ../shared/reference/flux-distribute/parsed-eks-exact-6 \\
            ../shared/reference/flux-distribute/parsed-gke-max-6 data/parsed
    """
    from experiments.estimate.model_check import check_sweeps, load_check_sweeps, summary

    rows = check_sweeps(load_check_sweeps(dirs, _totals(total)))
    if as_json:
        data = [
            {
                "sweep": r.sweep,
                "environment": r.environment,
                "cells": r.cells,
                "compared": r.compared,
                "predicted_seconds": round(r.predicted, 3),
                "low_seconds": round(r.low, 3),
                "high_seconds": round(r.high, 3),
                "actual_seconds": round(r.actual, 3),
                "inside": r.inside,
                "extrapolated": list(r.extrapolated),
                "trained_on_sweeps": r.trained_on,
            }
            for r in rows
        ]
        typer.echo(json.dumps({"rows": data, "summary": summary(rows)}, indent=2))
        return
    for line in _table(rows):
        typer.echo(line)
    typer.echo(summary(rows))
