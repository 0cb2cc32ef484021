"""Local plans on shaped links: what `kary plan` predicts against what `kary run` measures.

    .venv/bin/python benchmarks/local_links_bench.py              # the quick grid, ~5 min
    .venv/bin/python benchmarks/local_links_bench.py --grid full --repeat 3
    .venv/bin/python benchmarks/local_links_bench.py --only 7/kary:6 --json links.json

Each cell is planned and run through the CLI exactly as a user would
(`kary plan ... --json`, then `kary run ... --json --timeout 1800` into a
scratch raw tree, backend local, verify on), with the same --link-bandwidth and
--link-latency.  Measured: the cell's wall time as the runner recorded it, and
its timed steps from the log grouped like the plan's breakdown (distribute,
verify, create, ...); `overhead` is the wall time outside the timed steps.

Printed per cell: predicted and measured seconds (median of --repeat runs,
with n), their ratio (measured / predicted), and the same for distribute alone.
The target for issue 11 is a whole-cell ratio within 0.65-1.35 (35%).  Cells
run in a shuffled order each round so drift in the machine's load spreads over
all of them.  Every figure is the emulator's on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from experiments.formats.kary_line import kary_records, step_problem  # noqa: E402

TARGET = 0.35
PARTS = ("generate", "create", "distribute", "verify", "delete", "clean")


@dataclass(frozen=True)
class Case:
    nodes: int
    topo: str
    sizes: str
    strategies: str
    bandwidth: str | None
    latency: str | None

    @property
    def name(self) -> str:
        link = self.bandwidth or "unshaped"
        if self.latency:
            link += f"+{self.latency}"
        return f"{self.nodes}/{self.topo} {self.sizes} {self.strategies} {link}"

    def flags(self) -> list[str]:
        out = ["--exact-nodes", str(self.nodes), "--topo", self.topo, "--sizes", self.sizes]
        out += ["--strategy", self.strategies, "--backend", "local", "--verify"]
        if self.bandwidth:
            out += ["--link-bandwidth", self.bandwidth]
        if self.latency:
            out += ["--link-latency", self.latency]
        return out


QUICK = [
    Case(7, "kary:2", "8M,64M", "all", "200Mbit", None),
    Case(7, "kary:1", "8M,64M", "all", "200Mbit", None),
    Case(7, "kary:6", "8M,64M", "all", "200Mbit", None),
    Case(16, "kary:2", "8M,64M", "all", "200Mbit", None),
    Case(7, "kary:2", "8M,64M", "all,leaves,middle", "200Mbit", None),
    Case(7, "kary:2", "8M,64M", "all", "1Gbit", None),
    Case(7, "kary:2", "8M,64M", "all", "200Mbit", "1ms"),
]
FULL = [
    *QUICK,
    Case(7, "kary:1", "8M,64M", "all", "1Gbit", None),
    Case(7, "kary:6", "8M,64M", "all", "1Gbit", None),
    Case(16, "kary:2", "8M,64M", "all", "1Gbit", None),
    Case(7, "kary:1", "8M,64M", "all", "200Mbit", "1ms"),
    Case(7, "kary:6", "8M,64M", "all", "200Mbit", "1ms"),
    Case(16, "kary:2", "8M,64M", "all,leaves,middle", "200Mbit", None),
    Case(7, "kary:2", "8M,64M", "all", "1Gbit", "1ms"),
]
# The same cells on unshaped links: what the emulator costs when no link limits it.
UNSHAPED = [
    Case(7, "kary:2", "8M,64M", "all", None, None),
    Case(7, "kary:1", "8M,64M", "all", None, None),
    Case(7, "kary:6", "8M,64M", "all", None, None),
    Case(16, "kary:2", "8M,64M", "all", None, None),
    Case(7, "kary:2", "8M,64M", "all,leaves,middle", None, None),
    Case(30, "kary:16", "16M,64M", "all", None, None),
]
GRIDS = {"quick": QUICK, "full": FULL, "unshaped": UNSHAPED}


def _kary() -> list[str]:
    script = Path(sys.executable).parent / "kary"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from experiments.cli import main; main()"]


def predict(case: Case, data: Path) -> dict[str, Any]:
    """`kary plan --json` for the case: whole-cell seconds and the breakdown."""
    out = subprocess.run(
        [*_kary(), "plan", *case.flags(), "--data-dir", str(data), "--json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    plan = json.loads(out.stdout)
    return {"seconds": plan["estimated_seconds"], "parts": plan["breakdown_seconds"]}


def _part_of(event: str) -> str | None:
    for part in ("verify", "distribute", "generate", "create", "delete", "clean"):
        if event.startswith(part):
            return part
    return None


def measure(case: Case, data: Path) -> dict[str, Any]:
    """One `kary run` of the case: wall seconds, seconds per part, and the cell's state."""
    load = os.getloadavg()[0]  # other work on the machine slows the emulator's CPU-bound steps
    proc = subprocess.run(
        [*_kary(), "run", *case.flags(), "--data-dir", str(data), "--json", "--timeout", "1800"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    summary = json.loads(proc.stdout)
    cell = summary["cells"][0]
    parts = dict.fromkeys(PARTS, 0.0)
    steps = []
    [log] = list(data.glob("*/*/*/topology-experiment.out"))
    for item in kary_records(log.read_text()):
        # A failed step is no timing (and the cell's state says it failed).
        if item is None or "event" not in item or step_problem(item) is not None:
            continue
        part = _part_of(str(item["event"]))
        if part is not None:
            parts[part] += float(item["seconds"])
            steps.append([item["event"], item["size"], float(item["seconds"])])
    parts["overhead"] = cell["seconds"] - sum(parts.values())
    return {
        "state": cell["state"],
        "seconds": cell["seconds"],
        "parts": parts,
        "steps": steps,
        "load": load,
    }


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--grid", choices=tuple(GRIDS), default="quick")
    parser.add_argument("--repeat", type=int, default=1, help="runs per cell (median reported)")
    parser.add_argument("--only", action="append", default=[], help="cells whose name has this")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", type=Path, default=None, help="also write every sample here")
    args = parser.parse_args()
    cases = GRIDS[args.grid]
    if args.only:
        cases = [c for c in cases if any(o in c.name for o in args.only)]
    rng = random.Random(args.seed)
    predicted: dict[Case, dict[str, Any]] = {}
    samples: dict[Case, list[dict[str, Any]]] = {c: [] for c in cases}
    with tempfile.TemporaryDirectory(prefix="klb-") as scratch:
        for case in cases:
            predicted[case] = predict(case, Path(scratch) / "plan")
        for round_ in range(args.repeat):
            order = list(cases)
            rng.shuffle(order)
            for index, case in enumerate(order):
                data = Path(scratch) / f"r{round_}-{index}"
                sample = measure(case, data)
                samples[case].append(sample)
                print(
                    f"# round {round_ + 1}/{args.repeat} {case.name}: {sample['state']}, "
                    f"{sample['seconds']:.1f} s (predicted {predicted[case]['seconds']:.1f} s)",
                    file=sys.stderr,
                    flush=True,
                )
    print(f"# local plans on shaped links: measured / predicted (target within {TARGET:.0%})")
    print(
        f"{'cell':<40} {'n':>2} {'pred s':>7} {'meas s':>7} {'ratio':>6} "
        f"{'dist pred':>9} {'dist meas':>9} {'ratio':>6} {'load':>5}"
    )
    worst = 0.0
    for case in cases:
        ok = [s for s in samples[case] if s["state"] == "succeeded"]
        wall = _median([s["seconds"] for s in ok])
        dist = _median([s["parts"]["distribute"] for s in ok])
        pred = predicted[case]
        ratio = wall / pred["seconds"]
        dist_ratio = dist / pred["parts"]["distribute"] if pred["parts"]["distribute"] else 0.0
        if ok:
            worst = max(worst, abs(ratio - 1.0))
        load = _median([s["load"] for s in ok])
        print(
            f"{case.name:<40} {len(ok):>2} {pred['seconds']:>7.1f} {wall:>7.1f} {ratio:>6.2f} "
            f"{pred['parts']['distribute']:>9.1f} {dist:>9.1f} {dist_ratio:>6.2f} {load:>5.1f}"
        )
    print(f"# worst whole-cell error {worst:.0%} (n per cell as shown; failed runs excluded)")
    print(f"# load: median 1-minute load average before the runs, on {os.cpu_count()} cores")
    if args.json is not None:
        rows = [{"case": c.name, "predicted": predicted[c], "samples": samples[c]} for c in cases]
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
