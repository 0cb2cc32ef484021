"""Which fan-out wins on real Flux when links, not cores, set the pace: the box.

    .venv/bin/python benchmarks/box_topologies.py                  # N=16, K 1,2,4,15, 64M,
                                                                   # 50 and 100 Mbit, 4 runs
    .venv/bin/python benchmarks/box_topologies.py --emulator 100Mbit   # and the emulator there
    .venv/bin/python benchmarks/box_topologies.py --nodes 8 --topos kary:1,kary:7 --runs 2
    .venv/bin/python benchmarks/box_topologies.py \
        --from-json benchmarks/results/box-topologies-n16.json     # the tables of kept samples

Needs flux-core's `flux` on PATH and the right to build a box (root, or
unprivileged user namespaces).  Every cell is a real `kary run` (strategy
`all`, verify on) into `--out/raw-<place>-<speed>/`, so the raw trees are
kary's own and `kary parse` / `--history` read them; round r runs iteration r
of every (speed, topology) in a shuffled order, so drift in the machine's load
hits every cell alike.  A failed step or a copy that failed verification is no
sample: the table says n.

Printed, per link speed: each topology's median `distribute-all-nodes`
seconds, its quartiles and n, the floor its links set (the busiest shaped link
in either direction at its rate: experiments/estimate/link_floor.py; on equal
links rank 0's K copies out, K x size / rate), the fastest topology, and the
two-sided Mann-Whitney p of every pair (with 4 runs a side the smallest
possible p is 0.029; with 3 it is 0.1, so 3 runs can never separate two
topologies at p < 0.05).  With `--emulator SPEED` the emulator runs the same
cells on the same links and a second table gives emulator / box per cell.
Exit status 1 when a cell has no sample, or when a sample is faster than its
links' floor beyond the floor's slack (tbf's bucket, the clock, tc's rounding):
one warning line per such sample says which.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
from machine_load import CpuMeter  # noqa: E402

from analysis import parse  # noqa: E402
from analysis.tables.stats import rank_test, smallest_p  # noqa: E402
from experiments import Sweep, run  # noqa: E402
from experiments.estimate.link_floor import LinkFloor, distribution_floors  # noqa: E402
from experiments.execution.progress import SilentReporter  # noqa: E402
from experiments.model.links import LinkSettings  # noqa: E402
from experiments.model.units import parse_bandwidth, parse_size  # noqa: E402

EVENT = "distribute-all-nodes"
ALPHA = 0.05


def run_one(
    place: str, speed: str, nodes: int, topo: str, size: str, iteration: int, out: Path
) -> None:
    """Iteration `iteration` of one cell (earlier iterations are already in the tree)."""
    backend = {"box": "flux", "emulator": "local"}[place]
    sweep = Sweep(
        exact_nodes=nodes,
        topos=[topo],
        sizes=size,
        iterations=iteration + 1,
        backend=backend,
        link_bandwidth=speed,
        data_dir=out / f"raw-{place}-{speed}",
        verify=True,
    )
    run(sweep, reporter=SilentReporter(), echo=lambda line: None)


def samples(out: Path, place: str, speed: str) -> dict[str, list[float]]:
    """{topo: distribute seconds of every ok step}, parsed from the raw tree by kary parse."""
    raw, parsed = out / f"raw-{place}-{speed}", out / f"parsed-{place}-{speed}"
    events = parse(raw, parsed, plots=False).parsed.events
    ok = events[(events["event"] == EVENT) & (events["status"] == "ok")]
    return {
        str(topo): [float(t) for t in group["time_seconds"]] for topo, group in ok.groupby("topo")
    }


def floor(topo: str, nodes: int, size_bytes: int, speed: str) -> LinkFloor:
    """The links' floor of a distribution to every rank (estimate/link_floor.py: every
    shaped link, both directions)."""
    links = LinkSettings(bandwidth=parse_bandwidth(speed))
    return distribution_floors(nodes, topo, "all", size_bytes, links)[EVENT]


def below_floor(data: dict[str, Any]) -> list[str]:
    """Each box sample faster than its links' floor, beyond the slack the floor allows."""
    found = []
    size_bytes = parse_size(data["size"])
    for speed, got in data["box"].items():
        for topo, times in got.items():
            bound = floor(topo, data["nodes"], size_bytes, speed)
            found += [
                f"box {speed} {topo}: {t:.2f} s, under its links' floor {bound.seconds:.2f} s "
                f"({bound.busiest.text() if bound.busiest else 'no shaped link'})"
                for t in times
                if bound.beaten_by(t)
            ]
    return found


def table(data: dict[str, Any]) -> str:
    lines = []
    nodes, size = data["nodes"], data["size"]
    size_bytes = parse_size(size)
    for speed in data["speeds"]:
        got = data["box"][speed]
        lines += [
            f"\nbox, N={nodes}, {size}, links {speed} (both ways, every node), `{EVENT}` seconds",
            "",
            "| topology | median | quartiles | n | link floor | median / floor |",
            "|---|---|---|---|---|---|",
        ]
        for topo in data["topos"]:
            times = got.get(topo, [])
            bound = floor(topo, nodes, size_bytes, speed).seconds
            if not times:
                lines.append(f"| {topo} | - | - | 0 | {bound:.1f} | - |")
                continue
            q1, q3 = np.percentile(times, [25, 75])
            med = statistics.median(times)
            lines.append(
                f"| {topo} | {med:.2f} | {q1:.2f}-{q3:.2f} | {len(times)} | {bound:.1f} | "
                f"{med / bound:.2f} |"
            )
        ranked = sorted((statistics.median(t), topo) for topo, t in got.items() if t)
        if ranked:
            lines.append(f"\nfastest: {ranked[0][1]} (median {ranked[0][0]:.2f} s)")
        lines += ["", "| pair | p (Mann-Whitney, two-sided) | n | verdict |", "|---|---|---|---|"]
        for a, b in itertools.combinations(data["topos"], 2):
            test = rank_test(np.array(got.get(a, [])), np.array(got.get(b, [])))
            if test is None:
                lines.append(f"| {a} vs {b} | - | - | no samples |")
                continue
            smallest = smallest_p(test.n_a, test.n_b)
            if test.p < ALPHA:
                faster = a if statistics.median(got[a]) < statistics.median(got[b]) else b
                verdict = f"{faster} faster"
            elif smallest >= ALPHA:
                verdict = "unsure (too few runs for p < 0.05)"
            else:
                verdict = "tie"
            lines.append(f"| {a} vs {b} | {test.p:.3f} | {test.n_a}/{test.n_b} | {verdict} |")
    for speed, emulated in data.get("emulator", {}).items():
        box = data["box"][speed]
        lines += [
            f"\nemulator vs box, N={nodes}, {size}, links {speed}: `{EVENT}` medians",
            "",
            "| topology | box (s) | emulator (s) | emulator / box | n box/emu | within x1.5 |",
            "|---|---|---|---|---|---|",
        ]
        for topo in data["topos"]:
            b, e = box.get(topo, []), emulated.get(topo, [])
            if not b or not e:
                lines.append(f"| {topo} | - | - | - | {len(b)}/{len(e)} | no samples |")
                continue
            ratio = statistics.median(e) / statistics.median(b)
            ok = "yes" if 1 / 1.5 <= ratio <= 1.5 else "NO"
            lines.append(
                f"| {topo} | {statistics.median(b):.2f} | {statistics.median(e):.2f} | "
                f"{ratio:.2f} | {len(b)}/{len(e)} | {ok} |"
            )
        fast_box = min((statistics.median(t), k) for k, t in box.items() if t)[1]
        fast_emu = min((statistics.median(t), k) for k, t in emulated.items() if t)[1]
        lines.append(
            f"\nfastest: box {fast_box}, emulator {fast_emu}: "
            + ("same" if fast_box == fast_emu else "DIFFERENT")
        )
    lines.append(
        f"\nwall time {data['wall_seconds']:.0f} s; the {os.cpu_count()} cores were busy "
        f"{data['busy_share']:.0%} of the time (these cells included)"
    )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--topos", default="kary:1,kary:2,kary:4,kary:15")
    parser.add_argument("--size", default="64M")
    parser.add_argument("--speeds", default="50Mbit,100Mbit")
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--emulator", default="", help="Speeds to run on the emulator too.")
    parser.add_argument("--out", type=Path, default=REPO / "data" / "box-topologies")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path, help="Write the samples here.")
    parser.add_argument("--from-json", type=Path, help="Print the tables of saved samples.")
    args = parser.parse_args()
    if args.from_json:
        data = json.loads(args.from_json.read_text())
        print(table(data))
        return _missing(data)
    topos = args.topos.split(",")
    speeds = args.speeds.split(",")
    emulated = [s for s in args.emulator.split(",") if s]
    rng = random.Random(args.seed)
    started, meter = time.monotonic(), CpuMeter()
    for iteration in range(args.runs):
        visits = [("box", s, t) for s in speeds for t in topos]
        visits += [("emulator", s, t) for s in emulated for t in topos]
        rng.shuffle(visits)
        for place, speed, topo in visits:
            t0 = time.monotonic()
            run_one(place, speed, args.nodes, topo, args.size, iteration, args.out)
            print(
                f"run {iteration + 1}/{args.runs}: {place} {speed} {topo}: "
                f"{time.monotonic() - t0:.1f} s",
                file=sys.stderr,
                flush=True,
            )
    wall = time.monotonic() - started
    data: dict[str, Any] = {
        "nodes": args.nodes,
        "size": args.size,
        "topos": topos,
        "speeds": speeds,
        "runs": args.runs,
        "box": {s: samples(args.out, "box", s) for s in speeds},
        "emulator": {s: samples(args.out, "emulator", s) for s in emulated},
        "wall_seconds": wall,
        "busy_share": meter.busy(),
    }
    print(table(data))
    if args.json:
        args.json.write_text(json.dumps(data, indent=1))
    return _missing(data)


def _missing(data: dict[str, Any]) -> int:
    """1 when a (speed, topology) cell has no sample, or a sample beat its links' floor."""
    speeds, topos = data["speeds"], data["topos"]
    faster = below_floor(data)
    for line in faster:
        print(f"warning: faster than physics: {line}", file=sys.stderr)
    empty = any(not data["box"][s].get(t) for s in speeds for t in topos)
    return 1 if empty or faster else 0


if __name__ == "__main__":
    sys.exit(main())
