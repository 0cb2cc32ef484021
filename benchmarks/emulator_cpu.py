"""Does an emulated cell burn the CPU its costs say?  Measured, so it lives here, not
in a test: the CPU a cell's processes used (their resource usage, reaped by this
process) at x1 and at x33 of the reference costs, and the difference against what
the costs ask for.  A chain of 3 delivers 8 MiB to 2 ranks, so x33 asks
32 x 4.5 ms x 8 x 2 = 2.304 s more.  The rest of a cell's CPU (Python starting each
flux command) varies with the machine, so the figure is printed, never asserted.

    .venv/bin/python benchmarks/emulator_cpu.py            # ~15 s
    .venv/bin/python benchmarks/emulator_cpu.py --repeat 3
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments.backends.emulator.backend import EmulatorBackend
from experiments.emulator.cpu import DEFAULT_COSTS, MIB
from experiments.model.plan import Cell
from experiments.model.render import render_cell

NODES, BLOB_MIB, SCALES = 3, 8, (1.0, 33.0)


def _children_cpu_s() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def asked_extra_s() -> float:
    """The CPU x33 asks for beyond x1: each of NODES-1 ranks costs relay + 2 x serve +
    client per MiB (a chain: every rank but the last also serves its child)."""
    per_mib_ms = DEFAULT_COSTS.relay_ms + 2 * DEFAULT_COSTS.serve_ms + DEFAULT_COSTS.client_ms
    return (SCALES[1] - SCALES[0]) * per_mib_ms * BLOB_MIB * (NODES - 1) / 1000.0


def measure(workdir: Path) -> float:
    """CPU seconds the x33 cell used beyond the x1 cell."""
    cell = Cell(NODES, "kary:1", 0, (BLOB_MIB * MIB,), ("all",))
    rendered = render_cell(NODES, "kary:1", [BLOB_MIB * MIB], ["all"], cell.id)
    used = {}
    for scale in SCALES:
        with EmulatorBackend(workdir=workdir, cpu_scale=scale) as backend:
            before = _children_cpu_s()
            result = backend.run(cell, rendered, timeout=120)
            used[scale] = _children_cpu_s() - before
        if result.rc != 0:
            raise SystemExit(f"emulator_cpu: the x{scale:g} cell failed: {result.error}")
    return used[SCALES[1]] - used[SCALES[0]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs of the pair (default 1)")
    args = parser.parse_args(argv)
    asked = asked_extra_s()
    for run in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="kary-cpu-") as folder:
            extra = measure(Path(folder))
        print(
            f"run {run + 1}/{args.repeat}: x33 used {extra:.3f} CPU-s more than x1; "
            f"its costs ask {asked:.3f} s more (ratio {extra / asked:.2f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
