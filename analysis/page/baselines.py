"""The report's baselines: the direct download beside the tree strategies, and ping by depth.

- `direct_table`: per source, node count and size, the `direct` strategy (every
  rank downloads the blob from rank 0 over HTTP, no tree) beside each tree
  strategy's best topology: both medians with n, the ratio tree / direct with
  its interval (`analysis.tables.stats.ratio_of_medians`), and the Mann-Whitney test
  (`analysis.tables.stats.rank_test`) worded as the topology verdicts are.  direct
  does not use the tree, so its runs pool over the topologies it ran beside.
- `ping_tables`: per source, node count and topology, the median `flux ping`
  round trip from rank 0 to the ranks at each depth of the tree, one row per
  service and payload: how latency grows with the hops a message crosses.

Failed steps and pings have no time and are left out of every median.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import pandas as pd

from analysis.page.results import strategy_samples
from analysis.tables.sources import deduplicated, source_names
from analysis.tables.stats import (
    ALPHA,
    MIN_RUNS,
    TEST_NAME,
    rank_test,
    ratio_of_medians,
    runs_needed,
)
from experiments.errors import UserError
from experiments.formats.cell_layout import format_size, size_text
from experiments.formats.events import STRATEGIES, topology_order_key
from experiments.model.topology import build_tree

__all__ = ["direct_table", "ping_tables"]

_DIRECT = "direct"
_TREES = tuple(s for s in STRATEGIES if s != _DIRECT)


def _seconds(value: float) -> str:
    return f"{value:.3g} s" if value < 10 else f"{value:.1f} s"


def direct_table(
    events: pd.DataFrame, samples: pd.DataFrame | None = None
) -> dict[str, Any] | None:
    """direct beside the tree strategies that ran with it; None when direct never ran.

    `strategies` names the tree strategies shown; each row (source, nodes,
    size) has a cell per strategy, None where that one did not run.  `samples`:
    the events' `strategy_samples`, where the caller has them already.
    """
    if samples is None:
        samples = strategy_samples(events)
    if samples.empty or not (samples["strategy"] == _DIRECT).any():
        return None
    ok = samples[samples["status"] == "ok"]
    present = [s for s in _TREES if (ok["strategy"] == s).any()]
    rows = []
    keys = ["source", "nodes", "size_bytes"]
    for (source, nodes, _size), group in sorted(_groups(ok, keys), key=lambda kv: kv[0]):
        direct = group[group["strategy"] == _DIRECT]["time_seconds"].to_numpy(dtype=float)
        if len(direct) == 0:
            continue
        rows.append(
            {
                "source": source,
                "nodes": int(nodes),
                "size": size_text(group["size_label"].iloc[0]),
                "direct": f"{_seconds(float(np.median(direct)))} (n={len(direct)})",
                "trees": [_tree_cell(group, strategy, direct) for strategy in present],
            }
        )
    zeros = sorted({r["source"] for r in rows if deduplicated(r["source"])})
    return {
        "strategies": present,
        "rows": rows,
        # Zero blobs: the trees' archives held one distinct chunk, direct's HTTP moved
        # every byte, so their ratio sets disk writes against a transfer.
        "blob_note": (
            f"{'; '.join(zeros)}: the trees' archives held one distinct chunk, so their "
            "times measure each rank's disk writes, while direct sent every byte over HTTP: "
            "tree / direct sets writes against a transfer, not a fan-out against none"
            if zeros
            else ""
        ),
        "many_sources": len({r["source"] for r in rows}) > 1,
        "rule": f"{TEST_NAME}, p < {ALPHA:g}; at least {runs_needed()} runs a side",
    }


def _tree_cell(group: pd.DataFrame, strategy: str, direct: np.ndarray) -> dict[str, str] | None:
    """A tree strategy's best topology against direct, in words; None where it did not run."""
    mine = group[group["strategy"] == strategy]
    if mine.empty:
        return None
    medians = mine.groupby("design")["time_seconds"].median()
    best = str(medians.idxmin())
    times = mine[mine["design"] == best]["time_seconds"].to_numpy(dtype=float)
    ratio = ratio_of_medians(direct, times)
    assert ratio is not None  # both sides have runs
    interval = ""
    if ratio.low is not None and ratio.high is not None and ratio.coverage is not None:
        interval = f" [{ratio.low:.2f}, {ratio.high:.2f}] {ratio.coverage:.0%}"
    test = rank_test(times, direct)
    faster = "the tree" if ratio.ratio < 1 else "direct"
    if min(len(times), len(direct)) < MIN_RUNS or test is None:
        verdict = "too few runs to tell"
    elif test.p < ALPHA:
        verdict = f"{faster} faster (p = {test.p:.2g})"
    else:
        verdict = f"no clear difference (p = {test.p:.2g})"
    return {
        "strategy": strategy,
        "design": best,
        "median": f"{_seconds(float(np.median(times)))} (n={len(times)})",
        "ratio": f"×{ratio.ratio:.2f}{interval}",
        "verdict": verdict,
        "tone": "good" if verdict.startswith("the tree") else "",
    }


def _topo(row_topo: object, topology: object) -> str:
    """The topology of a ping row: `topo`, or flux-distribute's directory name (`kary-2`)."""
    text = str(row_topo) if isinstance(row_topo, str) and row_topo else str(topology)
    return text if ":" in text or text in ("binomial", "mincrit") else text.replace("-", ":", 1)


def _depths(topo: str, nodes: int) -> tuple[int, ...] | None:
    try:
        return build_tree(topo, nodes).level
    except UserError:
        return None


def ping_tables(ping: pd.DataFrame) -> list[dict[str, Any]]:
    """Per (source, nodes, topology): median ping ms by the target's depth, per service and pad."""
    if ping.empty:
        return []
    frame = ping.copy()
    frame["where"] = source_names(frame)
    frame["topo_name"] = [
        _topo(t, u) for t, u in zip(frame["topo"], frame["topology"], strict=True)
    ]
    tables = []
    keys = ["where", "nodes", "topo_name"]
    groups = sorted(
        _groups(frame, keys),
        key=lambda kv: (kv[0][0], int(kv[0][1]), topology_order_key(str(kv[0][2]))),
    )
    for (where, nodes, topo), group in groups:
        levels = _depths(str(topo), int(nodes))
        if levels is None:
            continue
        group = group.assign(
            depth=[levels[int(r)] if 0 <= int(r) < len(levels) else -1 for r in group["rank"]]
        )
        depths = sorted(d for d in set(group["depth"]) if d >= 0)
        rows = []
        for (service, pad), part in sorted(
            _groups(group, ["service", "message_size_bytes"]), key=lambda kv: (kv[0][1], kv[0][0])
        ):
            cells = []
            for depth in depths:
                here = part[part["depth"] == depth]
                ok = here[here["status"] == "ok"]["time_ms"].astype(float)
                failed = int((here["status"] != "ok").sum())
                text = _ms(float(ok.median())) if len(ok) else "—"
                cells.append({"median": text, "n": len(ok), "failed": failed})
            rows.append({"service": str(service), "pad": _pad_label(int(pad)), "cells": cells})
        tables.append(
            {
                "source": where,
                "nodes": int(nodes),
                "topo": str(topo),
                "depths": depths,
                "rows": rows,
            }
        )
    return tables


def _ms(value: float) -> str:
    """0.4051 -> '0.405 ms', 6370.2 -> '6.37 s'."""
    if value >= 1000:
        return f"{value / 1000:.3g} s"
    return f"{value:.0f} ms" if value >= 100 else f"{value:.3g} ms"


def _groups(frame: pd.DataFrame, keys: list[str]) -> list[tuple[tuple[Any, ...], pd.DataFrame]]:
    """`frame.groupby(keys)` as (key tuple, group) pairs."""
    return [(cast("tuple[Any, ...]", key), group) for key, group in frame.groupby(keys)]


def _pad_label(size: int) -> str:
    return format_size(size) if size else "0"
