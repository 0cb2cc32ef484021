"""Local real-Flux sweeps across node counts and fan-outs: history for the time model.

    .venv/bin/python benchmarks/model_sweeps.py collect --out /work/data13
    .venv/bin/python benchmarks/model_sweeps.py collect --out DIR --nodes 4,8 --iters 1

Needs flux-core's `flux` on PATH.  For each N it runs one `kary run --backend
flux --exact-nodes N` over several fan-outs (kary:1, kary:2, flat kary:0, and
kary:4 / kary:8 where they differ from flat), sizes 16M,64M, into
OUT/raw-N, then `kary parse` into OUT/parsed-N.  A sampler writes the load
average every 10 s to OUT/load.log: this machine has 2 cores and is shared, and
every figure made from these sweeps should say what the load was.

`--kary` runs another checkout's kary (e.g. a clean clone of HEAD with its own
venv: `--kary /path/to/clone/.venv/bin/kary`), so edits in a shared working
tree cannot change the template mid-sweep.

The held-out check over these sweeps is benchmarks/model_holdout.py; the
parsed tables it was last run on are kept small in benchmarks/results/.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NODES = (4, 8, 12, 16, 24, 30)
SIZES = "16M,64M"


def fanouts(nodes: int) -> list[str]:
    """kary:1, kary:2, flat, and kary:4 / kary:8 where they are not flat already."""
    topos = ["kary:1", "kary:2", "kary:0"]
    topos += [f"kary:{k}" for k in (4, 8) if k < nodes - 1]
    return topos


def _sample_load(path: Path, stop: threading.Event) -> None:
    with path.open("a") as out:
        while not stop.is_set():
            load = Path("/proc/loadavg").read_text().split()[:3]
            out.write(f"{time.time():.0f} {' '.join(load)}\n")
            out.flush()
            stop.wait(10)


def collect(out: Path, nodes: list[int], iters: int, kary: list[str]) -> int:
    out.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    sampler = threading.Thread(target=_sample_load, args=(out / "load.log", stop), daemon=True)
    sampler.start()
    worst = 0
    try:
        for n in nodes:
            topos = [arg for topo in fanouts(n) for arg in ("--topo", topo)]
            raw, parsed = out / f"raw-{n}", out / f"parsed-{n}"
            run = [*kary, "run", "--backend", "flux", "--exact-nodes", str(n), *topos]
            run += ["--sizes", SIZES, "--iters", str(iters), "--data-dir", str(raw)]
            print(f"== N={n}: {shlex.join(run)}", flush=True)
            worst = max(worst, subprocess.run(run, check=False).returncode)
            parse = [*kary, "parse", "--data", str(raw), "--out", str(parsed)]
            worst = max(worst, subprocess.run(parse, check=False).returncode)
    finally:
        stop.set()
        sampler.join()
    return worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("collect", help="run and parse the sweeps")
    run.add_argument("--out", type=Path, required=True, help="folder for raw-N, parsed-N, load.log")
    run.add_argument("--nodes", default=",".join(map(str, NODES)), help="node counts, comma list")
    run.add_argument("--iters", type=int, default=2)
    run.add_argument("--kary", default=f"{REPO / '.venv/bin/kary'}", help="the kary command")
    args = parser.parse_args(argv)
    nodes = [int(n) for n in args.nodes.split(",") if n.strip()]
    return collect(args.out, nodes, args.iters, shlex.split(args.kary))


if __name__ == "__main__":
    sys.exit(main())
