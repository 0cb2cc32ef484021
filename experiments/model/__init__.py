"""The pure model of a sweep: everything kary checks and plans before anything runs.

- a sweep and its checks: `sweep` (the spec), `sweep_file`, `sweep_check` (every
  flag checked in one pass), `units` (sizes, bandwidths, latencies), `links`,
  `faults`, `places` (backends and the flux backend's places), `layout`,
  `axes` and `cell_filter` (--only), `validate` (names, images, paths, node
  counts), `cluster_spec` (a --cluster file), `disk` (the disk a sweep needs on
  a node, checked against the cluster file's), `operator` (the Flux Operator),
  `log_budget` (what a nested group prints against the kubelet's log rotation);
- TBON topologies (`topology`) and design sets (`designs`);
- the plan of cells (`plan`) and the templates rendered for each (`render`,
  `render_nested`); a billed sweep's smoke cells (`smoke`).

Nothing here runs, provisions or bills (pyproject's import contracts).
"""

__all__ = [
    "axes",
    "cell_filter",
    "cluster_spec",
    "designs",
    "disk",
    "faults",
    "layout",
    "links",
    "log_budget",
    "operator",
    "places",
    "plan",
    "render",
    "render_nested",
    "smoke",
    "sweep",
    "sweep_check",
    "sweep_file",
    "topology",
    "units",
    "validate",
]
