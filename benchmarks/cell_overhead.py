"""kary's own overhead per cell: a cell's wall time split into Flux's steps and what kary adds.

    .venv/bin/python benchmarks/cell_overhead.py       # emulator, test instance, box;
                                                       # N 8 and 16, 64M, 3 runs each
    .venv/bin/python benchmarks/cell_overhead.py \
        --json benchmarks/results/cell-overhead-flux-0.88-2cores.json
    .venv/bin/python benchmarks/cell_overhead.py \
        --from-json benchmarks/results/cell-overhead-flux-0.88-2cores.json   # tables again

Each sample is a real `kary run` of one cell (kary:2, strategy `all`), in
rounds: round r runs iteration r of every (place, nodes) in a shuffled order, so
drift in the machine's load hits every place alike.  Places: `emulator`
(`--backend local`), `test-instance` (`--backend flux`, a `flux start
--test-size` instance), `box` (`--link-bandwidth 400Mbit`: brokers in network
namespaces over shaped links; needs root and real flux-core) and `nested-pods`
(`--backend kubernetes --layout nested` against tests/kubernetes' fake API server,
whose operator makes each MiniCluster's pods as a cluster would, a network
namespace and disk each, the brokers started as the Flux Operator's scripts do:
box_pods.py).  A `kary run` here makes one MiniCluster for its one cell, so the
nested place is a group of one: its cell pays the group's start and end, which a
real group spreads over its cells (the `outside` column holds the rest).

The split comes from what every run records: run.json's `kary_seconds`
(experiments/formats/run_record.py's KARY_SPANS: the runner's render, prepare,
backend call, judge and record, and the backend's instance start, entrypoint and
instance stop from experiments/backends/entry_stamps.py) and the log's KARY
lines (each timed step's `seconds`).  A cell's wall is the runner's span of it
(render + prepare + backend + judge + record); Flux's own time is its timed
steps (archive create, distribute, remove); generation is the `generate-blob` steps;
kary's share is (wall - Flux steps - generation) / wall, split into:

- render, prepare, judge, record: the runner's;
- instance start / stop: the brokers (and a box's links) coming up and going down
  (mostly flux-core's own start and shutdown of a fresh instance per cell; kary's
  session guard is a small part of it);
- verify, clean: kary's timed check of every rank's copy and its removal of them;
- entrypoint untimed: the entrypoint's work around its timed steps (cache drops
  and their checks, archive metadata, verification, sleeps);
- backend other: the backend call beyond its instance (scratch files, cleanup).

Beside them, per `kary run`, what it spent outside its one cell (planning, the
backend's up and down): once per run, not per cell, so not in the share.  On a
billed cluster every node pays every second: `kary node-s` is kary's seconds
times N.  A cell that did not succeed is no sample: each row says its n.  Above
the tables, what made the samples (benchmarks/provenance.py); below, the
machine's load while they ran (benchmarks/machine_load.py).  Exit status 1 when
a (place, nodes) has no sample.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))  # machine_load.py, when loaded from elsewhere
# The fake API server and pods in a box (tests/kubernetes), the helpers they import, and
# emulator_helpers' look at /proc (tests/emulator).
sys.path[:0] = [str(REPO / "tests" / p) for p in ("kubernetes", "emulator", "")]

from emulator_helpers import processes_mentioning  # noqa: E402
from fake_apiserver import PINNED_VIEW  # noqa: E402
from machine_load import CpuMeter, settle  # noqa: E402
from provenance import Made, made_by, or_refused  # noqa: E402

from experiments.formats.events import (  # noqa: E402
    GENERATE_BLOB,
    STRATEGIES,
    VERIFY_PREFIX,
    strategy_events,
    strategy_of,
)
from experiments.formats.kary_line import kary_records  # noqa: E402
from experiments.formats.run_record import LOG_NAME, RECORD_NAME, read_record  # noqa: E402

# Where a cell runs: the `kary run` options that put it there.
PLACES: dict[str, list[str]] = {
    "emulator": ["--backend", "local"],
    "test-instance": ["--backend", "flux", "--place", "test-instance"],
    "box": ["--backend", "flux", "--link-bandwidth", "400Mbit"],
    # The fake API server bills nobody; kary asks before any Kubernetes run (--yes).
    "nested-pods": [
        "--backend", "kubernetes", "--layout", "nested", "--no-smoke",
        "--flux-view", PINNED_VIEW, "--yes",
    ],
}  # fmt: skip
# kary's parts, in the order a cell spends them.
PARTS = (
    ("render", "render"),
    ("prepare", "prepare"),
    ("instance_start", "instance start"),
    ("verify", "verify"),
    ("clean", "clean"),
    ("entrypoint_untimed", "entrypoint untimed"),
    ("instance_stop", "instance stop"),
    ("backend_other", "backend other"),
    ("judge", "judge"),
    ("record", "record"),
)
RUNNER = ("render", "prepare", "backend", "judge", "record")


def run_one(
    place: str, nodes: int, args: argparse.Namespace, iteration: int, kubeconfig: Path | None
) -> float:
    """Iteration `iteration` of the (place, nodes) cell; the `kary run` command's seconds.
    Each run is a `kary run` process of its own, as a user's is; `kubeconfig` is the
    fake API server's, for the nested place."""
    command = [
        str(Path(sys.executable).with_name("kary")), "run", "--exact-nodes", str(nodes),
        "--topo", args.topo, "--sizes", args.size, "--iters", str(iteration + 1),
        "--data-dir", str(args.out / place), *PLACES[place],
    ]  # fmt: skip
    t0 = time.monotonic()
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)} if kubeconfig else None
    done = subprocess.run(
        command, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env
    )
    seconds = time.monotonic() - t0
    if done.returncode != 0:
        print(f"{place} N={nodes}: kary run exited {done.returncode}", file=sys.stderr)
        print(done.stderr.strip()[-2000:], file=sys.stderr)
    return seconds


@contextlib.contextmanager
def pods_in_a_box(out: Path) -> Iterator[Path]:
    """The fake API server with pods in a box on this machine's flux-core while the runs
    last (its threads in this process; every run is a process of its own); yields its
    kubeconfig, and stops every pod after."""
    from box_pods import PodSettings
    from fake_apiserver import FakeApiServer, FakeCluster, write_kubeconfig

    flux = shutil.which("flux")
    if flux is None:
        raise SystemExit("cell_overhead.py: nested-pods needs flux-core's `flux` on PATH")
    cluster = FakeCluster(token="kary-bench-token", flux=flux, pod_settings=PodSettings())
    with FakeApiServer(cluster) as server:
        out.mkdir(parents=True, exist_ok=True)
        try:
            yield write_kubeconfig(out / "kubeconfig", server.url, token="kary-bench-token")
        finally:
            cluster.stop_all()


def _brokers_gone(at_most_s: float = 60.0) -> float:
    """Wait until no flux-broker runs on this machine (this benchmark's are the only
    ones), or `at_most_s` passed; the seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < at_most_s and processes_mentioning("flux-broker"):
        time.sleep(0.1)
    return time.monotonic() - started


def split(spans: dict[str, float], log: str) -> dict[str, float] | None:
    """A cell's wall, Flux's steps, generation and kary's parts; None without the spans."""
    if any(name not in spans for name in RUNNER):
        return None
    steps = [r for r in kary_records(log) if r is not None and "event" in r]
    timed = [r for r in steps if isinstance(r.get("seconds"), (int, float))]
    kinds = {"generation": 0.0, "flux_steps": 0.0, "verify": 0.0, "clean": 0.0}
    for step in timed:
        kinds[_kind(step["event"])] += step["seconds"]
    flux, generation = kinds["flux_steps"], kinds["generation"]
    all_timed = sum(kinds.values())
    wall = sum(spans[name] for name in RUNNER)
    parts = {name: spans[name] for name in ("render", "prepare", "judge", "record")}
    parts.update(verify=kinds["verify"], clean=kinds["clean"])
    instance = ("instance_start", "entrypoint", "instance_stop")
    if all(name in spans for name in instance):
        parts["instance_start"] = spans["instance_start"]
        parts["instance_stop"] = spans["instance_stop"]
        parts["entrypoint_untimed"] = spans["entrypoint"] - all_timed
        parts["backend_other"] = spans["backend"] - sum(spans[n] for n in instance)
    else:  # a backend that does not stamp its instance: the call as one part
        parts["backend_other"] = spans["backend"] - all_timed
    return {
        "wall": wall,
        "flux_steps": flux,
        "generation": generation,
        "kary": wall - flux - generation,
        **parts,
    }


def _kind(event: str) -> str:
    """Which of a cell's timed steps `event` is: blob generation, kary's check of the
    copies (verify-*) or its removal of them (clean-*), else one of Flux's own steps
    (archive create, distribute, remove)."""
    if event == GENERATE_BLOB:
        return "generation"
    if event.startswith(VERIFY_PREFIX):
        return "verify"
    strategy = strategy_of(event)
    if strategy in STRATEGIES and event == strategy_events(strategy).clean:
        return "clean"
    return "flux_steps"


def samples(out: Path, place: str, nodes: int) -> list[dict[str, Any]]:
    """Every succeeded cell of (place, nodes) under `out`, split."""
    found = []
    for path in sorted((out / place).glob(f"{nodes}/**/{RECORD_NAME}")):
        record = read_record(path.parent)
        if record is None or record.state != "succeeded" or record.nodes != nodes:
            continue
        log = path.parent / LOG_NAME
        got = split(record.kary_seconds or {}, log.read_text() if log.exists() else "")
        if got is None:
            continue
        found.append(
            {
                **{k: round(v, 3) for k, v in got.items()},
                "iteration": record.iteration,
                "template_hash": record.template_hash,
                "kary_commit": record.kary_commit,
                "started": record.started,
                "finished": record.finished,
            }
        )
    return found


def _median(rows: list[dict[str, Any]], key: str) -> float | None:
    known = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(known) if known else None


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def table(data: dict[str, Any]) -> str:
    got = data["samples"]
    made = made_by(
        {
            f"{place} N={n}": [Made.of(r) for r in rows]
            for place, by_n in got.items()
            for n, rows in by_n.items()
        }
    )
    lines = [
        f"kary's overhead per cell: {data['topo']}, {data['size']}, strategy all; "
        f"flux-core {data['flux_version']}; medians over n runs",
        "",
        made,
        "",
        "| place | N | n | cell wall s | Flux steps s | generation s | kary s | kary share "
        "| kary node-s | outside the cell s (per run) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for place, by_n in got.items():
        for n, rows in by_n.items():
            outside = data.get("outside", {}).get(place, {}).get(n, [])
            if not rows:
                lines.append(f"| {place} | {n} | 0 | - | - | - | - | - | - | - |")
                continue
            shares = [r["kary"] / r["wall"] for r in rows if r["wall"] > 0]
            kary = _median(rows, "kary") or 0.0
            lines.append(
                f"| {place} | {n} | {len(rows)} | {_s(_median(rows, 'wall'))} | "
                f"{_s(_median(rows, 'flux_steps'))} | {_s(_median(rows, 'generation'))} | "
                f"{kary:.2f} | {statistics.median(shares):.0%} | {kary * int(n):.1f} | "
                f"{_s(statistics.median(outside) if outside else None)} |"
            )
    lines += [
        "",
        "kary's parts (median seconds):",
        "",
        "| place | N | " + " | ".join(label for _, label in PARTS) + " | largest |",
        "|---|---|" + "---|" * len(PARTS) + "---|",
    ]
    for place, by_n in got.items():
        for n, rows in by_n.items():
            if not rows:
                continue
            medians = {key: _median(rows, key) for key, _ in PARTS}
            largest = max((v, k) for k, v in medians.items() if v is not None)[1]
            label = dict(PARTS)[largest]
            lines.append(
                f"| {place} | {n} | "
                + " | ".join(_s(medians[key]) for key, _ in PARTS)
                + f" | {label} |"
            )
    lines.append(
        f"\nwall time {data['wall_seconds']:.0f} s; all cores busy {data['busy_share']:.0%} "
        f"of the time, {data['others_share']:.0%} with work other than this benchmark"
    )
    return "\n".join(lines)


def _flux_version() -> str:
    try:
        out = subprocess.run(["flux", "version"], capture_output=True, text=True).stdout
    except OSError:
        return "not on PATH"
    return next((ln.split()[1] for ln in out.splitlines() if ln.startswith("commands:")), "?")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--places", default=",".join(PLACES))
    parser.add_argument("--nodes", default="8,16")
    parser.add_argument("--topo", default="kary:2")
    parser.add_argument("--size", default="64M")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "data" / "cell-overhead")
    parser.add_argument("--seed", type=int, default=45)
    parser.add_argument("--json", type=Path, help="Write the samples here.")
    parser.add_argument("--from-json", type=Path, help="Print the tables of saved samples.")
    args = parser.parse_args()
    return or_refused("cell_overhead.py", lambda: _main(args))


def _main(args: argparse.Namespace) -> int:
    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        print(table(saved))
        return _missing(saved)
    places = args.places.split(",")
    unknown = [p for p in places if p not in PLACES]
    if unknown:
        print(
            f"cell_overhead.py: unknown place {unknown[0]!r}: {', '.join(PLACES)}", file=sys.stderr
        )
        return 2
    # Cells already there would be samples of another run, paired with this one's calls.
    used = [p for p in places if (args.out / p).exists() and any((args.out / p).iterdir())]
    if used:
        print(
            f"cell_overhead.py: {args.out / used[0]} holds cells: give a fresh --out",
            file=sys.stderr,
        )
        return 2
    nodes = [int(n) for n in args.nodes.split(",")]
    rng = random.Random(args.seed)
    started, meter = time.monotonic(), CpuMeter()
    run_seconds: dict[str, dict[str, list[float]]] = {
        p: {str(n): [] for n in nodes} for p in places
    }
    with contextlib.ExitStack() as stack:
        kubeconfig = None
        if "nested-pods" in places:
            kubeconfig = stack.enter_context(pods_in_a_box(args.out))
        for iteration in range(args.runs):
            visits = [(p, n) for p in places for n in nodes]
            rng.shuffle(visits)
            for place, count in visits:
                # What the run before left behind must not land in this one: a nested
                # run returns once its MiniCluster is deleted, and its pods go down
                # after, as a cluster's do.
                gone, settled = _brokers_gone(), settle()
                seconds = run_one(
                    place, count, args, iteration, kubeconfig if place == "nested-pods" else None
                )
                run_seconds[place][str(count)].append(seconds)
                print(
                    f"run {iteration + 1}/{args.runs}: {place} N={count}: {seconds:.1f} s "
                    f"(after {gone:.1f} s for brokers to go, {settled:.1f} s to settle)",
                    file=sys.stderr,
                    flush=True,
                )
    got = {p: {str(n): samples(args.out, p, n) for n in nodes} for p in places}
    # What each `kary run` spent outside its cell: its whole call less the cell's wall,
    # paired by iteration (a cell that did not succeed pairs with nothing).
    outside = {
        p: {
            n: [
                round(run_seconds[p][n][r["iteration"]] - r["wall"], 3)
                for r in rows
                if r["iteration"] < len(run_seconds[p][n])
            ]
            for n, rows in by_n.items()
        }
        for p, by_n in got.items()
    }
    data: dict[str, Any] = {
        "command": " ".join(["benchmarks/cell_overhead.py", *sys.argv[1:]]),
        "flux_version": _flux_version(),
        "topo": args.topo,
        "size": args.size,
        "nodes": nodes,
        "runs": args.runs,
        "samples": got,
        "outside": outside,
        "wall_seconds": time.monotonic() - started,
        "busy_share": meter.busy(),
        "others_share": meter.others(),
    }
    print(table(data))
    if args.json:
        args.json.write_text(json.dumps(data, indent=1) + "\n")
    return _missing(data)


def _missing(data: dict[str, Any]) -> int:
    """1 when a (place, nodes) has no sample."""
    return 1 if any(not rows for by_n in data["samples"].values() for rows in by_n.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
