"""Zero blobs against random ones on real Flux in the box: what flux-distribute's sweeps measured.

    .venv/bin/python benchmarks/blob_kinds.py            # N 8 and 16, kary:2, 256M,
                                                         # 100 and 400 Mbit, 4 runs a kind
    .venv/bin/python benchmarks/blob_kinds.py \
        --json benchmarks/results/blob-kinds-flux-0.88-2cores.json
    .venv/bin/python benchmarks/blob_kinds.py \
        --from-json benchmarks/results/blob-kinds-flux-0.88-2cores.json   # the tables again

flux-distribute's image made every size with `head -c N /dev/zero`; `flux archive
create` cuts a file into 1 MiB chunks addressed by hash, so such a file is one
distinct chunk (experiments/formats/blobs.py).  This runs both kinds through
the same cells, interleaved (round r runs iteration r of every (speed, nodes,
kind) in a shuffled order, so drift in the machine's load hits both kinds
alike), each a real `kary run` (strategy `all`, verify on) into
`--out/raw-<speed>/`, where the two kinds sit side by side (`.../blob-zeros/`).

Printed per link speed and node count, for each kind: the archive's chunks
and how many objects rank 0's content store gained (the log's archive line:
distinct chunks plus the archive's few metadata objects), the median
`distribute-all-nodes` seconds with quartiles and n, and the bytes every link
of the box carried during the cell (its `tc -s` counters, run.json
`box.link_bytes`): rank 0's link and all links together; then the two-sided
Mann-Whitney p of zeros against random (4 runs a side reach p = 0.029 at best;
3 runs can never reach 0.05, so the verdict says unsure).  A failed step, a
copy that failed verification or a void step is no sample: the table says n.
Above the tables, what made the samples (benchmarks/provenance.py: each run's
template hash, kary commit, start and finish from its run.json; "not recorded"
where it did not say).  Samples of more than one template hash or recorded kary
commit make no table: one line on stderr names them, exit status 2.  Exit
status 1 when a cell has no sample.
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

import numpy as np  # noqa: E402
from machine_load import CpuMeter  # noqa: E402
from provenance import Made, made_by, or_refused  # noqa: E402

from analysis.tables.stats import could_decide, decides, rank_test  # noqa: E402
from experiments import Sweep, run  # noqa: E402
from experiments.execution.progress import SilentReporter  # noqa: E402
from experiments.formats.blobs import distinct_chunks  # noqa: E402
from experiments.formats.kary_line import kary_records, step_timings  # noqa: E402
from experiments.formats.run_record import LOG_NAME, read_record  # noqa: E402
from experiments.model.links import link_settings  # noqa: E402
from experiments.model.plan import ExperimentSpec, plan_experiment  # noqa: E402
from experiments.model.units import parse_size  # noqa: E402

EVENT = "distribute-all-nodes"
KINDS = ("random", "zeros")


def run_one(speed: str, nodes: int, blob: str, args: argparse.Namespace, iteration: int) -> None:
    """Iteration `iteration` of one cell (earlier iterations are already in the tree)."""
    sweep = Sweep(
        exact_nodes=nodes,
        topos=[args.topo],
        sizes=args.size,
        iterations=iteration + 1,
        backend="flux",
        link_bandwidth=speed,
        blob=blob,
        data_dir=args.out / f"raw-{speed}",
        verify=True,
    )
    run(sweep, reporter=SilentReporter(), echo=lambda line: None)


def cell_sample(cell_dir: Path) -> dict[str, Any] | None:
    """One cell's figures, or None when it is no sample (not succeeded, a step not ok)."""
    record = read_record(cell_dir)
    if record is None or record.state != "succeeded":
        return None
    log = (cell_dir / LOG_NAME).read_text()
    # The rule kary parse and fidelity.py use: void (its own field, or no cold cache shown
    # before it) or failed steps are no timing.
    steps = [(step, why) for step, why in step_timings(log) if step.get("event") == EVENT]
    archive = [i for i in kary_records(log) if i is not None and i.get("meta") == "archive"]
    if len(steps) != 1 or steps[0][1] is not None or len(archive) != 1:
        return None
    links = ((record.model_extra or {}).get("box") or {}).get("link_bytes") or {}
    ranks = {name: v for name, v in links.items() if name.isdigit()}
    return {
        "seconds": float(steps[0][0]["seconds"]),
        "chunks": archive[0]["chunks"],
        "store_objects_added": archive[0]["store_objects_added"],
        "rank0_sent_bytes": ranks.get("0", {}).get("sent_bytes"),
        "all_links_sent_bytes": sum(v.get("sent_bytes", 0) for v in ranks.values()) or None,
        # What made it: a table of samples from more than one of either is refused.
        "template_hash": record.template_hash,
        "kary_commit": getattr(record, "kary_commit", None),
        "started": record.started,
        "finished": record.finished,
    }


def samples(args: argparse.Namespace, speed: str, nodes: int, blob: str) -> list[dict[str, Any]]:
    spec = ExperimentSpec(
        exact_nodes=nodes,
        topos=[args.topo],
        sizes=[parse_size(args.size)],
        iters=args.runs,
        backend="flux",
        blob=blob,
        network=link_settings(speed, None).dirname(),
        data_dir=args.out / f"raw-{speed}",
    )
    found = [cell_sample(cell.raw_dir(spec.data_dir)) for cell in plan_experiment(spec).cells]
    return [s for s in found if s is not None]


def _median(values: list[Any]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e6:,.0f}"


def provenance(data: dict[str, Any]) -> str:
    """One line: the template and kary commit every sample ran with, and when
    (provenance.py); MixedRuns, naming the cells, when they differ (samples kept before
    kary recorded them say "not recorded")."""
    return made_by(
        {
            f"{speed} N={nodes} {kind}": [Made.of(row) for row in rows]
            for speed, by_n in data["samples"].items()
            for nodes, by_kind in by_n.items()
            for kind, rows in by_kind.items()
        }
    )


def table(data: dict[str, Any]) -> str:
    lines = [
        f"blob kinds in the box: {data['topo']}, {data['size']}, `{EVENT}`; "
        f"flux-core {data['flux_version']}",
        "",
        provenance(data),
    ]
    for speed in data["speeds"]:
        for nodes in data["nodes"]:
            got = data["samples"][speed][str(nodes)]
            lines += [
                f"\nN={nodes}, links {speed} (both ways, every node)",
                "",
                "| blob | chunks | distinct chunks | store objects added | median s | quartiles "
                "| n | rank 0 link sent (MB) | all links sent (MB) |",
                "|---|---|---|---|---|---|---|---|---|",
            ]
            for kind in KINDS:
                rows = got.get(kind, [])
                if not rows:
                    lines.append(f"| {kind} | - | - | - | - | - | 0 | - | - |")
                    continue
                times = [r["seconds"] for r in rows]
                q1, q3 = np.percentile(times, [25, 75])
                added = max(r["store_objects_added"] for r in rows)
                lines.append(
                    f"| {kind} | {rows[0]['chunks']} | "
                    f"{distinct_chunks(added, rows[0]['chunks'])} | "
                    f"{_median([r['store_objects_added'] for r in rows]):.0f} | "
                    f"{statistics.median(times):.2f} | {q1:.2f}-{q3:.2f} | {len(rows)} | "
                    f"{_mb(_median([r['rank0_sent_bytes'] for r in rows]))} | "
                    f"{_mb(_median([r['all_links_sent_bytes'] for r in rows]))} |"
                )
            lines.append(_verdict(got))
    if data.get("wall_seconds") is None:
        lines.append("\nwall time and load not recorded")
    else:
        lines.append(
            f"\nwall time {data['wall_seconds']:.0f} s; all cores busy {data['busy_share']:.0%} "
            f"of the time, {data['others_share']:.0%} with work other than this benchmark"
        )
    return "\n".join(lines)


def _verdict(got: dict[str, list[dict[str, Any]]]) -> str:
    """zeros against random by the shared rule (analysis/tables/stats.py `decides`): faster
    only at p < 0.05 with at least 3 runs a side, unsure where the runs cannot reach it,
    else a tie."""
    a = np.array([r["seconds"] for r in got.get("zeros", [])])
    b = np.array([r["seconds"] for r in got.get("random", [])])
    test = rank_test(a, b)
    if test is None:
        return "\nzeros vs random: no samples"
    if decides(test):
        faster = "zeros" if np.median(a) < np.median(b) else "random"
        word = f"{faster} faster"
    elif not could_decide(test):
        word = "unsure (too few runs for p < 0.05)"
    else:
        word = "tie"
    ratio = float(np.median(b) / np.median(a))
    return (
        f"\nzeros vs random: p = {test.p:.3f} (n {test.n_a}/{test.n_b}): {word}; "
        f"random / zeros medians {ratio:.1f}x"
    )


def _flux_version() -> str:
    import subprocess

    out = subprocess.run(["flux", "version"], capture_output=True, text=True).stdout
    return next((ln.split()[1] for ln in out.splitlines() if ln.startswith("commands:")), "?")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", default="8,16")
    parser.add_argument("--topo", default="kary:2")
    parser.add_argument("--size", default="256M")
    parser.add_argument("--speeds", default="100Mbit,400Mbit")
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--out", type=Path, default=REPO / "data" / "blob-kinds")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", type=Path, help="Write the samples here.")
    parser.add_argument("--from-json", type=Path, help="Print the tables of saved samples.")
    parser.add_argument(
        "--collect",
        action="store_true",
        help="Run nothing: read the samples of the cells already in --out (a run cut short, "
        "or one made by an earlier version of this script).",
    )
    args = parser.parse_args()
    return or_refused("blob_kinds.py", lambda: _main(args))


def _main(args: argparse.Namespace) -> int:
    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        print(table(saved))
        return _missing(saved)
    nodes = [int(n) for n in args.nodes.split(",")]
    speeds = args.speeds.split(",")
    rng = random.Random(args.seed)
    started, meter = time.monotonic(), CpuMeter()
    for iteration in range(0 if args.collect else args.runs):
        visits = [(s, n, k) for s in speeds for n in nodes for k in KINDS]
        rng.shuffle(visits)
        for speed, count, kind in visits:
            t0 = time.monotonic()
            run_one(speed, count, kind, args, iteration)
            print(
                f"run {iteration + 1}/{args.runs}: {speed} N={count} {kind}: "
                f"{time.monotonic() - t0:.1f} s",
                file=sys.stderr,
                flush=True,
            )
    data: dict[str, Any] = {
        "command": " ".join(["benchmarks/blob_kinds.py", *sys.argv[1:]]),
        "flux_version": _flux_version(),
        "topo": args.topo,
        "size": args.size,
        "nodes": nodes,
        "speeds": speeds,
        "runs": args.runs,
        "samples": {
            s: {str(n): {k: samples(args, s, n, k) for k in KINDS} for n in nodes} for s in speeds
        },
        "wall_seconds": time.monotonic() - started,
        "busy_share": meter.busy(),
        "others_share": meter.others(),
    }
    if args.collect:
        # The run's own time and load, from the samples file it wrote (else unknown).
        earlier = json.loads(args.json.read_text()) if args.json and args.json.exists() else {}
        for key in ("command", "wall_seconds", "busy_share", "others_share"):
            data[key] = earlier.get(key)
    print(table(data))
    if args.json:
        args.json.write_text(json.dumps(data, indent=1) + "\n")
    return _missing(data)


def _missing(data: dict[str, Any]) -> int:
    """1 when a (speed, nodes, kind) cell has no sample."""
    samples = data["samples"].values()
    cells = [rows for by_n in samples for by_kind in by_n.values() for rows in by_kind.values()]
    return 1 if any(not rows for rows in cells) else 0


if __name__ == "__main__":
    sys.exit(main())
