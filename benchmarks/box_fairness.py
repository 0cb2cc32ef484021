"""What a box's link queue does to wide fan-outs: tbf's one FIFO against fair links.

    .venv/bin/python benchmarks/box_fairness.py --out /tmp/fairness     # 16 nodes, 100Mbit,
        # 64M, kary:2,8,14,15 and binomial, 4 runs of each under each queue (about 45 min)
    .venv/bin/python benchmarks/box_fairness.py --from-json \\
        benchmarks/results/box-fairness-n16-100Mbit-64M.json           # the table again

Needs flux-core's `flux` on PATH and the right to build a box.  Every cell is a
real `kary run` (strategy `all`, verify on) into `--out/raw-<queue>/`; round r
runs iteration r of every (queue, topology) in a shuffled order (`--seed`), so
drift in the machine's load hits both queues alike.  Per (queue, topology) it
prints: cells that succeeded of those run (a failed cell is no timing: a rank
lost, a stall, a copy that failed verification; its error's first line is kept
in the JSON), the drops and packets of rank 0's shaped egress and of every
shaped qdisc of the box (run.json's box.link_bytes, from `tc -s`), and the
median `distribute-all-nodes` seconds of the cells that succeeded with the
floor its links set (experiments/estimate/link_floor.py).  The machine's load
while it ran (the share of both cores busy with other work) is printed and kept.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from machine_load import CpuMeter  # noqa: E402

from experiments import Sweep, run  # noqa: E402
from experiments.execution.progress import SilentReporter  # noqa: E402
from experiments.formats.cell_layout import cell_dir, cell_id, network_dirname  # noqa: E402
from experiments.formats.run_record import read_record  # noqa: E402
from experiments.model.links import LINK_QUEUES  # noqa: E402
from experiments.model.units import parse_bandwidth  # noqa: E402

EVENT = "distribute-all-nodes"
TOPOS = ("kary:2", "kary:8", "kary:14", "kary:15", "binomial")


def run_cell(out: Path, queue: str, args: argparse.Namespace, topo: str, iteration: int) -> None:
    """Iteration `iteration` of one (queue, topology) cell; its earlier ones are done."""
    sweep = Sweep(
        exact_nodes=args.nodes,
        topos=[topo],
        sizes=args.size,
        iterations=iteration + 1,
        backend="flux",
        link_bandwidth=args.speed,
        link_queue=queue,
        data_dir=out / f"raw-{queue}",
        verify=True,
        rerun_failed=False,
    )
    run(sweep, reporter=SilentReporter(), echo=lambda line: None)


def cell_record(out: Path, queue: str, args: argparse.Namespace, topo: str, it: int) -> dict:
    """What one cell's run.json says of its queue: state, error, drops, distribution."""
    network = network_dirname(parse_bandwidth(args.speed))
    cell = cell_id(args.nodes, topo, it, network=network)
    record = read_record(cell_dir(out / f"raw-{queue}", cell))
    if record is None:
        raise SystemExit(f"box_fairness.py: {cell} left no readable run.json")
    box = (record.model_extra or {}).get("box") or {}
    links = box.get("link_bytes") or {}
    qdiscs = [q for link in links.values() for side in link["qdiscs"].values() for q in side]
    root_out = (links.get("0") or {}).get("qdiscs", {}).get("sent", [])
    checks = [c for c in box.get("distributions", []) if c["event"] == EVENT]
    ok = record.state == "succeeded"
    return {
        "topo": topo,
        "iteration": it,
        "state": record.state,
        "error": record.error.splitlines()[0] if record.error else None,
        "built": (box.get("link_queue") or {}).get("qdiscs"),
        "rank0_drops": sum(q["drops"] for q in root_out),
        "rank0_packets": sum(q["packets"] for q in root_out),
        "drops": sum(q["drops"] for q in qdiscs),
        "packets": sum(q["packets"] for q in qdiscs),
        "seconds": checks[0]["seconds"] if checks and ok else None,
        "floor_seconds": checks[0]["floor_seconds"] if checks else None,
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    out = Path(args.out)
    meter = CpuMeter()
    order = random.Random(args.seed)
    cells: list[dict[str, Any]] = []
    started = time.time()
    for it in range(args.runs):
        pairs = [(q, t) for q in LINK_QUEUES for t in args.topos]
        order.shuffle(pairs)
        for queue, topo in pairs:
            run_cell(out, queue, args, topo, it)
            cell = {"queue": queue, **cell_record(out, queue, args, topo, it)}
            cells.append(cell)
            print(json.dumps(cell), file=sys.stderr, flush=True)
    return {
        "nodes": args.nodes,
        "speed": args.speed,
        "size": args.size,
        "runs": args.runs,
        "seed": args.seed,
        "wall_seconds": round(time.time() - started, 1),
        "other_load": round(meter.others(), 3),
        "cells": cells,
    }


def table(data: dict[str, Any]) -> str:
    lines = [
        f"box, N={data['nodes']}, {data['size']}, links {data['speed']} (both ways, every "
        f"node), {data['runs']} runs per queue and topology, interleaved (seed {data['seed']}); "
        f"other work on the machine: {data['other_load']:.0%} of both cores",
        "",
        "| queue | topology | cells ok | rank 0 drops / packets | all drops / packets "
        "| distribute median (n) | link floor |",
        "|---|---|---|---|---|---|---|",
    ]
    topos = list(dict.fromkeys(c["topo"] for c in data["cells"]))
    for queue in LINK_QUEUES:
        for topo in topos:
            mine = [c for c in data["cells"] if c["queue"] == queue and c["topo"] == topo]
            ok = [c["seconds"] for c in mine if c["seconds"] is not None]
            median = f"{statistics.median(ok):.1f} s ({len(ok)})" if ok else "none (0)"
            floor = next((c["floor_seconds"] for c in mine if c["floor_seconds"]), None)
            succeeded = sum(c["state"] == "succeeded" for c in mine)
            lines.append(
                f"| {queue} | {topo} | {succeeded} of {len(mine)} "
                f"| {sum(c['rank0_drops'] for c in mine):,} / "
                f"{sum(c['rank0_packets'] for c in mine):,} "
                f"| {sum(c['drops'] for c in mine):,} / {sum(c['packets'] for c in mine):,} "
                f"| {median} | {f'{floor:.1f} s' if floor else '?'} |"
            )
    failed = [c for c in data["cells"] if c["state"] != "succeeded"]
    lines += ["", f"failed cells: {len(failed)}"]
    lines += [f"- {c['queue']} {c['topo']} run {c['iteration']}: {c['error']}" for c in failed]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="/tmp/kary-box-fairness")
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--speed", default="100Mbit")
    parser.add_argument("--size", default="64M")
    parser.add_argument("--topos", type=lambda s: s.split(","), default=list(TOPOS))
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--seed", type=int, default=59)
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--from-json", help="print the table of kept figures; run nothing")
    args = parser.parse_args()
    data = json.loads(Path(args.from_json).read_text()) if args.from_json else measure(args)
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1) + "\n")
    print(table(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
