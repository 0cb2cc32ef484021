"""Held-out check of the time model on local real-Flux sweeps: fit on small N, predict big N.

    .venv/bin/python benchmarks/model_holdout.py              # the stored sweeps
    .venv/bin/python benchmarks/model_holdout.py --sweeps /work/data13 --fit-max 16
    .venv/bin/python benchmarks/model_holdout.py --keep /work/data13   # refresh the stored copy

The sweeps are benchmarks/model_sweeps.py's (`parsed-N` folders, one per node
count, with its load.log).  Every sweep with N <= --fit-max is history; each
larger one is predicted from that history alone, as `kary plan --history`
would (same environment matching, same interval), and compared with the sum
of its cells' wall times from run.json.  Printed per held-out sweep:
predicted (low - high), actual, whether actual fell inside the 80% interval,
what the plan had to extrapolate, and the machine's load average while the
sweep ran (this 2-core machine is shared: other work slows a sweep, and the
model cannot know how much).  Then the same for every sweep left out in turn
(`kary model check` over all of them).

--keep copies the parsed tables (events, runs, parse.json) and the load
samples of each sweep under benchmarks/results/model-sweeps/, small enough to
keep in the repository.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import pandas as pd  # noqa: E402

from experiments.estimate.history import Sweep, load_sweep  # noqa: E402
from experiments.estimate.model_check import (  # noqa: E402
    CheckRow,
    check_sweeps,
    predict_sweep,
    summary,
)

STORED = REPO / "benchmarks" / "results" / "model-sweeps"
KEPT_FILES = ("topologies-events.csv", "runs.csv", "parse.json")


def _nodes(folder: Path) -> int:
    return int(folder.name.removeprefix("parsed-"))


def _sweep_dirs(root: Path) -> list[Path]:
    dirs = [d for d in root.glob("parsed-*") if d.name.removeprefix("parsed-").isdigit()]
    return sorted(dirs, key=_nodes)


def _load_during(folder: Path, loads: pd.DataFrame) -> str:
    """The 1-minute load average's range while the sweep's cells ran."""
    runs = pd.read_csv(folder / "runs.csv")
    started = [datetime.fromisoformat(s).timestamp() for s in runs["started"].dropna()]
    finished = [datetime.fromisoformat(s).timestamp() for s in runs["finished"].dropna()]
    if not len(loads) or not started:
        return "?"
    during = loads[(loads["time"] >= min(started)) & (loads["time"] <= max(finished))]
    if not len(during):
        return "?"
    return f"{during['load1'].min():.1f}-{during['load1'].max():.1f}"


def _read_loads(root: Path) -> pd.DataFrame:
    path = root / "load.log"
    if not path.is_file():
        return pd.DataFrame(columns=["time", "load1", "load5", "load15"])
    return pd.read_csv(path, sep=" ", names=["time", "load1", "load5", "load15"])


def _row(row: CheckRow, load: str) -> str:
    predicted = f"{row.predicted:.0f} s ({row.low:.0f} - {row.high:.0f})"
    return (
        f"{Path(row.sweep).name:<11} {row.cells:>5}  {predicted:<22} {row.actual:>6.0f} s  "
        f"{row.error:>+5.0%}  {'yes' if row.inside else 'NO':<6} x{row.width:<5.2f} {load:<9} "
        + "; ".join(row.extrapolated)
    )


HEADER = (
    f"{'sweep':<11} {'cells':>5}  {'predicted (low - high)':<22} {'actual':>8}  "
    f"{'error':>5}  {'inside':<6} {'width':<6} {'load':<9} extrapolated"
)


def keep(root: Path) -> None:
    """Copy the small parsed tables and the load samples into the repository."""
    STORED.mkdir(parents=True, exist_ok=True)
    for folder in _sweep_dirs(root):
        target = STORED / folder.name
        target.mkdir(exist_ok=True)
        for name in KEPT_FILES:
            shutil.copyfile(folder / name, target / name)
    if (root / "load.log").is_file():
        shutil.copyfile(root / "load.log", STORED / "load.log")
    print(f"kept {len(_sweep_dirs(root))} sweeps in {STORED}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sweeps", type=Path, default=STORED, help="folder of parsed-N sweeps")
    parser.add_argument("--fit-max", type=int, default=16, help="history: sweeps with N <= this")
    parser.add_argument("--keep", type=Path, help="copy this folder's sweeps into the repo")
    args = parser.parse_args(argv)
    if args.keep:
        keep(args.keep)
        return 0
    dirs = _sweep_dirs(args.sweeps)
    if not dirs:
        print(f"no parsed-N sweeps in {args.sweeps}", file=sys.stderr)
        return 2
    loads = _read_loads(args.sweeps)
    sweeps: dict[Path, Sweep] = {d: load_sweep(d) for d in dirs}
    history = [s for d, s in sweeps.items() if _nodes(d) <= args.fit_max]
    held = [(d, s) for d, s in sweeps.items() if _nodes(d) > args.fit_max]
    fitted_on = ", ".join(str(_nodes(d)) for d in dirs if _nodes(d) <= args.fit_max)
    print(f"fit on N = {fitted_on}; predicted, not seen by the fit:")
    print(HEADER)
    for folder, sweep in held:
        print(_row(predict_sweep(sweep, history), _load_during(folder, loads)))
    print("\nevery sweep left out in turn (kary model check):")
    print(HEADER)
    rows = check_sweeps(list(sweeps.values()))
    for folder, row in zip(dirs, rows, strict=True):
        print(_row(row, _load_during(folder, loads)))
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
