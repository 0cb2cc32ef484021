"""Fidelity: the same cells on real Flux (a test instance here) and on kary's emulator.

    .venv/bin/python benchmarks/fidelity.py         # N 8,16; K 1,2,4,N-1; 64M,256M; 3 iters
    .venv/bin/python benchmarks/fidelity.py --nodes 8 --sizes 64M --iters 1   # a quick look
    .venv/bin/python benchmarks/fidelity.py --json fidelity.json      # keep the samples
    .venv/bin/python benchmarks/fidelity.py --emulator-scale 4 ...    # must exit 1

Needs flux-core's `flux` on PATH.  Each iteration visits every (N, K) in a
shuffled order and runs the cell on both backends back to back (real Flux
first on odd iterations, the emulator first on even ones), so drift in the
machine's load hits both alike.  The cell is the rendered entrypoint, strategy
`all`, verify on; the timed step compared is `distribute-all-nodes` (a cold
`flux exec -r all -x 0 ... flux archive extract`).  A step that failed, a void
one (a precondition its line names, or no cold-cache record before it showing every
rank's cache empty: experiments/formats/kary_line.py) and one whose copy failed
verification is not a sample; the table says n.

Printed: per cell the two medians, their ratio (emulator / real) and n; per
(N, size) real Flux's winner and the emulator's, each by the one rule of
analysis/tables/stats.py `find_winner` (the fastest by median, where Mann-Whitney
gives p < 0.05 against every other topology with at least 3 runs a side; else a
tie or unsure, said with its p), and the Spearman rank correlation of the
topologies' order.  Real Flux is the reference: where it names no winner there is
"no winner to agree on" (said, not counted); where it names one, the emulator
agrees only by naming the same one.  Exit status 1 when a cell is outside x1.5 or
the emulator does not name real Flux's winner; 0 otherwise.  The samples carry no
cpu_bound (a test instance's cells are never shaped), so no cell is marked so.

Under the title, per place (real Flux, the emulator), what made its samples
(benchmarks/provenance.py): the template hash of the entrypoint each cell was
rendered from, the kary commit that ran it, the first start to the last finish.
The cells run here without kary's runner, so no run.json is written: the JSON
keeps the same facts per cell run under `runs` (the ones the runner would
record).  Samples kept before that say "not recorded" for all three.  Samples
of more than one template hash or kary commit make no table: the JSON is
written first, then one line on stderr names them, exit status 2.
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
sys.path.insert(0, str(REPO / "benchmarks"))  # provenance.py, when loaded from elsewhere

from provenance import KEPT_BEFORE, Made, check_one_source, describe, or_refused, summarize  # noqa: E402

from analysis.tables.stats import find_winner  # noqa: E402
from experiments.backends.base import Backend  # noqa: E402
from experiments.backends.emulator import EmulatorBackend  # noqa: E402
from experiments.backends.flux import FluxBackend  # noqa: E402
from experiments.emulator.calibration import FidelityKey, record_fidelity  # noqa: E402
from experiments.formats.cell_layout import format_size  # noqa: E402
from experiments.formats.events import strategy_events  # noqa: E402
from experiments.formats.kary_line import step_timings  # noqa: E402
from experiments.formats.run_record import now_iso  # noqa: E402
from experiments.model.places import flux_on_path  # noqa: E402
from experiments.model.plan import Cell  # noqa: E402
from experiments.model.render import RenderOptions, render_cell  # noqa: E402
from experiments.model.units import parse_size  # noqa: E402
from experiments.version import kary_commit  # noqa: E402

# The cells run one strategy; the timing compared is its (single) distribution.
STRATEGY = "all"
EVENT = strategy_events(STRATEGY).distribute_event()
TOLERANCE = 1.5
# The places a cell runs, as the JSON keys them and as the table names them.
PLACES = {"flux": "real Flux", "local": "emulator"}


def _topos(nodes: int, wanted: list[str]) -> list[str]:
    out = []
    for topo in wanted:
        topo = topo.replace("N-1", str(nodes - 1))
        if topo not in out:
            out.append(topo)
    return out


def run_cell(
    backend: Backend, nodes: int, topo: str, sizes: list[int]
) -> tuple[dict[str, float], dict[str, Any]]:
    """{size label: distribute seconds} for the sizes whose distribution and verify
    succeeded; and what made the run, as the runner would record it in run.json (the
    rendered entrypoint's template hash, this checkout's kary commit, its start and finish)."""
    cell = Cell(nodes, topo, 0, tuple(sizes), (STRATEGY,))
    rendered = render_cell(
        nodes, topo, sizes, [STRATEGY], cell.id, RenderOptions(verify=True)
    )  # fmt: skip
    started = now_iso()
    result = backend.run(cell, rendered, timeout=1800)
    made = {
        "template_hash": rendered.template_hash,
        "kary_commit": kary_commit(),
        "started": started,
        "finished": now_iso(),
    }
    return distribution_samples(result.log), made


def distribution_samples(log: str) -> dict[str, float]:
    """{size label: distribute seconds} of a cell's log: a size whose distribution or verify
    is no timing (failed, void, or without a shown cold cache) gives no sample."""
    timings = step_timings(log)
    spoiled = {str(s.get("size")) for s, why in timings if why is not None}
    return {
        str(s["size"]): float(s["seconds"])
        for s, why in timings
        if s.get("event") == EVENT and str(s.get("size")) not in spoiled
    }


def spearman(a: list[float], b: list[float]) -> float | None:
    if len(a) < 3:
        return None
    from scipy.stats import spearmanr

    rho = spearmanr(a, b).statistic
    return None if rho != rho else float(rho)


def measure(args: argparse.Namespace) -> tuple[dict[str, Any], FidelityKey, dict[str, object]]:
    """The samples; and which emulator they are of, with the calibration it ran with."""
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    nodes_list = [int(n) for n in args.nodes.split(",")]
    cells = [(n, t) for n in nodes_list for t in _topos(n, args.topos.split(","))]
    real, emulated = FluxBackend(), EmulatorBackend(cpu_scale=args.emulator_scale)
    samples: dict[str, dict[str, list[float]]] = {"flux": {}, "local": {}}
    runs: dict[str, list[dict[str, Any]]] = {"flux": [], "local": []}
    rng = random.Random(args.seed)
    started = time.monotonic()
    with real, emulated:
        for iteration in range(args.iters):
            order = cells[:]
            rng.shuffle(order)
            for nodes, topo in order:
                pair = [("flux", real), ("local", emulated)]
                if iteration % 2:
                    pair.reverse()
                for name, backend in pair:
                    got, made = run_cell(backend, nodes, topo, sizes)
                    for label, seconds in got.items():
                        samples[name].setdefault(f"{nodes}|{topo}|{label}", []).append(seconds)
                    cell = {"cell": f"{nodes}|{topo}", "iteration": iteration, "samples": [*got]}
                    runs[name].append({**cell, **made})
                    print(
                        f"  iter {iteration} {name:5} {nodes:3} {topo:8} "
                        + " ".join(f"{k} {v:.2f}s" for k, v in got.items()),
                        file=sys.stderr,
                        flush=True,
                    )
    key = emulated.fidelity_key(real.flux_version)
    data = {
        "flux_version": real.flux_version,
        "sizes": [format_size(s) for s in sizes],
        "nodes": nodes_list,
        "cells": [[n, t] for n, t in cells],
        "iters": args.iters,
        "emulator_scale": args.emulator_scale,
        "seconds": round(time.monotonic() - started, 1),
        "samples": samples,
        "runs": runs,
    }
    return data, key, emulated.calibration().record()


def made_lines(data: dict[str, Any]) -> list[str]:
    """Per place, what made the runs its samples came from (those that gave one);
    MixedRuns when they recorded more than one template hash or kary commit."""
    runs = data.get("runs")
    if runs is None:
        return [KEPT_BEFORE]
    made = {
        name: summarize(Made.of(run) for run in runs.get(place, []) if run.get("samples"))
        for place, name in PLACES.items()
    }
    check_one_source(made)
    return [f"{name}: made by {describe(m)}" for name, m in made.items()]


def table(data: dict[str, Any]) -> str:
    """The tables of `data`; MixedRuns when its runs came from more than one source."""
    samples = data["samples"]
    lines = [
        f"fidelity: emulator vs flux-core {data['flux_version']} (test instance), "
        f"{EVENT}, medians of {data['iters']} iteration(s); ratio = emulator / real",
        *made_lines(data),
        "",
        "| N | topology | size | real (s) | emulator (s) | ratio | n real/emu | within x1.5 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[int, str], list[tuple[str, float | None, float | None]]] = {}
    within = total = 0
    for nodes, topo in data["cells"]:
        for label in data["sizes"]:
            key = f"{nodes}|{topo}|{label}"
            r, e = samples["flux"].get(key, []), samples["local"].get(key, [])
            rm = statistics.median(r) if r else None
            em = statistics.median(e) if e else None
            groups.setdefault((nodes, label), []).append((topo, rm, em))
            ratio = em / rm if rm and em else None
            ok = ratio is not None and 1 / TOLERANCE <= ratio <= TOLERANCE
            total += 1
            within += ok
            lines.append(
                f"| {nodes} | {topo} | {label} | {_num(rm)} | {_num(em)} | "
                f"{_num(ratio)} | {len(r)}/{len(e)} | {'yes' if ok else 'NO'} |"
            )
    lines += ["", "| N | size | fastest, real | fastest, emulator | agree | Spearman rho |"]
    lines.append("|---|---|---|---|---|---|")
    agreed = disagreed = undecided = 0
    for (nodes, label), rows in groups.items():
        both = [(t, r, e) for t, r, e in rows if r is not None and e is not None]
        if not both:
            continue
        real_samples = {t: samples["flux"][f"{nodes}|{t}|{label}"] for t, _, _ in both}
        emu_samples = {t: samples["local"][f"{nodes}|{t}|{label}"] for t, _, _ in both}
        real_best, emu_best = find_winner(real_samples), find_winner(emu_samples)
        rho = spearman([r for _, r, _ in both], [e for _, _, e in both])  # type: ignore[misc]
        if real_best.name is None:
            # Real Flux cannot tell its topologies apart: there is nothing to agree on,
            # and counting any answer as agreement would make the check unable to fail.
            undecided += 1
            verdict = "no winner to agree on"
        else:
            # The emulator agrees by naming real Flux's winner; a tie there misses it.
            agree = real_best.name == emu_best.name
            agreed += agree
            disagreed += not agree
            verdict = "yes" if agree else "NO"
        lines.append(
            f"| {nodes} | {label} | {real_best.text} | {emu_best.text} | {verdict} | "
            f"{'n/a' if rho is None else f'{rho:+.2f}'} |"
        )
    lines += [
        "",
        f"cells within x{TOLERANCE:g}: {within}/{total}; same fastest topology: {agreed} of "
        f"{agreed + disagreed} where real Flux has one ({undecided} without a winner); "
        f"wall time {data['seconds']:.0f} s",
        summary_line(data),
    ]
    data["failures"] = (total - within) + disagreed
    return "\n".join(lines) + "\n"


def summary_line(data: dict[str, Any]) -> str:
    """The median ratio over cells, and real Flux's seconds per GiB per receiving rank."""
    ratios, per_rank = [], []
    for nodes, topo in data["cells"]:
        for label in data["sizes"]:
            key = f"{nodes}|{topo}|{label}"
            real, emulated = data["samples"]["flux"].get(key), data["samples"]["local"].get(key)
            if real:
                gib_to_ranks = parse_size(label) / 2**30 * (nodes - 1)
                per_rank.append(statistics.median(real) / gib_to_ranks)
            if real and emulated:
                ratios.append(statistics.median(emulated) / statistics.median(real))
    if not ratios or not per_rank:
        return "median ratio: n/a (no cell has both real and emulated samples)"
    return (
        f"median ratio (emulator / real) {statistics.median(ratios):.2f} over {len(ratios)} "
        f"cells ({min(ratios):.2f}-{max(ratios):.2f}); real Flux "
        f"{statistics.median(per_rank):.2f} s per GiB per receiving rank (median over "
        f"{len(per_rank)} cells, {min(per_rank):.2f}-{max(per_rank):.2f})"
    )


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="8,16")
    parser.add_argument("--topos", default="kary:1,kary:2,kary:4,kary:N-1")
    parser.add_argument("--sizes", default="64M,256M")
    parser.add_argument("--iters", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--emulator-scale",
        type=float,
        default=1.0,
        help="mis-calibrate the emulator on purpose: its CPU costs x this (the check must fail)",
    )
    parser.add_argument("--json", type=Path, help="write the samples here")
    parser.add_argument("--from-json", type=Path, help="print the table of saved samples")
    args = parser.parse_args()
    return or_refused("fidelity.py", lambda: _main(args))


def _main(args: argparse.Namespace) -> int:
    if args.from_json:
        data = json.loads(args.from_json.read_text())
        print(table(data), end="")
        return 1 if data["failures"] else 0
    if flux_on_path() is None:
        print(
            "fidelity: needs flux-core's `flux` on PATH (docs/running.md, 'Real Flux')",
            file=sys.stderr,
        )
        return 2
    data, key, calibration = measure(args)
    # Kept before the table: runs it refuses are still measurements to look into.
    if args.json:
        args.json.write_text(json.dumps(data, indent=1) + "\n")
    text = table(data)
    print(text, end="")
    # What every emulated cell of this emulator (machine, source, costs, scale) now says
    # of itself, kept under its key beside the others' (emulator/calibration.py).
    summary = text.strip().splitlines()[-1]
    when = time.strftime("%Y-%m-%d", time.gmtime())
    scaled = f" --emulator-scale {args.emulator_scale:g}" if args.emulator_scale != 1.0 else ""
    record_fidelity(
        f"on this machine ({when}), against flux-core {data['flux_version']}: {summary} "
        f"(benchmarks/fidelity.py --nodes {args.nodes} --sizes {args.sizes} "
        f"--iters {args.iters}{scaled})",
        key,
        calibration,
    )
    # A check that cannot fail checks nothing: a cell outside x1.5, or a winner
    # real Flux names and the emulator does not, fails the run.
    return 1 if data["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
