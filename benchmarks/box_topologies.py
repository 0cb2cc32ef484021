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

Printed, per link speed: what made the runs (their template hash, kary commit
and time span, from the parsed runs table by benchmarks/provenance.py; "not
recorded" where run.json did not say), each topology's median
`distribute-all-nodes` seconds, its quartiles and n, the floor its links set
(the busiest shaped link in either direction at its rate:
experiments/estimate/link_floor.py; on equal links rank 0's K copies out, K x
size / rate), the winner by the one rule of analysis/tables/stats.py
(`find_winner`: the fastest by median only where Mann-Whitney separates it from
every other; else a tie, or unsure with too few runs), and the two-sided
Mann-Whitney p of every pair (with 4 runs a side the smallest possible p is
0.029; with 3 it is 0.1, so 3 runs can never separate two topologies at
p < 0.05).  A topology kary judged CPU-bound in any of its runs (run.json's
box.cpu_bound: the cores' share at half the links' floor or more) is marked
`(cpu-bound)` in every table.  With `--emulator SPEED` the emulator runs the
same cells on the same links and a second table gives emulator / box per cell;
the two agree only where both name the same winner.
The JSON keeps each (place, speed)'s provenance beside its samples.  Samples
from more than one template hash or recorded kary commit make no table: one
line on stderr names them, exit status 2.  Exit status 1 when a cell has no
sample, or when a sample is faster than its links' floor beyond the floor's
slack (tbf's bucket, the clock, tc's rounding): one warning line per such
sample says which.
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
import pandas as pd  # noqa: E402
from machine_load import CpuMeter  # noqa: E402
from provenance import Made, check_one_source, describe, or_refused, summarize  # noqa: E402

from analysis import parse  # noqa: E402
from analysis.tables.stats import could_decide, decides, find_winner, rank_test  # noqa: E402
from experiments import Sweep, run  # noqa: E402
from experiments.estimate.link_floor import LinkFloor, distribution_floors  # noqa: E402
from experiments.execution.progress import SilentReporter  # noqa: E402
from experiments.model.links import (  # noqa: E402
    LINK_QUEUES,
    QUEUE_BEFORE_LINK_QUEUES,
    LinkSettings,
)
from experiments.model.units import parse_bandwidth, parse_size  # noqa: E402

EVENT = "distribute-all-nodes"
CPU_BOUND = "(cpu-bound)"


def run_one(
    place: str,
    speed: str,
    nodes: int,
    topo: str,
    size: str,
    iteration: int,
    out: Path,
    queue: str = "fair",
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
        # The box's link queue (box/shaping.py); the emulator paces its own links.
        link_queue=queue if place == "box" else None,
        data_dir=out / f"raw-{place}-{speed}",
        verify=True,
    )
    run(sweep, reporter=SilentReporter(), echo=lambda line: None)


def samples(out: Path, place: str, speed: str) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """{topo: distribute seconds of every ok step}, and what made the runs
    (`provenance_of`), both parsed from the raw tree by kary parse."""
    raw, parsed = out / f"raw-{place}-{speed}", out / f"parsed-{place}-{speed}"
    tables = parse(raw, parsed, plots=False).parsed
    events = tables.events
    ok = events[(events["event"] == EVENT) & (events["status"] == "ok")]
    times = {
        str(topo): [float(t) for t in group["time_seconds"]] for topo, group in ok.groupby("topo")
    }
    return times, provenance_of(tables.runs)


def provenance_of(runs: pd.DataFrame) -> dict[str, Any]:
    """What made a (place, speed)'s runs, from its parsed runs table: provenance.py's
    summary of them (template hashes, kary commits, first start and last finish), and the
    topologies kary judged CPU-bound in any run."""
    bound = runs[runs["cpu_bound"] == "yes"] if "cpu_bound" in runs.columns else runs.iloc[:0]
    return {
        **summarize(Made.of(row) for row in runs.to_dict("records")),
        "cpu_bound": sorted({str(topo) for topo in bound.get("topo", [])}),
    }


def check(data: dict[str, Any]) -> None:
    """MixedRuns, naming the values and where each ran, when the samples' runs recorded
    more than one template hash or kary commit (unrecorded ones are no second value)."""
    check_one_source(
        {
            f"{place} {speed}": made
            for place, speeds in data.get("provenance", {}).items()
            for speed, made in speeds.items()
        }
    )


def _made(data: dict[str, Any], place: str, speed: str) -> dict[str, Any] | None:
    """The provenance kept for (place, speed); None where it is unknown."""
    made = data.get("provenance", {}).get(place, {}).get(speed)
    return made if isinstance(made, dict) else None


def provenance_line(data: dict[str, Any], place: str, speed: str) -> str:
    """One line: the runs' template hash, kary commit and time span, or that it is unknown."""
    made = _made(data, place, speed)
    if made is None:
        return f"{place} runs: provenance unknown (not recorded with these samples)"
    return f"{place} runs: {describe(made)}"


def _cpu_bound(data: dict[str, Any], speed: str) -> set[str]:
    """The topologies of the box at `speed` that kary judged CPU-bound in any run."""
    made = _made(data, "box", speed)
    return set(made.get("cpu_bound", [])) if made else set()


def _label(topo: str, cpu_bound: set[str]) -> str:
    return f"{topo} {CPU_BOUND}" if topo in cpu_bound else topo


def _cpu_note(marked: set[str]) -> list[str]:
    """What the mark means, under a table that uses it."""
    if not marked:
        return []
    return [
        f"\n{CPU_BOUND}: in at least one of its runs kary judged the cores' share at half the "
        "links' floor or more (run.json box.cpu_bound), so its time says as much about this "
        "machine's cores as about its links"
    ]


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


# Samples kept before `link_queue` was recorded were all made under tbf's one FIFO.
_QUEUE_WORDS = {
    "fair": "fair queues, --link-queue fair",
    "fifo": "one FIFO per link, --link-queue fifo",
}


def queue_words(data: dict[str, Any]) -> str:
    """How the samples' box links queued, as the table says it."""
    return _QUEUE_WORDS[data.get("link_queue", QUEUE_BEFORE_LINK_QUEUES)]


def table(data: dict[str, Any]) -> str:
    """The tables of `data`; MixedRuns when its runs came from more than one source."""
    check(data)
    lines = []
    nodes, size = data["nodes"], data["size"]
    size_bytes = parse_size(size)
    for speed in data["speeds"]:
        got = data["box"][speed]
        cpu_bound = _cpu_bound(data, speed)
        lines += [
            f"\nbox, N={nodes}, {size}, links {speed} (both ways, every node; "
            f"{queue_words(data)}), `{EVENT}` seconds",
            provenance_line(data, "box", speed),
            "",
            "| topology | median | quartiles | n | link floor | median / floor |",
            "|---|---|---|---|---|---|",
        ]
        for topo in data["topos"]:
            times = got.get(topo, [])
            bound = floor(topo, nodes, size_bytes, speed).seconds
            name = _label(topo, cpu_bound)
            if not times:
                lines.append(f"| {name} | - | - | 0 | {bound:.1f} | - |")
                continue
            q1, q3 = np.percentile(times, [25, 75])
            med = statistics.median(times)
            lines.append(
                f"| {name} | {med:.2f} | {q1:.2f}-{q3:.2f} | {len(times)} | {bound:.1f} | "
                f"{med / bound:.2f} |"
            )
        found = find_winner({topo: got.get(topo, []) for topo in data["topos"]})
        if found.name is not None:
            best = f"{_label(found.name, cpu_bound)} (median {found.median:.2f} s)"
        else:
            best = found.text
        lines.append(f"\nfastest: {best}")
        lines += ["", "| pair | p (Mann-Whitney, two-sided) | n | verdict |", "|---|---|---|---|"]
        for a, b in itertools.combinations(data["topos"], 2):
            pair = f"{_label(a, cpu_bound)} vs {_label(b, cpu_bound)}"
            test = rank_test(np.array(got.get(a, [])), np.array(got.get(b, [])))
            if test is None:
                lines.append(f"| {pair} | - | - | no samples |")
                continue
            if decides(test):
                faster = a if statistics.median(got[a]) < statistics.median(got[b]) else b
                verdict = f"{faster} faster"
            elif could_decide(test):
                verdict = "tie"
            else:
                verdict = "unsure (too few runs for p < 0.05)"
            lines.append(f"| {pair} | {test.p:.3f} | {test.n_a}/{test.n_b} | {verdict} |")
        lines += _cpu_note(cpu_bound & set(data["topos"]))
    for speed, emulated in data.get("emulator", {}).items():
        box = data["box"][speed]
        cpu_bound = _cpu_bound(data, speed)
        lines += [
            f"\nemulator vs box, N={nodes}, {size}, links {speed}: `{EVENT}` medians",
            provenance_line(data, "emulator", speed),
            "",
            "| topology | box (s) | emulator (s) | emulator / box | n box/emu | within x1.5 |",
            "|---|---|---|---|---|---|",
        ]
        for topo in data["topos"]:
            b, e = box.get(topo, []), emulated.get(topo, [])
            name = _label(topo, cpu_bound)
            if not b or not e:
                lines.append(f"| {name} | - | - | - | {len(b)}/{len(e)} | no samples |")
                continue
            ratio = statistics.median(e) / statistics.median(b)
            ok = "yes" if 1 / 1.5 <= ratio <= 1.5 else "NO"
            lines.append(
                f"| {name} | {statistics.median(b):.2f} | {statistics.median(e):.2f} | "
                f"{ratio:.2f} | {len(b)}/{len(e)} | {ok} |"
            )
        box_best = find_winner({topo: box.get(topo, []) for topo in data["topos"]})
        emu_best = find_winner({topo: emulated.get(topo, []) for topo in data["topos"]})
        if box_best.name is None or emu_best.name is None:
            agree = "no winner to agree on"
        else:
            agree = "same" if box_best.name == emu_best.name else "DIFFERENT"
        lines.append(f"\nfastest: box {box_best.text}, emulator {emu_best.text}: {agree}")
        lines += _cpu_note(cpu_bound & set(data["topos"]))
    lines.append(
        # The cores of the machine that ran them, as the samples say (not this machine's).
        f"\nwall time {data['wall_seconds']:.0f} s; the {data.get('cores', '?')} cores were busy "
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
    parser.add_argument("--link-queue", default=LINK_QUEUES[0], choices=LINK_QUEUES)
    parser.add_argument("--json", type=Path, help="Write the samples here.")
    parser.add_argument("--from-json", type=Path, help="Print the tables of saved samples.")
    args = parser.parse_args()
    return or_refused("box_topologies.py", lambda: _main(args))


def _main(args: argparse.Namespace) -> int:
    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        print(table(saved))
        return _missing(saved)
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
            run_one(place, speed, args.nodes, topo, args.size, iteration, args.out, args.link_queue)
            print(
                f"run {iteration + 1}/{args.runs}: {place} {speed} {topo}: "
                f"{time.monotonic() - t0:.1f} s",
                file=sys.stderr,
                flush=True,
            )
    wall = time.monotonic() - started
    box = {s: samples(args.out, "box", s) for s in speeds}
    emulator = {s: samples(args.out, "emulator", s) for s in emulated}
    data: dict[str, Any] = {
        "nodes": args.nodes,
        "size": args.size,
        "topos": topos,
        "speeds": speeds,
        "runs": args.runs,
        "link_queue": args.link_queue,
        "box": {s: times for s, (times, _) in box.items()},
        "emulator": {s: times for s, (times, _) in emulator.items()},
        "provenance": {
            "box": {s: made for s, (_, made) in box.items()},
            "emulator": {s: made for s, (_, made) in emulator.items()},
        },
        "wall_seconds": wall,
        "busy_share": meter.busy(),
        "cores": os.cpu_count(),
    }
    # Kept before the table: runs it refuses are still measurements to look into.
    if args.json:
        args.json.write_text(json.dumps(data, indent=1))
    print(table(data))
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
