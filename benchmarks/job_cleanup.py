"""What a cell's nested instance spends on flux-core's job cleanup when it stops by itself.

Inside a user's allocation kary runs each cell as `flux batch -N<nodes>` and waits
for that instance's own stop; so does the nested driver where the cell's status
file is not on its node.  flux-core's rc1 has rank 0 run four Python commands at
that stop (experiments/initial_exit.py, NO_JOB_CLEANUP), which a cell's instance
(no jobs) does not need.  This times an empty batch job (`flux exec -r all true`,
then its own stop) from `flux batch` to the end of `flux job attach`, with and
without the knob, alternated in one outer test instance of --outer brokers here.
Needs flux-core on PATH.  Run: .venv/bin/python benchmarks/job_cleanup.py
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from machine_load import CpuMeter

from experiments.initial_exit import NO_JOB_CLEANUP

# Runs in the outer instance: prints "<label> <milliseconds>" per batch job, alternated.
_ROUNDS = """\
set -eu
for round in $(seq {runs}); do
  for label in with-cleanup without; do
    extra=""; [ "$label" = without ] && extra="--env={knob}"
    start=$(date +%s%N)
    id=$(flux batch -N{nodes} $extra --output=kvs {inner})
    flux job attach "$id" >/dev/null  # a job that failed ends the run (set -e): no timing
    echo "$label $(( ($(date +%s%N) - start) / 1000000 ))"
  done
done
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4, help="brokers of each batch job")
    parser.add_argument("--outer", type=int, default=4, help="brokers of the outer instance")
    parser.add_argument("--runs", type=int, default=5, help="jobs of each kind, alternated")
    args = parser.parse_args()
    flux = shutil.which("flux")
    if flux is None:
        sys.exit("job_cleanup.py: needs flux-core's `flux` on PATH")
    if args.nodes > args.outer:
        sys.exit("job_cleanup.py: --nodes must not exceed --outer")
    with tempfile.TemporaryDirectory(prefix="kary-cleanup-") as folder:
        inner = Path(folder) / "inner.sh"
        inner.write_text("#!/bin/bash\nflux exec -r all true\n")
        inner.chmod(0o755)
        rounds = Path(folder) / "rounds.sh"
        rounds.write_text(
            _ROUNDS.format(runs=args.runs, knob=NO_JOB_CLEANUP, nodes=args.nodes, inner=inner)
        )
        meter = CpuMeter()
        done = subprocess.run(
            [flux, "start", f"--test-size={args.outer}", "bash", str(rounds)],
            capture_output=True,
            text=True,
            cwd=folder,
        )
        others = meter.others()
    if done.returncode != 0:
        sys.exit(f"job_cleanup.py: the outer instance exited {done.returncode}: {done.stderr}")
    seconds: dict[str, list[float]] = {"with-cleanup": [], "without": []}
    for line in done.stdout.splitlines():
        label, value = line.split()
        seconds[label].append(int(value) / 1000)
    print(
        f"flux batch -N{args.nodes} in a {args.outer}-broker test instance, {args.runs} "
        f"jobs each, alternated; other work on the machine: {others:.0%} of its cores"
    )
    for label, values in seconds.items():
        shown = " ".join(f"{v:.2f}" for v in values)
        print(f"  {label:<13} median {statistics.median(values):.2f} s  (n={len(values)}: {shown})")
    saved = statistics.median(seconds["with-cleanup"]) - statistics.median(seconds["without"])
    print(f"  {NO_JOB_CLEANUP} saves {saved:.2f} s a cell (medians), on each of its nodes")


if __name__ == "__main__":
    main()
