"""Snapshot what kary writes and prints for fixed inputs, so a refactor can show it changed
nothing: run it on the code before and after, then diff the two snapshots.

    git worktree add /tmp/kary-before <commit>
    python benchmarks/same_outputs.py snapshot --checkout /tmp/kary-before --out /tmp/same/before
    python benchmarks/same_outputs.py snapshot --checkout . --out /tmp/same/after
    python benchmarks/same_outputs.py diff /tmp/same/before /tmp/same/after

`--checkout` is whose code runs (PYTHONPATH points at it; this script's own
Python supplies the libraries).  Every step runs in one fixed scratch folder,
so paths printed into outputs are the same for both snapshots.  A snapshot holds:

- `kary parse` of the reference trees (../shared) and of one emulated raw tree
  (made once with --make-raw and kept, so both sides parse the same bytes), then
  `kary compare` and `kary report` over them: every file, byte for byte, but
  the report's generation time;
- `kary plan` and `kary plan --json` of a set of sweeps (emulator, real Flux in
  a test instance and a box, nested, EKS and GKE clusters with history), and the
  one-line errors of sweeps that must be refused: stdout, stderr, exit code;
- `kary render` of one cell;
- with --runs: a cell run on each backend this machine has (the emulator; with
  flux-core, a test instance, the nested layout and a box), each run.json with
  its measurements replaced by their type (times differ between runs; the
  keys, states, places and settings must not).

Exit 0 when `diff` finds the snapshots identical, 1 otherwise (the differences listed).
"""

from __future__ import annotations

import argparse
import filecmp
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("KARY_SHARED", REPO.parent / "shared"))
REFERENCE = SHARED / "reference" / "flux-distribute"
SCRATCH = Path("/tmp/kary-same-outputs")
REFERENCE_TREES = ("raw-eks-exact-6", "raw-gke-max-6", "raw-kind", "raw-ping-kind")

HISTORY = REFERENCE / "parsed-eks-exact-6"
# (name, arguments of `kary plan`, or of `kary run` where they start with "run": faults are
# run's flags): each is planned as text and as --json.
PLANS = [
    ("emulator", "--backend local --exact-nodes 8 --topo kary:2 --sizes 16M"),
    (
        "emulator-links",
        "--backend local --exact-nodes 8 --topo kary:1 --topo kary:2 "
        "--sizes 16M,64M --link-bandwidth 100Mbit --link-latency 1ms",
    ),
    (
        "emulator-faults",
        "run --dry-run --exact-nodes 4 --topo kary:2 --sizes 16M "
        "--emulator-fault corrupt:1 --emulator-fault kill:2:3",
    ),
    (
        "test-instance",
        "--backend flux --place test-instance --exact-nodes 6 --topo kary:2 "
        "--topo binomial --sizes 16M --iters 2",
    ),
    (
        "nested",
        "--backend flux --place test-instance --layout nested --exact-nodes 6 "
        "--topo kary:2 --sizes 16M,32M",
    ),
    (
        "box",
        "--backend flux --exact-nodes 16 --topo kary:1 --topo kary:15 --sizes 64M "
        "--link-bandwidth 100Mbit",
    ),
    (
        "box-root",
        "--backend flux --exact-nodes 8 --topo kary:2 --sizes 64M "
        "--link-bandwidth 100Mbit --root-link-bandwidth 1Gbit",
    ),
    (
        "box-groups",
        "--backend flux --exact-nodes 8 --topo kary:2 --sizes 16M "
        "--link-bandwidth 200Mbit --group-size 4 --group-link-bandwidth 25Mbit",
    ),
    (
        "eks-30",
        "--cluster clusters/eks-30.yaml --exact-nodes 30 --min-size 1 --max-size 10 "
        f"--iters 1 --history {HISTORY}",
    ),
    (
        "eks-6-per-cell",
        "--cluster clusters/eks-6.yaml --exact-nodes 6 --min-size 1 "
        "--max-size 4 --iters 3 --layout per-cell",
    ),
    ("gke-30", "--cluster clusters/gke-30.yaml --max-nodes 8 --sizes 1G --iters 2"),
    ("sweep-file", "study.yaml"),
    # Refused: each must stay one line and exit 2.
    ("bad-bandwidth", "--backend local --exact-nodes 4 --link-bandwidth fast"),
    ("bad-latency", "--backend flux --exact-nodes 4 --link-latency 1fortnight"),
    ("bad-fault", "run --dry-run --exact-nodes 4 --emulator-fault melt:1"),
    ("fault-rank", "run --dry-run --exact-nodes 4 --emulator-fault corrupt:9"),
    (
        "fault-twice",
        "run --dry-run --exact-nodes 4 --emulator-fault corrupt:1 --emulator-fault corrupt:1",
    ),
    ("fault-flux", "run --dry-run --backend flux --exact-nodes 4 --emulator-fault corrupt:1"),
    ("bad-place", "--backend flux --exact-nodes 4 --place moon"),
    ("place-local", "--backend local --exact-nodes 4 --place box"),
    ("allocation-no-uri", "--backend flux --exact-nodes 4 --place allocation"),
    (
        "shaped-test-instance",
        "--backend flux --exact-nodes 4 --place test-instance --link-bandwidth 1Gbit",
    ),
    ("shaped-cluster", "--cluster clusters/eks-6.yaml --exact-nodes 4 --link-bandwidth 1Gbit"),
    ("root-local", "--backend local --exact-nodes 4 --root-link-bandwidth 1Gbit"),
    ("group-half", "--backend flux --exact-nodes 4 --group-size 2"),
    ("group-zero", "--backend flux --exact-nodes 4 --group-size 0 --group-link-bandwidth 1Gbit"),
    ("group-local", "--backend local --exact-nodes 4 --group-size 2 --group-link-bandwidth 1Gbit"),
    ("nested-box", "--backend flux --exact-nodes 4 --layout nested --link-bandwidth 1Gbit"),
    ("nested-local", "--backend local --exact-nodes 4 --layout nested"),
    ("bad-layout", "--backend flux --exact-nodes 4 --layout sideways"),
    ("bad-backend", "--backend cloud9 --exact-nodes 4"),
    ("bad-size", "--backend local --exact-nodes 4 --sizes 12Q"),
]

# (name, arguments of `kary run`, needs flux-core): one small cell each.
RUNS = [
    ("emulator", "--backend local --exact-nodes 4 --topo kary:2 --sizes 4M", False),
    (
        "emulator-links",
        "--backend local --exact-nodes 4 --topo kary:1 --sizes 4M --link-bandwidth 1Gbit",
        False,
    ),
    (
        "test-instance",
        "--backend flux --place test-instance --exact-nodes 4 --topo kary:2 --sizes 4M",
        True,
    ),
    (
        "nested",
        "--backend flux --place test-instance --layout nested --exact-nodes 3 "
        "--topo kary:1 --topo kary:2 --sizes 4M",
        True,
    ),
    ("box", "--backend flux --exact-nodes 4 --topo kary:1 --sizes 4M --link-bandwidth 1Gbit", True),
]
# On the tests' fake API server (its operator runs MiniClusters on flux-core when present).
KUBERNETES_RUNS = [
    (
        "kubernetes-nested",
        "--backend kubernetes --exact-nodes 3 --topo kary:1 --topo kary:2 --sizes 4M --yes",
    ),
    (
        "kubernetes-per-cell",
        "--backend kubernetes --layout per-cell --exact-nodes 3 --topo kary:2 --sizes 4M --yes",
    ),
]
# The README's sweep file.
_STUDY = """name: chunk-study
matrix:
  nodes: [4, 6]
  topo: [kary:1, kary:2]
  chunksize: [256K, 1M]
zip: {}
sizes: [16M]
strategies: [all]
iterations: 2
backend: local
"""
# An emulated raw tree to parse on both sides (make-raw).
MAKE_RAW = (
    "--backend local --exact-nodes 6 --topo kary:1 --topo kary:2 --topo binomial "
    "--sizes 8M,16M --iters 2"
)

# run.json keys whose values are measurements or moments: kept as their type only.
_VOLATILE = {
    "started",
    "finished",
    "created",
    "duration_seconds",
    "wall_seconds",
    "start_seconds",
    "jobid",
    "hosts",
    "run_id",
    "link_bytes",
    "messages",
    "cluster",
    "addresses",
    "name",
    "sweep_id",
    "calibration",
    "emulator_source",
    "cpu_costs_ms_per_mib",
    "template_sha256",
    "flux_uri",
    "cores",
    "image_digest",
    "predicted_seconds",
    "seed",
    "bottleneck",
    "minicluster",
    "sweep",
}
# A MiniCluster's random name suffix and the sweep id it is labelled with.
_MANIFEST_IDS = re.compile(r"(-[0-9a-f]{8}\b|kary/sweep: \S+)")
# Keys a nested Kubernetes cell has or lacks by when kary looked: rank 0's container has
# ended (it carries an exit code) by the group's last cell, and maybe by an earlier one.
_RACY = {"container_exit_code"}
_TIMESTAMP = re.compile(
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?|\d{4}-\d\d-\d\d \d\d:\d\d UTC"
)


def _kary(
    checkout: Path, args: list[str], cwd: Path, log: Path, env: dict[str, str] | None = None
) -> None:
    """Run `kary ARGS` with `checkout`'s code; keep stdout, stderr and the exit code."""
    env = dict(env or os.environ, PYTHONPATH=str(checkout.resolve()), COLUMNS="100", NO_COLOR="1")
    env.pop("FLUX_URI", None)
    done = subprocess.run(
        [sys.executable, "-c", "from experiments.cli import main; main()", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(
        f"$ kary {' '.join(args)}\nexit {done.returncode}\n--- stdout\n{done.stdout}"
        f"--- stderr\n{done.stderr}"
    )


def _normalise_text(text: str) -> str:
    return _TIMESTAMP.sub("<time>", text)


def _shape(value: Any, key: str = "") -> Any:
    """run.json with measurements replaced by their type name."""
    if key in _VOLATILE:
        return f"<{type(value).__name__}>"
    if isinstance(value, dict):
        return {k: _shape(v, k) for k, v in sorted(value.items()) if k not in _RACY}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    if isinstance(value, float):
        return "<float>"
    return value


def snapshot(checkout: Path, out: Path, raw: Path | None, runs: bool, flux: bool) -> None:
    checkout = checkout.resolve()
    if SCRATCH.exists():
        shutil.rmtree(SCRATCH)
    work = SCRATCH / "work"
    work.mkdir(parents=True)
    # The clone's files a plan names (clusters/, examples/) come from the checkout.
    for folder in ("clusters", "designs"):
        shutil.copytree(checkout / folder, work / folder)
    (work / "study.yaml").write_text(_STUDY)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    trees = {name: REFERENCE / name for name in REFERENCE_TREES}
    if raw is not None:
        shutil.copytree(raw, work / "raw-emulated")
        trees["raw-emulated"] = work / "raw-emulated"
    for name, tree in trees.items():
        _kary(
            checkout,
            ["parse", "--data", str(tree), "--out", f"parsed/{name}"],
            work,
            out / "logs" / f"parse-{name}.txt",
        )
    parsed = sorted(trees)
    for before, after in itertools.pairwise(parsed):
        _kary(
            checkout,
            ["compare", f"parsed/{before}", f"parsed/{after}"],
            work,
            out / "logs" / f"compare-{before}-{after}.txt",
        )
    _kary(
        checkout,
        ["report", *(f"parsed/{n}" for n in parsed), "--out", "report.html"],
        work,
        out / "logs" / "report.txt",
    )
    for name, text in PLANS:
        args = shlex.split(text)
        command = args if args[0] == "run" else ["plan", *args]
        _kary(checkout, [*command, "--data-dir", "plans"], work, out / "plan" / f"{name}.txt")
        _kary(
            checkout,
            [*command, "--data-dir", "plans", "--json"],
            work,
            out / "plan" / f"{name}.json.txt",
        )
    _kary(
        checkout,
        ["render", "--nodes", "30", "--topo", "kary:16", "--sizes", "512M,2G", "--out", "render"],
        work,
        out / "logs" / "render.txt",
    )
    if runs:
        for name, text, needs_flux in RUNS:
            if needs_flux and not flux:
                continue
            _kary(
                checkout,
                ["run", *shlex.split(text), "--data-dir", f"runs/{name}", "--iters", "1"],
                work,
                out / "runs" / f"{name}.txt",
            )
        _kubernetes_runs(checkout, work, out, flux)
    # Keep what was written, normalised.
    for path in sorted(p for p in work.rglob("*") if p.is_file()):
        rel = path.relative_to(work)
        if rel.parts[0] in ("clusters", "designs", "raw-emulated", "study.yaml") or (
            rel.name.startswith("kubeconfig-")
        ):
            continue
        target = out / "files" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if rel.parts[0] == "runs":
            if path.name == "run.json":
                shaped = _shape(json.loads(path.read_text()))
                target.write_text(json.dumps(shaped, indent=1, sort_keys=True) + "\n")
            elif path.suffix == ".yaml":
                target.write_text(_MANIFEST_IDS.sub("<id>", path.read_text()))
            continue  # the logs of a run hold its timings
        if path.suffix in (".png",):
            shutil.copyfile(path, target)  # plots: drawn from the same numbers, same bytes
        elif path.name == "report.html":
            target.write_text(_normalise_text(path.read_text()))
        else:
            shutil.copyfile(path, target)
    for log in (out / "logs").glob("*.txt"):
        log.write_text(_normalise_text(log.read_text()))
    # A run's own lines hold its timings: keep the command, its exit code and their words.
    for log in (out / "runs").glob("*.txt") if (out / "runs").exists() else []:
        head, *lines = log.read_text().splitlines()
        masked = [re.sub(r"[0-9]+(\.[0-9]+)?", "#", line) for line in lines[1:]]
        log.write_text("\n".join([head, lines[0], *masked]) + "\n")


def _kubernetes_runs(checkout: Path, work: Path, out: Path, flux: bool) -> None:
    """Run KUBERNETES_RUNS against the checkout's own fake API server on 127.0.0.1."""
    for folder in ("tests/kubernetes", "tests", "."):
        sys.path.insert(0, str(checkout / folder))
    from fake_apiserver import FakeApiServer, FakeCluster, write_kubeconfig

    for name, text in KUBERNETES_RUNS:
        cluster = FakeCluster(token="kary-test-token", flux=shutil.which("flux") if flux else None)
        with FakeApiServer(cluster) as server:
            config = write_kubeconfig(work / f"kubeconfig-{name}", server.url)
            env = dict(os.environ, KUBECONFIG=str(config), KARY_OWNER="same-outputs")
            _kary(
                checkout,
                ["run", *shlex.split(text), "--data-dir", f"runs/{name}", "--iters", "1"],
                work,
                out / "runs" / f"{name}.txt",
                env,
            )


def make_raw(checkout: Path, raw: Path) -> None:
    """An emulated raw tree to parse on both sides: 3 topologies x 2 iterations, 2 sizes."""
    if raw.exists():
        raise SystemExit(f"same_outputs: {raw} exists: keep it, or remove it first")
    raw.parent.mkdir(parents=True, exist_ok=True)
    args = [*shlex.split(MAKE_RAW), "--data-dir", str(raw.resolve())]
    _kary(checkout, ["run", *args], REPO, raw.parent / "make-raw.txt")


def diff(before: Path, after: Path) -> int:
    report = filecmp.dircmp(before, after)
    problems: list[str] = []

    def walk(cmp: filecmp.dircmp[str], where: Path) -> None:
        problems.extend(f"only before: {where / n}" for n in cmp.left_only)
        problems.extend(f"only after: {where / n}" for n in cmp.right_only)
        for name in cmp.common_files:
            if (before / where / name).read_bytes() != (after / where / name).read_bytes():
                problems.append(f"differs: {where / name}")
        for name, sub in cmp.subdirs.items():
            walk(sub, where / name)

    walk(report, Path())
    files = sum(1 for p in after.rglob("*") if p.is_file())
    for line in problems:
        print(line)
    print(f"{files} files compared; {len(problems)} differ or are on one side only")
    return 1 if problems else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    snap = commands.add_parser("snapshot", help="run the fixed inputs through a checkout")
    snap.add_argument("--checkout", type=Path, default=REPO)
    snap.add_argument("--out", type=Path, required=True)
    snap.add_argument("--raw", type=Path, help="an emulated raw tree to parse too (--make-raw)")
    snap.add_argument("--runs", action="store_true", help="also run a cell per backend here")
    make = commands.add_parser("make-raw", help="make the emulated raw tree, once")
    make.add_argument("--checkout", type=Path, default=REPO)
    make.add_argument("raw", type=Path)
    compare = commands.add_parser("diff", help="compare two snapshots")
    compare.add_argument("before", type=Path)
    compare.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "make-raw":
        make_raw(args.checkout, args.raw)
        return 0
    if args.command == "diff":
        return diff(args.before, args.after)
    snapshot(args.checkout, args.out, args.raw, args.runs, shutil.which("flux") is not None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
