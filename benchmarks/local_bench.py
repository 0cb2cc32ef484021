"""Local benchmark figures: how fast the emulator distributes, and what a cell costs around it.

    .venv/bin/python benchmarks/local_bench.py            # the default grid
    .venv/bin/python benchmarks/local_bench.py --nodes 16 --sizes 16M --topos kary:2

1. Distribution: an emulated instance of N brokers; rank 0 archives one blob
   (`flux archive create`); the timed step is the template's own
   `flux exec -r all -x 0 sh -c '... flux archive extract ...'`.  Reported as
   seconds and aggregate MB/s delivered (N-1 copies).
2. Runner overhead per cell: `run_plan` with the local backend; overhead is
   the cell's wall time minus the sum of its timed steps (instance start,
   interpreter start-ups between steps, teardown, bookkeeping).

Every figure is the emulator's on this machine, not a cluster's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from experiments.backends.emulator import EmulatorBackend  # noqa: E402
from experiments.execution.runner import run_plan  # noqa: E402
from experiments.formats.cell_layout import format_size  # noqa: E402
from experiments.model.plan import ExperimentSpec, plan_experiment  # noqa: E402
from experiments.model.render import RenderOptions  # noqa: E402
from experiments.model.units import parse_size  # noqa: E402

EXTRACT = (
    'mkdir -p "${KARY_RANK_PREFIX:-}/tmp/x" && flux archive extract --name "$1" '
    '--waitcreate --overwrite -C "${KARY_RANK_PREFIX:-}/tmp/x"'
)


def _topos(nodes: int, wanted: list[str] | None) -> list[str]:
    if wanted:
        return wanted
    topos = [f"kary:{nodes - 1}", "kary:2"]
    if nodes - 1 > 16:
        topos.insert(1, "kary:16")
    return topos


def distribution(nodes: int, topo: str, size: int, link: str | None) -> float:
    """Seconds for one `flux exec ... flux archive extract` of a `size`-byte blob to N-1 ranks."""
    folder = Path(tempfile.mkdtemp(prefix="kb-", dir="/tmp"))
    root = folder / "i"
    cmd = [sys.executable, "-m", "experiments.emulator.instance", "--root", str(root)]
    cmd += ["--size", str(nodes), "--topo", topo]
    if link:
        cmd += ["--bandwidth", link]
    proc = subprocess.Popen(
        [*cmd, "--", "sleep", "3600"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        cwd=REPO,
    )
    try:
        assert proc.stderr is not None
        if "brokers up" not in proc.stderr.readline().decode():
            raise RuntimeError("the emulator did not start")
        env = dict(os.environ)
        env["FLUX_URI"] = f"local://{root}/sock/0"
        env["KARY_RANK_PREFIX"] = str(root / "ranks" / "0")
        env["PATH"] = f"{root / 'bin'}:{env['PATH']}"
        blob = root / "ranks" / "0" / "blob"
        subprocess.run(
            ["head", "-c", str(size), "/dev/urandom"], stdout=blob.open("wb"), check=True
        )
        rank0 = root / "ranks" / "0"
        subprocess.run(
            ["flux", "archive", "create", "-n", "b", "blob"], env=env, cwd=rank0, check=True
        )
        started = time.monotonic()
        extract = ["flux", "exec", "-r", "all", "-x", "0", "sh", "-c", EXTRACT, "x", "b"]
        subprocess.run(extract, env=env, cwd=rank0, check=True)
        return time.monotonic() - started
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
        shutil.rmtree(folder, ignore_errors=True)


def runner_overhead(nodes: int, topo: str, sizes: list[int]) -> tuple[float, float]:
    """(cell wall seconds, seconds outside timed steps) for one local cell."""
    with tempfile.TemporaryDirectory(prefix="kb-") as data:
        spec = ExperimentSpec(
            exact_nodes=nodes, topos=[topo], sizes=sizes, data_dir=Path(data), backend="local"
        )
        summary = run_plan(plan_experiment(spec), EmulatorBackend(), RenderOptions(verify=True))
        outcome = summary.outcomes[0]
        if outcome.state != "succeeded":
            raise RuntimeError(f"{outcome.cell.id}: {outcome.error}")
        return outcome.seconds, outcome.overhead_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, nargs="*", default=[4, 16, 64])
    parser.add_argument("--sizes", default="16M,64M")
    parser.add_argument("--topos", nargs="*", default=None)
    parser.add_argument("--link-bandwidth", default=None, help="e.g. 1Gbit (default: none)")
    parser.add_argument("--skip-overhead", action="store_true")
    args = parser.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",")]

    print(f"# emulator distribution ({os.cpu_count()} cores; link {args.link_bandwidth or 'none'})")
    print(f"{'nodes':>5} {'topo':>8} {'size':>5} {'seconds':>8} {'MB/s':>8}")
    for nodes in args.nodes:
        for topo in _topos(nodes, args.topos):
            for size in sizes:
                seconds = distribution(nodes, topo, size, args.link_bandwidth)
                rate = (nodes - 1) * size / seconds / 1e6
                print(f"{nodes:>5} {topo:>8} {format_size(size):>5} {seconds:>8.2f} {rate:>8.0f}")
                sys.stdout.flush()

    if args.skip_overhead:
        return
    print("\n# runner overhead per cell (local backend, verify on)")
    print(f"{'cell':>14} {'sizes':>8} {'wall s':>7} {'steps s':>8} {'overhead s':>10}")
    for nodes, topo, cell_sizes in ((4, "kary:2", [2**20]), (30, "kary:16", sizes)):
        wall, overhead = runner_overhead(nodes, topo, cell_sizes)
        label = ",".join(format_size(s) for s in cell_sizes)
        steps = wall - overhead
        print(f"{nodes:>5} {topo:>8} {label:>8} {wall:>7.2f} {steps:>8.2f} {overhead:>10.2f}")


if __name__ == "__main__":
    main()
