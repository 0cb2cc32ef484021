"""Re-run the README's figures that are cheap to make, and check each still reads as the
README says (`make figures`).

    .venv/bin/python benchmarks/figures.py            # the deterministic ones (seconds)
    .venv/bin/python benchmarks/figures.py --timed    # and the demo's wall time (real Flux)

Each figure names the command that makes it, the machine it came from, and the
README text it must reproduce.  Deterministic figures (a plan from files, tables
from kept samples, fits of stored sweeps) must come out byte for byte; a timed
one must fall within its stated noise, and says "unsure" when the machine was
too busy for the comparison to mean anything (this 2-core machine is shared).
Exit 1 when any figure does not reproduce.  tests/test_figures.py checks that
every excerpt below is in the README, so the two cannot drift apart silently.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("KARY_SHARED", REPO.parent / "shared"))
sys.path.insert(0, str(REPO / "benchmarks"))

from machine_load import CpuMeter  # noqa: E402

PYTHON = sys.executable
KARY = [PYTHON, "-c", "from experiments.cli import main; main()"]


@dataclass(frozen=True)
class Figure:
    name: str
    command: list[str]
    machine: str
    # README text the command's output must contain, verbatim.
    excerpts: tuple[str, ...] = ()
    # A timed figure: the README's seconds, the noise it allows (a factor), and the
    # share of the cores other work may keep busy for the comparison to count.
    seconds: float | None = None
    factor: float = 1.5
    max_busy: float = 0.25


FIGURES = [
    Figure(
        "plan-layouts",
        [
            *KARY, "plan", "--cluster", "clusters/eks-30.yaml", "--exact-nodes", "30",
            "--min-size", "1", "--max-size", "10", "--iters", "1", "--history",
            str(SHARED / "reference/flux-distribute/parsed-eks-exact-6"),
        ],
        "any (a plan is made from files: the seed's history, clusters/prices.yaml, the "
        "levers measured on a 2-core VM, flux-core 0.88)",
        (
            "  per-cell         4 h 39 min (3 h 7 min - 6 h 58 min)  $93.76 ($62.95 - $140.36)",
            " *nested           4 h 3 min (2 h 43 min - 6 h 3 min)  $81.62 ($54.93 - $121.92)",
            "  nested + --mmap  3 h 53 min (1 h 44 min - 8 h 29 min)  $78.13 ($35.05 - $170.72)",
        ),
    ),
    Figure(
        "plan-spot",
        [
            *KARY, "plan", "--cluster", "clusters/eks-30-spot.yaml", "--exact-nodes", "30",
            "--min-size", "1", "--max-size", "10", "--iters", "1", "--blob", "random",
            "--layout", "nested", "--history",
            str(SHARED / "reference/flux-distribute/parsed-eks-exact-6"),
        ],
        "any (a plan is made from files: the seed's history, clusters/prices.yaml's dated "
        "spot and on-demand prices, the levers measured on a 2-core VM, flux-core 0.88)",
        (
            "capacity: spot $47.46 ($31.87 - $136.87) at $10.18/h ($19.60/h at the high end) "
            "· on demand $91.43 ($61.38 - $136.87) at $19.60/h",
            "  per-cell         4 h 39 min (3 h 7 min - 6 h 58 min)  spot $47.46 ($31.87 - "
            "$136.87)  on demand $91.43 ($61.38 - $136.87)",
            " *nested           4 h 3 min (2 h 43 min - 6 h 3 min)  spot $41.32 ($27.81 - "
            "$118.89)  on demand $79.59 ($53.56 - $118.89)",
            "  nested + --mmap  3 h 53 min (1 h 44 min - 8 h 29 min)  spot $39.55 ($17.74 - "
            "$166.47)  on demand $76.19 ($34.17 - $166.47)",
        ),
    ),
    Figure(
        "emulator-fidelity",
        [
            PYTHON, "benchmarks/fidelity.py", "--from-json",
            "benchmarks/results/fidelity-flux-0.88-2cores.json",
        ],
        "2-core VM, flux-core 0.88 (the samples kept in benchmarks/results/)",
        (
            "cells within x1.5: 12/16; same fastest topology: 0 of 0 where real Flux has one "
            "(4 without a winner); wall time 1857 s",
        ),
    ),
    Figure(
        "emulator-fidelity-held-out",
        [
            PYTHON, "benchmarks/fidelity.py", "--from-json",
            "benchmarks/results/fidelity-heldout-n12-128M-flux-0.88-2cores.json",
        ],
        "2-core VM, nothing else running, flux-core 0.88 (the samples kept in benchmarks/results/)",
        (
            "cells within x1.5: 4/4; same fastest topology: 0 of 0 where real Flux has one "
            "(1 without a winner); wall time 356 s",
        ),
    ),
    Figure(
        "emulator-fidelity-mis-calibrated",
        [
            PYTHON, "benchmarks/fidelity.py", "--from-json",
            "benchmarks/results/fidelity-miscalibrated-x4-n12-128M-flux-0.88-2cores.json",
        ],
        "2-core VM, nothing else running, flux-core 0.88 (the samples kept in benchmarks/results/)",
        (
            "cells within x1.5: 0/2; same fastest topology: 0 of 0 where real Flux has one "
            "(1 without a winner); wall time 123 s",
        ),
    ),
    Figure(
        "box-topologies-n16",
        [PYTHON, "benchmarks/box_topologies.py", "--from-json",
         "benchmarks/results/box-topologies-n16.json"],
        "2-core VM, root, flux-core 0.88 in the box (the samples kept in benchmarks/results/)",
        ("17.90-18.22", "12.96-13.43", "168.61-168.66", "84.38-84.42"),
    ),
    Figure(
        "box-topologies-n8",
        [PYTHON, "benchmarks/box_topologies.py", "--from-json",
         "benchmarks/results/box-topologies-n8.json"],
        "2-core VM, root, flux-core 0.88 in the box (the samples kept in benchmarks/results/)",
        ("15.33", "25.41", "47.40", "78.70", "39.40"),
    ),
    Figure(
        "box-model-holdout",
        [PYTHON, "benchmarks/box_model_holdout.py"],
        "2-core VM, flux-core 0.88 in the box (the sweeps kept in benchmarks/results/box-sweeps/)",
        ("12 of 32", "8 of 32"),
    ),
    Figure(
        "box-topologies-n12",
        [PYTHON, "benchmarks/box_topologies.py", "--from-json",
         "benchmarks/results/box-topologies-n12.json"],
        "2-core VM, root, flux-core 0.88 in the box (the samples kept in benchmarks/results/)",
        ("11.60", "18.82", "34.42", "82.46"),
    ),
    Figure(
        "box-topologies-n20",
        [PYTHON, "benchmarks/box_topologies.py", "--from-json",
         "benchmarks/results/box-topologies-n20.json"],
        "2-core VM, root, flux-core 0.88 in the box (the samples kept in benchmarks/results/)",
        ("14.52", "14.30", "26.55", "106.87", "0.686"),
    ),
    Figure(
        "box-model-holdout-v2",
        [PYTHON, "benchmarks/box_model_holdout.py", "--protocol",
         "benchmarks/box_model_protocol_v2.json"],
        "2-core VM, flux-core 0.88 in the box (the sweeps kept in benchmarks/results/box-sweeps/)",
        ("x0.84-x1.08", "25 of 32 predicted runs inside", "(78%): pass"),
    ),
    Figure(
        "local-model-protocol",
        [PYTHON, "benchmarks/model_holdout.py", "--protocol",
         "benchmarks/model_holdout_protocol.json"],
        "2-core VM, flux-core 0.88 test instances, nothing else running (pass-3, kept in "
        "benchmarks/results/model-sweeps/)",
        ("2 of 3 predicted sweeps inside their 80% interval: PASS",),
    ),
    Figure(
        "local-model-holdout",
        [PYTHON, "benchmarks/model_holdout.py", "--sweeps",
         "benchmarks/results/model-sweeps/pass-1", "--sweeps",
         "benchmarks/results/model-sweeps/pass-2"],
        "2-core VM, flux-core 0.88 test instances, under other load (passes 1-2, kept in "
        "benchmarks/results/model-sweeps/)",
        ("10 of 12 sweeps inside their 80% interval",),
    ),
]  # fmt: skip

DEMO = Figure(
    "demo-wall-time",
    [*KARY, "run", "--exact-nodes", "30", "--topo", "kary:16", "--iters", "1", "--backend", "flux"],
    "an idle 2-core VM, flux-core 0.88 (`flux start --test-size=30`)",
    seconds=25.0,
    factor=1.5,
)


def _run(figure: Figure, cwd: Path) -> tuple[str, float]:
    started = time.monotonic()
    done = subprocess.run(
        figure.command, cwd=cwd, capture_output=True, text=True, timeout=1800, check=False
    )
    return done.stdout + done.stderr, time.monotonic() - started


def check(figure: Figure) -> tuple[bool | None, str]:
    """(True | False | None for unsure, what was seen)."""
    if figure.seconds is None:
        out, _ = _run(figure, REPO)
        missing = [e for e in figure.excerpts if e not in out]
        if missing:
            return False, f"missing: {missing[0]!r}"
        return True, f"{len(figure.excerpts)} excerpt(s) reproduced"
    with tempfile.TemporaryDirectory(prefix="kary-figure-") as scratch:
        meter = CpuMeter()
        command = [*figure.command, "--data-dir", str(Path(scratch) / "raw")]
        out, seconds = _run(Figure(figure.name, command, figure.machine), REPO)
        busy = meter.others()  # not the run's own work: what else used the cores
    if not re.search(r"\b1 succeeded, 0 failed", out):
        return False, f"the run did not succeed: {out.strip().splitlines()[-1:]}"
    low, high = figure.seconds / figure.factor, figure.seconds * figure.factor
    seen = (
        f"{seconds:.1f} s (README {figure.seconds:g} s, x{figure.factor:g}); "
        f"other work kept {busy:.0%} of the cores busy"
    )
    if busy > figure.max_busy:
        return None, f"{seen}: unsure, more than {figure.max_busy:.0%}"
    return low <= seconds <= high, seen


def shown(command: list[str]) -> str:
    """The command as a reader types it: `kary ...` or `python ...`."""
    if command[: len(KARY)] == KARY:
        return " ".join(["kary", *command[len(KARY) :]])
    return " ".join(["python", *command[1:]])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timed", action="store_true", help="also time the demo (real Flux)")
    args = parser.parse_args(argv)
    figures = FIGURES + ([DEMO] if args.timed else [])
    failed = 0
    print("| figure | result | what was seen | command | machine |")
    print("|---|---|---|---|---|")
    for figure in figures:
        ok, seen = check(figure)
        word = {True: "ok", False: "FAIL", None: "unsure"}[ok]
        failed += ok is False
        print(f"| {figure.name} | {word} | {seen} | `{shown(figure.command)}` | {figure.machine} |")
    verdict = ": FAIL" if failed else ""
    print(f"{len(figures) - failed} of {len(figures)} figures reproduce{verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
