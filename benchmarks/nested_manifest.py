"""How big the nested layout's MiniCluster is for flux-distribute's EKS 30-node study.

    .venv/bin/python benchmarks/nested_manifest.py
    .venv/bin/python benchmarks/nested_manifest.py --history DIR   # the cell limits a history sets

Plans the study the README prices (`clusters/eks-30-spot.yaml`, exactly 30
nodes, 1-10 GB, 1 iteration, random blobs, `--layout nested`), renders every
cell's entrypoint as a run would (experiments/execution/runner.py), and builds
the one nested MiniCluster the kubernetes backend sends for them
(experiments/model/render_nested.py: the driver and every entrypoint in
`commands.pre` as a tar.gz in base64), with each cell's limit as the runner
sets it.  Printed: the entrypoints' bytes, the manifest's, and the bundle's,
beside the 1 MiB a ConfigMap (where the operator puts those commands) may
hold.  The backend adds the sweep's labels and namespace (some tens of bytes,
per user) and nothing else.  Deterministic: no cloud, no clock.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from experiments import Sweep, api  # noqa: E402
from experiments.execution.runner import default_timeout  # noqa: E402
from experiments.model.render import render_cell  # noqa: E402
from experiments.model.render_nested import NestedCell, render_nested  # noqa: E402

CONFIGMAP_BYTES = 2**20
BUNDLE = "base64 -d <<'KARY_BUNDLE_EOF'"


def seed_study(history: Path | None = None) -> Sweep:
    """The study the README prices: 16 topologies at 30 nodes, 1-10 GB, one MiniCluster
    (tests/model/test_log_budget.py plans the same one)."""
    return Sweep(
        cluster=REPO / "clusters" / "eks-30-spot.yaml",
        exact_nodes=30,
        min_size_gb=1,
        max_size_gb=10,
        iterations=1,
        blob="random",
        layout="nested",
        history=history,
        data_dir=Path("/nonexistent/kary-nested-manifest"),  # nothing is read or written
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--history", type=Path, help="parsed sweeps the plan fits (kary plan's)")
    args = parser.parse_args(argv)
    planned = api.plan(seed_study(args.history))
    cells = planned.ledger.to_run
    seconds = {c.cell.id: c.seconds for c in planned.estimate.cells}
    rendered = [
        render_cell(
            c.nodes, c.topo, list(c.sizes), list(c.strategies), c.id, planned.render,
            knobs=c.knobs, experiment=c.experiment, blob=c.blob,
        )
        for c in cells
    ]  # fmt: skip
    nested = render_nested(
        yaml.safe_load(rendered[0].minicluster_yaml),
        cells[0].nodes,
        [
            NestedCell(
                c.id, c.topo, max(1, math.ceil(default_timeout(seconds.get(c.id, 0.0)))),
                r.entrypoint_sh, c.sizes,
            )
            for c, r in zip(cells, rendered, strict=True)
        ],
    )  # fmt: skip
    scripts = sum(len(r.entrypoint_sh.encode()) for r in rendered)
    manifest = len(nested.yaml.encode())
    pre = "\n".join(str(line) for line in _pre_commands(nested.body))
    bundle = pre[pre.index(BUNDLE) :].split("\n", 1)[1].split("\nKARY_BUNDLE_EOF", 1)[0]
    topos = sorted({c.topo for c in cells}, key=lambda t: (t != "binomial", len(t), t))
    sizes = sorted({s for c in cells for s in c.sizes})
    print(
        f"{len(cells)} cells at {cells[0].nodes} nodes ({', '.join(topos)}), "
        f"{len(sizes)} sizes each ({sizes[0] // 2**30}-{sizes[-1] // 2**30} GiB), "
        f"{'history: ' + str(args.history) if args.history else 'no history'}"
    )
    print(f"entrypoints: {scripts:,} bytes ({scripts / 1000:.0f} KB)")
    print(
        f"nested MiniCluster: {manifest:,} bytes ({manifest / 1000:.0f} KB), of which the "
        f"bundle (tar.gz in base64) {len(bundle.encode()):,} bytes; a ConfigMap holds "
        f"{CONFIGMAP_BYTES:,} bytes (1 MiB): {manifest / CONFIGMAP_BYTES:.1%} of it"
    )
    return 0


def _pre_commands(body: dict[str, object]) -> list[object]:
    """The `commands.pre` text of the MiniCluster's containers."""
    spec = body["spec"]
    assert isinstance(spec, dict)
    return [c.get("commands", {}).get("pre", "") for c in spec.get("containers", [])]


if __name__ == "__main__":
    sys.exit(main())
