"""How fast is `kary parse`, how does it scale, and how does it compare to the seed's loop?

Builds raw trees of N logs in a temporary folder by replicating the shared
reference logs (../shared/reference/flux-distribute, archive trees), then
measures, each in a fresh child process:

- `kary parse --no-plots` end to end (interpreter start and imports included),
- the parse alone (`analysis.parse_tree(..., plots=False)` timed in-process),
  with the child's peak RSS and, in a separate run, the tracemalloc peak,
- a seed-style parser that grows its DataFrame row by row (`df.loc[i, :] = row`).

Every figure is the median of --repeat runs (default 3).

Run: .venv/bin/python benchmarks/parse_bench.py [--logs 800,8000] [--seed-logs 200,800]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REFERENCE = Path(
    os.environ.get("KARY_SHARED", REPO.parent / "shared")
) / "reference" / "flux-distribute"  # fmt: skip
SOURCE_TREES = ("raw-eks-exact-6", "raw-gke-max-6", "raw-kind")


def build_tree(root: Path, count: int) -> int:
    """Write `count` logs under root as <tree>/<nodes>/<topo>/<iteration>/; returns count."""
    sources = []
    for number, tree in enumerate(SOURCE_TREES):
        for log in sorted((REFERENCE / tree).rglob("topology-experiment.out")):
            sources.append(
                (number, tree, log.relative_to(REFERENCE / tree).parent, log.read_bytes())
            )
    if not sources:
        sys.exit(f"no reference logs under {REFERENCE}")
    for i in range(count):
        number, tree, rel, data = sources[i % len(sources)]
        # Distinct iterations everywhere, so no two cells claim the same identity.
        iteration = 100_000 * number + 100 * (i // len(sources)) + int(rel.name)
        cell = root / tree / rel.parent / str(iteration)
        cell.mkdir(parents=True, exist_ok=True)
        (cell / "topology-experiment.out").write_bytes(data)
    return count


# ---- children: each measurement runs in its own process -------------------------------


def child_parse(data: Path, out: Path, trace: bool) -> None:
    if trace:
        import tracemalloc

        tracemalloc.start()
    from analysis import parse_tree

    start = time.perf_counter()
    result = parse_tree(data, out, plots=False)
    seconds = time.perf_counter() - start
    report = {
        "rows": len(result.parsed.events),
        "seconds": seconds,
        "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    if trace:
        report["traced_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
    print(json.dumps(report))


_SEED_REAL = re.compile(r"(\d+)m([\d.]+)s")


def child_seed(data: Path) -> None:
    """The seed's way: read lines, and grow the DataFrame one `df.loc[i, :] = row` at a time."""
    import pandas as pd

    start = time.perf_counter()
    columns = ["uid", "topology", "iteration", "nodes", "event", "size_gb", "time_seconds"]
    df = pd.DataFrame(columns=columns)
    idx = 0
    for path in sorted(data.rglob("topology-experiment.out")):
        iteration, topology, nodes = path.parent.name, path.parent.parent.name, path.parents[2].name
        uid = f"{topology}-{nodes}"
        event = None
        for line in path.read_text().splitlines():
            if line.startswith("EVENT"):
                event = line.split(" ", 1)[1].strip()
            elif line.startswith("real") and event is not None:
                minutes, seconds = _SEED_REAL.search(line).groups()  # type: ignore[union-attr]
                name, size = event.rsplit("-", 1)
                took = int(minutes) * 60 + float(seconds)
                df.loc[idx, :] = [uid, topology, iteration, nodes, name, size, took]
                idx += 1
                event = None
    seconds = time.perf_counter() - start
    report = {
        "rows": len(df),
        "seconds": seconds,
        "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    print(json.dumps(report))


# ---- parent ------------------------------------------------------------------------------


def run_child(*args: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, *args], check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _median_run(repeat: int, *args: str) -> dict[str, float]:
    """The run with the median time of `repeat` child runs (this machine is shared and noisy)."""
    runs = sorted((run_child(*args) for _ in range(repeat)), key=lambda r: r["seconds"])
    return runs[len(runs) // 2]


def run_cli(data: Path, out: Path) -> float:
    kary = Path(sys.executable).parent / "kary"
    start = time.perf_counter()
    subprocess.run(
        [str(kary), "parse", "--data", str(data), "--out", str(out), "--no-plots"],
        check=True, capture_output=True,
    )  # fmt: skip
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", default="800,8000", help="tree sizes for kary parse")
    parser.add_argument("--seed-logs", default="200,800", help="tree sizes for the seed loop")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per measurement; the median is shown"
    )
    args = parser.parse_args()
    sizes = [int(x) for x in args.logs.split(",")]
    seed_sizes = [int(x) for x in args.seed_logs.split(",")]
    work = Path(tempfile.mkdtemp(prefix="kary-parse-bench-"))
    try:
        trees = {}
        for n in sorted(set(sizes + seed_sizes)):
            trees[n] = work / f"raw-{n}"
            build_tree(trees[n], n)
        print(f"reference logs replicated from {REFERENCE}; Python {sys.version.split()[0]}")
        print(f"{'what':<34}{'logs':>7}{'rows':>9}{'seconds':>10}{'rows/s':>11}{'peak MB':>10}")
        ours: dict[int, float] = {}
        for n in sizes:
            parsed = _median_run(
                args.repeat, "--child-parse", str(trees[n]), str(work / f"out-{n}")
            )
            traced = run_child("--child-parse", str(trees[n]), str(work / f"trace-{n}"), "--trace")
            cli = statistics.median(
                run_cli(trees[n], work / f"cli-{n}") for _ in range(args.repeat)
            )
            ours[n] = parsed["rows"] / parsed["seconds"]
            print(
                f"{'kary parse (in-process)':<34}{n:>7}{parsed['rows']:>9.0f}"
                f"{parsed['seconds']:>10.2f}{ours[n]:>11,.0f}{parsed['maxrss_mb']:>10.0f}"
            )
            print(
                f"{'kary parse --no-plots (CLI)':<34}{n:>7}{parsed['rows']:>9.0f}"
                f"{cli:>10.2f}{parsed['rows'] / cli:>11,.0f}{'':>10}"
            )
            peak = traced["traced_peak_mb"]
            print(f"{'  tracemalloc peak (Python heap)':<34}{n:>7}{'':>30}{peak:>10.0f}")
        seed: dict[int, float] = {}
        for n in seed_sizes:
            loop = _median_run(args.repeat, "--child-seed", str(trees[n]))
            seed[n] = loop["rows"] / loop["seconds"]
            print(
                f"{'seed loop (df.loc[i, :] = row)':<34}{n:>7}{loop['rows']:>9.0f}"
                f"{loop['seconds']:>10.2f}{seed[n]:>11,.0f}{loop['maxrss_mb']:>10.0f}"
            )
        for n in sorted(set(sizes) & set(seed_sizes)):
            speedup = ours[n] / seed[n]
            print(f"speed-up over the seed loop at {n} logs: {speedup:.0f}x (target >= 20x)")
        if len(sizes) >= 2:
            small, large = min(sizes), max(sizes)
            ratio = ours[large] / ours[small]
            print(
                f"throughput at {large} logs / at {small} logs: {ratio:.2f} "
                "(linear: within 0.75..1.25)"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child-parse":
        child_parse(Path(sys.argv[2]), Path(sys.argv[3]), trace="--trace" in sys.argv)
    elif len(sys.argv) > 1 and sys.argv[1] == "--child-seed":
        child_seed(Path(sys.argv[2]))
    else:
        main()
