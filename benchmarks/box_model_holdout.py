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
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

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

PASS_SHARE = 0.7


def default_prediction(o: BoxObservation) -> float:
    """The plan's distribute seconds from its stated defaults on these links (no fit)."""
    links = link_settings(f"{o.bandwidth * 8:.0f}bit", None)
    model = with_emulated_links(default_time_model("flux", place="box"), links)
    tree = build_tree(o.topo, o.nodes)
    gb = o.size_bytes / GIB
    per_gb = model.distribute_s_per_gb(tree.max_fanout, tree.depth, o.nodes - 1)
    return gb * per_gb + model.distribute_wave_s(tree.max_fanout, tree.depth)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--protocol", type=Path, default=REPO / "benchmarks" / "box_model_protocol.json"
    )
    args = parser.parse_args()
    protocol = json.loads(args.protocol.read_text())
    base = args.protocol.parent
    sweeps = {
        name: load_box_observations(base / sweep["dir"])
        for name, sweep in protocol["sweeps"].items()
    }
    failed = False
    for plan in protocol["protocols"]:
        # The first protocol's band is the residuals' (as committed); later ones say theirs.
        kind = plan.get("interval", RESIDUALS)
        fit = fit_box_network([o for name in plan["fit"] for o in sweeps[name]], interval=kind)
        fitted_on, predicted_sweeps = ", ".join(plan["fit"]), ", ".join(plan["predict"])
        print(f"\n{plan['name']}: fit on {fitted_on}; predict {predicted_sweeps}")
        print(f"fit: {fit.text()}\n")
        print(
            "| sweep | topology | actual median (n) | predicted (80% interval) | runs inside | "
            "stated defaults |"
        )
        print("|---|---|---|---|---|---|")
        inside = total = 0
        for name in plan["predict"]:
            cells: dict[str, list[BoxObservation]] = defaultdict(list)
            for o in sweeps[name]:
                cells[o.topo].append(o)
            for topo, runs in sorted(cells.items(), key=lambda kv: int(kv[0].split(":")[1])):
                predicted, low, high = fit.predict(runs[0])
                hits = sum(low <= o.seconds <= high for o in runs)
                inside, total = inside + hits, total + len(runs)
                actual = statistics.median(o.seconds for o in runs)
                print(
                    f"| {name} | {topo} | {actual:.1f} s ({len(runs)}) | {predicted:.1f} s "
                    f"({low:.1f}-{high:.1f}) | {hits}/{len(runs)} | "
                    f"{default_prediction(runs[0]):.1f} s |"
                )
        share = inside / total if total else 0.0
        verdict = "pass" if share >= PASS_SHARE else "FAIL"
        print(f"\n{inside} of {total} predicted runs inside their 80% interval ", end="")
        print(f"({share:.0%}): {verdict}")
        failed = failed or share < PASS_SHARE
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
