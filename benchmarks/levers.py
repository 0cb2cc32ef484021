"""Measure the nested layout's levers on real flux-core, on this machine (issue 23).

    PATH=$(../shared/tools/build-flux-core):$PATH python benchmarks/levers.py \
        --json benchmarks/results/levers-flux-0.88-2cores.json

Three figures the plan prices layouts with (experiments/estimate/layouts.py):

1. **Start-up of a nested instance, per node count**: inside one outer test
   instance (the MiniCluster's stand-in), `flux batch -N n --wrap true` from
   submit to the end of `flux job attach`, beside a fresh `flux start
   --test-size=n true` (what a per-cell layout pays here), interleaved.
2. **Blob generation per GB**: the template's own generator (openssl
   aes-128-ctr over /dev/zero, cut to size) writing a file.
3. **Archive create with and without `--mmap`, per GB**, and the distribution
   after it (rank 1 extracts the archive from rank 0 after every cache is
   dropped), interleaved, in a 2-broker instance.

Every figure prints its n and range, and the share of the machine's cores that
was busy while it ran (the benchmark's own work included).  All brokers share
this machine's cores: on a cluster each broker has a node of its own.

    python benchmarks/levers.py --from-json benchmarks/results/levers-flux-0.88-2cores.json
    python benchmarks/levers.py --from-json ... --markdown

replay kept samples without flux: the tables as the run printed them, then
what the plan derives from them (experiments/estimate/layouts.py: the start-up
fit, the `--mmap` ratios); `--markdown` prints the same tables as Markdown.

Under the title, what made the samples (benchmarks/provenance.py), kept in the
JSON under `made`: the kary commit of the checkout that ran them, the hash of
its entrypoint template (whose blob generator the generation figure times; the
other figures run flux-core's own commands), and the run's start and finish.
Samples kept before that say "not recorded".
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from machine_load import CpuMeter  # noqa: E402
from provenance import KEPT_BEFORE, Made, made_by  # noqa: E402

from experiments.backends.flux.outer_instance import OuterInstance  # noqa: E402
from experiments.estimate.layouts import derive_levers  # noqa: E402
from experiments.formats.run_record import now_iso  # noqa: E402
from experiments.model.render import template_hash  # noqa: E402
from experiments.model.units import parse_size  # noqa: E402
from experiments.version import kary_commit  # noqa: E402

GIB = 2**30
BLOB = (
    'openssl enc -aes-128-ctr -nosalt -pass "pass:$(head -c 32 /dev/urandom | od -An -tx1 '
    '| tr -d \' \\n\')" </dev/zero 2>/dev/null | head -c "$1" >"$2"'
)


def _env(uri: str | None = None) -> dict[str, str]:
    env = dict(os.environ, FLUX_F58_FORCE_ASCII="1")
    env.pop("FLUX_URI", None)
    if uri:
        env["FLUX_URI"] = uri
    return env


def _timed(command: list[str], env: dict[str, str], cwd: Path | None = None) -> float:
    t0 = time.monotonic()
    subprocess.run(command, env=env, cwd=cwd, check=True, capture_output=True, timeout=600)
    return time.monotonic() - t0


def nested_start(flux: str, outer: OuterInstance, nodes: int) -> float:
    """Submit-to-end of a nested instance of `nodes` brokers that runs `true`."""
    env = _env(outer.uri)
    t0 = time.monotonic()
    jobid = subprocess.run(
        [flux, "batch", f"-N{nodes}", "--broker-opts=-Stbon.topo=kary:2", "--output=kvs",
         "--wrap", "true"],
        env=env, check=True, capture_output=True, text=True, timeout=120,
    ).stdout.strip()  # fmt: skip
    subprocess.run([flux, "job", "attach", jobid], env=env, check=True, capture_output=True)
    return time.monotonic() - t0


def fresh_start(flux: str, nodes: int, scratch: Path) -> float:
    """A per-cell test instance of `nodes` brokers that runs `true`."""
    env = dict(_env(), TMPDIR=str(scratch))
    return _timed([flux, "start", f"--test-size={nodes}", "true"], env)


def generate(path: Path, size: int) -> float:
    t0 = time.monotonic()
    subprocess.run(["bash", "-c", BLOB, "blob", str(size), str(path)], check=True)
    seconds = time.monotonic() - t0
    if path.stat().st_size != size:
        raise SystemExit(f"the generator wrote {path.stat().st_size} bytes, not {size}")
    return seconds


def archive_round(flux: str, outer: OuterInstance, blob: Path, mmap: bool) -> tuple[float, float]:
    """(create, distribute) seconds of one archive of `blob`, rank 1 extracting it cold."""
    env = _env(outer.uri)
    name = f"lever-{'mmap' if mmap else 'copy'}"
    create = [flux, "archive", "create", "--name", name, "--directory", str(blob.parent)]
    create += ["--mmap"] if mmap else []
    created = _timed([*create, blob.name], env)
    target = outer.folder / "extract"
    target.mkdir()
    subprocess.run([flux, "exec", "-r", "all", "flux", "content", "dropcache"], env=env, check=True)
    extract = [flux, "exec", "-r", "1", "flux", "archive", "extract", "--name", name]
    distributed = _timed([*extract, "-C", str(target)], env)
    extracted = target / blob.name
    if extracted.stat().st_size != blob.stat().st_size:
        raise SystemExit(f"rank 1's copy of {blob.name} is short: a failed copy is no timing")
    subprocess.run([flux, "archive", "remove", "--name", name], env=env, check=True)
    shutil.rmtree(target)
    return created, distributed


def _summary(values: list[float]) -> dict[str, Any]:
    return {
        "n": len(values),
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "values": [round(v, 4) for v in values],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--nodes", default="2,4,8,16")
    parser.add_argument("--sizes", default="256M,512M,1G")
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--from-json", type=Path, help="print the tables of kept samples (no flux, no timing)"
    )
    parser.add_argument("--markdown", action="store_true", help="with --from-json: Markdown")
    args = parser.parse_args(argv)
    if args.from_json:
        kept = json.loads(args.from_json.read_text())
        print(markdown(kept) if args.markdown else f"{table(kept)}\n\n{derived(kept)}")
        return 0
    flux = shutil.which("flux")
    if flux is None:
        print("levers: flux-core's flux is not on PATH", file=sys.stderr)
        return 2
    nodes = [int(n) for n in args.nodes.split(",")]
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    rng = random.Random(args.seed)
    meter = CpuMeter()
    started, began = time.monotonic(), now_iso()
    scratch = Path(tempfile.mkdtemp(prefix="kl-", dir="/tmp"))
    results: dict[str, Any] = {"flux": flux, "cores": os.cpu_count(), "reps": args.reps}
    try:
        big = OuterInstance(flux, max(nodes), scratch / "outer", _env())
        (scratch / "outer").mkdir()
        big.start()
        nested: dict[int, list[float]] = {n: [] for n in nodes}
        fresh: dict[int, list[float]] = {n: [] for n in nodes}
        for _ in range(args.reps):
            visits = [(kind, n) for kind in ("nested", "fresh") for n in nodes]
            rng.shuffle(visits)
            for kind, n in visits:
                if kind == "nested":
                    nested[n].append(nested_start(flux, big, n))
                else:
                    fresh[n].append(fresh_start(flux, n, scratch))
        big.stop()
        results["nested_start_s"] = {str(n): _summary(v) for n, v in nested.items()}
        results["fresh_start_s"] = {str(n): _summary(v) for n, v in fresh.items()}

        pair = OuterInstance(flux, 2, scratch / "pair", _env())
        (scratch / "pair").mkdir()
        pair.start()
        blobs = scratch / "blobs"
        blobs.mkdir()
        generated: dict[int, list[float]] = {s: [] for s in sizes}
        rounds: dict[str, dict[int, list[float]]] = {
            k: {s: [] for s in sizes} for k in ("create", "create_mmap", "dist", "dist_mmap")
        }
        for _ in range(args.reps):
            for size in sizes:
                blob = blobs / f"blob-{size}"
                generated[size].append(generate(blob, size))
                modes = [False, True]
                rng.shuffle(modes)
                for mmap in modes:
                    created, distributed = archive_round(flux, pair, blob, mmap)
                    suffix = "_mmap" if mmap else ""
                    rounds["create" + suffix][size].append(created)
                    rounds["dist" + suffix][size].append(distributed)
                blob.unlink()
        pair.stop()
        results["generate_s"] = {str(s): _summary(v) for s, v in generated.items()}
        for key, per_size in rounds.items():
            results[f"{key}_s"] = {str(s): _summary(v) for s, v in per_size.items()}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    results["wall_seconds"] = round(time.monotonic() - started, 1)
    # What made them (benchmarks/provenance.py): this checkout's commit and template.
    results["made"] = {
        "template_hash": template_hash(),
        "kary_commit": kary_commit(),
        "started": began,
        "finished": now_iso(),
    }
    results["busy_share"] = round(meter.busy(), 3)
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


def table(results: dict[str, Any]) -> str:
    lines = [
        f"levers on flux-core ({results['cores']} cores, every broker on this machine); "
        f"cores busy {results['busy_share']:.0%} over {results['wall_seconds']:.0f} s; "
        f"median (min-max) of n={results['reps']} each",
        made_line(results),
        "start-up, nodes: nested in an outer instance | a fresh flux start",
    ]
    for n, nested in results["nested_start_s"].items():
        fresh = results["fresh_start_s"][n]
        lines.append(f"  {n:>3}: {_fmt(nested)} | {_fmt(fresh)}")
    lines.append("per size: generate | create | create --mmap | distribute | distribute (mmap)")
    for size, gen in results["generate_s"].items():
        cells = [gen] + [results[f"{k}_s"][size] for k in ("create", "create_mmap", "dist")]
        cells.append(results["dist_mmap_s"][size])
        gb = int(size) / GIB
        lines.append(f"  {gb:.2f} GiB: " + " | ".join(_fmt(c) for c in cells))
    return "\n".join(lines)


def made_line(results: dict[str, Any]) -> str:
    """What made the samples, or that samples kept before kary recorded it do not say."""
    made = results.get("made")
    return made_by({"levers": [Made.of(made)]}) if made else KEPT_BEFORE


def _fmt(summary: dict[str, Any]) -> str:
    return f"{summary['median']:.2f} s ({summary['min']:.2f}-{summary['max']:.2f})"


def _size(size: str) -> str:
    mib = int(size) // 2**20
    return f"{mib // 1024} GiB" if mib % 1024 == 0 else f"{mib} MiB"


def derived(results: dict[str, Any]) -> str:
    """What the plan takes from the samples (experiments/estimate/layouts.py's derive_levers)."""
    levers = derive_levers(results, "replay")
    nodes = ", ".join(map(str, levers.start_nodes))
    c, d = levers.create_mmap, levers.distribute_mmap
    both = [
        (results["create_mmap_s"][size]["median"] + results["dist_mmap_s"][size]["median"])
        / (results["create_s"][size]["median"] + results["dist_s"][size]["median"])
        for size in results["create_s"]
    ]
    at = ", ".join(
        f"x{r:.2f} at {_size(size)}" for r, size in zip(both, results["create_s"], strict=True)
    )
    return "\n".join(
        [
            "derived (experiments/estimate/layouts.py), medians:",
            f"  nested start-up fitted as {levers.start_a:.2f} s + {levers.start_b:.3f} s per "
            f"node over {nodes} nodes (n={levers.start_n} each); every median within "
            f"{levers.start_spread:.0%} of the fit",
            f"  --mmap, with / without over {c.n} sizes (median; range over every pairing of "
            f"runs): create x{c.median:.2f} ({c.low:.2f}-{c.high:.2f}), distribute "
            f"x{d.median:.2f} ({d.low:.2f}-{d.high:.2f})",
            f"  create + distribute, with / without --mmap: {at}",
            f"  generate: {levers.generate_s_per_gb:.2f} s per GiB (median over sizes)",
        ]
    )


def markdown(results: dict[str, Any]) -> str:
    """The tables as Markdown: start-up per node count, then medians per size."""
    nodes = list(results["nested_start_s"])
    first, made = table(results).splitlines()[:2]
    lines = [first, made, "", "| | " + " | ".join([f"{nodes[0]} nodes", *nodes[1:]]) + " |"]
    lines.append("|---" * (len(nodes) + 1) + "|")
    rows = (
        (
            "nested instance start-up (`flux batch -N n --wrap true` to the end of "
            "`flux job attach`)",
            results["nested_start_s"],
        ),
        ("a fresh `flux start --test-size=n true`", results["fresh_start_s"]),
    )
    for i, (name, per_nodes) in enumerate(rows):
        cells = [_fmt(per_nodes[n]) for n in nodes]
        # The unit once, on the table's first figure.
        cells = [c if (i, j) == (0, 0) else c.replace(" s (", " (") for j, c in enumerate(cells)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    kinds = ("generate", "create", "create_mmap", "dist", "dist_mmap")
    lines += [
        "",
        "| per size | generate | create | create `--mmap` | distribute | "
        "distribute after `--mmap` |",
        "|---|---|---|---|---|---|",
    ]
    for size in results["generate_s"]:
        medians = [f"{results[f'{k}_s'][size]['median']:.2f} s" for k in kinds]
        lines.append(f"| {_size(size)} | " + " | ".join(medians) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
