"""Does the time model predict box cells it never saw?  The protocol is fixed in a file.

    .venv/bin/python benchmarks/box_model_holdout.py          # benchmarks/box_model_protocol.json
    .venv/bin/python benchmarks/box_model_holdout.py --protocol \
        benchmarks/box_model_protocol_v2.json                  # the second, between sweeps

For each protocol in the file: fit the network terms (experiments/estimate/
box_network.py) on the `fit` sweeps, predict every run of the `predict` sweeps,
and print per cell the actual median against the prediction and its 80%
interval, how many runs fell inside, and what the plan's stated defaults
(flux test-instance CPU costs plus store-and-forward links, no fit) predicted
for the same cells.  The sweeps are parsed directories kept small under
benchmarks/results/box-sweeps/ (made by benchmarks/box_topologies.py, as the
protocol file says).  Exit status 1 when a protocol falls short of its pass rule.

Every ratio is actual / predicted (the fit's band, each cell's median, the
range over cells, the stated defaults'), so above 1 means the box ran slower
than predicted.  Each protocol also says when its file was first committed
(git) and how many of the runs it fits and predicts started before that (each
run's `started` in runs.csv): a protocol is only as held out as its commit is
older than its sweeps.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from experiments.estimate.box_network import (  # noqa: E402
    RESIDUALS,
    BoxObservation,
    fit_box_network,
    load_box_observations,
)
from experiments.estimate.defaults import default_time_model  # noqa: E402
from experiments.estimate.parameters import GIB  # noqa: E402
from experiments.estimate.plan_estimate import with_emulated_links  # noqa: E402
from experiments.model.links import link_settings  # noqa: E402
from experiments.model.topology import build_tree  # noqa: E402
from experiments.version import git_text, shallow_clone  # noqa: E402

PASS_SHARE = 0.7


def default_prediction(o: BoxObservation) -> float:
    """The plan's distribute seconds from its stated defaults on these links (no fit)."""
    links = link_settings(f"{o.bandwidth * 8:.0f}bit", None)
    model = with_emulated_links(default_time_model("flux", place="box"), links)
    tree = build_tree(o.topo, o.nodes)
    gb = o.size_bytes / GIB
    per_gb = model.distribute_s_per_gb(tree.max_fanout, tree.depth, o.nodes - 1)
    return gb * per_gb + model.distribute_wave_s(tree.max_fanout, tree.depth)


def ratio(actual: float, predicted: float) -> float:
    """The one convention for every ratio this script prints: actual / predicted."""
    return actual / predicted


def ratio_range(ratios: Sequence[float]) -> str:
    return f"x{min(ratios):.2f}-x{max(ratios):.2f}" if ratios else "none"


# When each protocol was first committed, kept beside them: a shallow clone (CI's)
# holds not the commit that added a protocol, so git alone cannot say it there.
RECORDED_COMMITS = "protocol_commits.json"


def recorded_commit(path: Path) -> str | None:
    """The first-commit time kept for `path` in RECORDED_COMMITS beside it, if any."""
    record = path.parent / RECORDED_COMMITS
    return json.loads(record.read_text()).get(path.name) if record.exists() else None


def first_committed(path: Path) -> str | None:
    """When git first committed `path` (ISO 8601, the committer's date): git's answer
    where it has the history, else the time recorded beside the protocol; None when
    neither knows (a shallow clone's oldest commit there is not the file's first)."""
    if shallow_clone(path.parent):
        return recorded_commit(path)
    out = git_text(path.parent, "log", "--diff-filter=A", "--format=%cI", "--", path.name)
    dates = (out or "").split()
    return dates[-1] if dates else recorded_commit(path)  # the oldest: git lists newest first


def _instant(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def started_before(runs: Sequence[BoxObservation], committed: str | None, what: str) -> str:
    """'N of M <what> runs started before this protocol was committed (when)', or unknown."""
    if committed is None:
        return (
            f"commit time unknown: whether any of the {len(runs)} {what} runs started before "
            "this protocol was committed cannot be said"
        )
    known = [o for o in runs if o.started]
    early = sum(_instant(o.started) < _instant(committed) for o in known)
    unrecorded = (
        f" ({len(runs) - len(known)} without a start time)" if len(known) < len(runs) else ""
    )
    return (
        f"{early} of {len(runs)} {what} runs started before this protocol was committed "
        f"({committed}){unrecorded}"
    )


def templates_line(names: Sequence[str], sweeps: dict[str, list[BoxObservation]]) -> str:
    """Which entrypoint templates made each sweep's runs; a sweep of several is named so
    (its runs were made by different versions of the benchmark, and judged together)."""
    parts, mixed = [], []
    for name in names:
        seen = sorted({o.template_hash for o in sweeps[name] if o.template_hash})
        parts.append(f"{name} {', '.join(h[:8] for h in seen) or 'not recorded'}")
        if len(seen) > 1:
            mixed.append(f"{name} ({len(seen)})")
    line = "entrypoint templates: " + "; ".join(parts)
    if mixed:
        line += (
            f"\nmixed templates: {', '.join(mixed)}: runs of different templates judged together"
        )
    return line


def judge(
    plan: dict[str, Any], sweeps: dict[str, list[BoxObservation]], committed: str | None
) -> bool:
    """Print one protocol's fit, its cells and its verdict; True when it meets its rule."""
    # The first protocol's band is the residuals' (as committed); later ones say theirs.
    kind = plan.get("interval", RESIDUALS)
    fitted = [o for name in plan["fit"] for o in sweeps[name]]
    predicted_runs = [o for name in plan["predict"] for o in sweeps[name]]
    fit = fit_box_network(fitted, interval=kind)
    fitted_on, predicted_sweeps = ", ".join(plan["fit"]), ", ".join(plan["predict"])
    print(f"\n{plan['name']}: fit on {fitted_on}; predict {predicted_sweeps}")
    print(started_before(predicted_runs, committed, "predicted"))
    print(started_before(fitted, committed, "fitted"))
    print(templates_line([*plan["fit"], *plan["predict"]], sweeps))
    print(f"fit: {fit.text()}\n")
    print(
        "| sweep | topology | actual median (n) | predicted (80% interval) | actual / predicted "
        "| runs inside | stated defaults | actual / stated defaults |"
    )
    print("|---|---|---|---|---|---|---|---|")
    inside = total = 0
    by_fit: list[float] = []
    by_defaults: list[float] = []
    for name in plan["predict"]:
        cells: dict[str, list[BoxObservation]] = defaultdict(list)
        for o in sweeps[name]:
            cells[o.topo].append(o)
        for topo, runs in sorted(cells.items(), key=lambda kv: int(kv[0].split(":")[1])):
            predicted, low, high = fit.predict(runs[0])
            hits = sum(low <= o.seconds <= high for o in runs)
            inside, total = inside + hits, total + len(runs)
            actual = statistics.median(o.seconds for o in runs)
            stated = default_prediction(runs[0])
            by_fit.append(ratio(actual, predicted))
            by_defaults.append(ratio(actual, stated))
            print(
                f"| {name} | {topo} | {actual:.1f} s ({len(runs)}) | {predicted:.1f} s "
                f"({low:.1f}-{high:.1f}) | x{by_fit[-1]:.2f} | {hits}/{len(runs)} | "
                f"{stated:.1f} s | x{by_defaults[-1]:.2f} |"
            )
    print(
        f"\ncell medians, actual / predicted: {ratio_range(by_fit)} over {len(by_fit)} cells; "
        f"actual / stated defaults: {ratio_range(by_defaults)}"
    )
    share = inside / total if total else 0.0
    verdict = "pass" if share >= PASS_SHARE else "FAIL"
    print(f"{inside} of {total} predicted runs inside their 80% interval ", end="")
    print(f"({share:.0%}): {verdict}")
    return share >= PASS_SHARE


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--protocol", type=Path, default=REPO / "benchmarks" / "box_model_protocol.json"
    )
    args = parser.parse_args(argv)
    protocol = json.loads(args.protocol.read_text())
    base = args.protocol.parent
    sweeps = {
        name: load_box_observations(base / sweep["dir"])
        for name, sweep in protocol["sweeps"].items()
    }
    committed = first_committed(args.protocol.resolve())
    print(
        f"protocol {args.protocol.name}: first committed {committed or '(commit time unknown)'}; "
        "every ratio is actual / predicted (above 1: the box ran slower than predicted)"
    )
    passed = [judge(plan, sweeps, committed) for plan in protocol["protocols"]]
    return 0 if all(passed) else 1


if __name__ == "__main__":
    sys.exit(main())
