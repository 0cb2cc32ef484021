"""Which fan-out wins: per strategy, node count and size, the best topology and how sure.

The candidates are designs: a topology, and where a Flux knob varies in the
tree, its setting too (`kary:2 · chunksize 256K`), so "does chunksize matter
at 30 nodes?" gets the same test and the same words as "which fan-out?".

A strategy's time is its distribution: `distribute-all-nodes` (all),
`distribute-leaf-nodes` (leaves), and for `middle` the sum of its waves
(`distribute-middle-nodes-0` to the middle level, then `-1` to the leaves) in
one iteration; an iteration where any wave failed has no total.

Statistics come from `analysis.tables.stats.summarize`, the function that writes
summary.csv, so a single-event strategy shows exactly summary.csv's median and
interval. Whether the best topology beats the others is a test, not a look at
the intervals (three runs' [min, max] covers the median only 75% of the time):
the Mann-Whitney U test, two-sided, of the best's timings against each other
topology's (`analysis.tables.stats.rank_test`). "Clear" means p < ALPHA against every
other; "tie" that the test could have separated them at these runs and did
not; "unsure" that the runs are too few for p < ALPHA at all (3 vs 3 gives at
best p = 0.1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analysis.read.records import void_mask
from analysis.tables.knobs import design_axes, setting_labels, setting_order_key
from analysis.tables.sources import source_names
from analysis.tables.stats import RankTest, could_decide, decides, rank_test, summarize
from experiments.formats.events import STRATEGY_EVENTS, StrategyEvents, topology_order_key

__all__ = [
    "STRATEGIES",
    "Candidate",
    "Verdict",
    "number_or_none",
    "strategy_samples",
    "strategy_stats",
    "verdicts",
]

# What each strategy's time measures, in the report's words.
_MEASURES = {
    "all": "every rank but 0 extracts the archive",
    "leaves": "only the deepest level extracts it",
    "middle": "the middle level first, then the leaves (sum of both waves)",
    "direct": "every rank but 0 downloads the blob from rank 0 over HTTP, no tree (the baseline)",
}


def _shown_event(events: StrategyEvents) -> str:
    """`distribute-all-nodes`; for a waved strategy its waves, `distribute-middle-nodes-0 + -1`."""
    if not events.waved:
        return events.distribute_event()
    return f"{events.distribute_event(0)} + -1"  # wave 0, then wave 1 (to the leaves)


# (strategy, the event name shown, what it measures)
STRATEGIES: tuple[tuple[str, str, str], ...] = tuple(
    (events.strategy, _shown_event(events), _MEASURES.get(events.strategy, ""))
    for events in STRATEGY_EVENTS
)
GROUP = ["strategy", "source", "nodes", "size_bytes"]
# `design` is the topology and the setting of each knob that varies; `design_rank`
# orders designs: by topology, then by each knob's value.
_KEYS = ["strategy", "source", "nodes", "topo", "design", "design_rank", "size_bytes", "size_label"]


def strategy_samples(events: pd.DataFrame) -> pd.DataFrame:
    """One row per (strategy, cell log, size): time_seconds (NaN when failed) and status.

    A void distribution (a failed precondition, analysis.read.records.is_void) is no
    sample at all: it is neither a timing nor a failure of the design, and the
    report's failures section lists it.  A waved strategy's sample is failed
    when a wave failed, and void when a wave is void and none failed.
    """
    columns = [*_KEYS, "iteration", "log", "time_seconds", "status"]
    if events.empty:
        return pd.DataFrame(columns=columns)
    frame = events.copy()
    # Where it ran, place and links included: each is a group of its own, never ranked
    # against another (a box at 200Mbit against a test instance says nothing of fan-out).
    frame["source"] = source_names(frame)
    # `log` names one cell's log: the events' own `source` (its path in the raw
    # tree), or where that is empty, where it ran + uid + iteration. The frame's
    # `source` column has just been replaced by where it ran, hence `events`.
    frame["log"] = frame["source"].astype(str) + "|" + frame["uid"].astype(str)
    frame["log"] += "|" + frame["iteration"].astype(str)
    if "source" in events.columns:
        frame["log"] = events["source"].astype(str).where(events["source"] != "", frame["log"])
    frame["ok"] = (frame["status"] == "ok") & frame["time_seconds"].notna()
    frame["failed"] = ~frame["ok"] & ~void_mask(frame["status"])
    frame = _with_designs(frame)
    names = frame["event"].astype(str)
    parts: list[pd.DataFrame] = []
    for steps in STRATEGY_EVENTS:
        if not steps.waved:
            parts.append(frame[names == steps.distribute_event()].assign(strategy=steps.strategy))
            continue
        # A waved strategy's time in one iteration is the sum of its waves.
        wave_names = [name for name in names.unique() if steps.distribute_wave(name) is not None]
        waves = frame[names.isin(wave_names)]
        if not waves.empty:
            keys = [*_KEYS[1:], "log", "iteration"]
            total = waves.groupby(keys, sort=False, dropna=False).agg(
                time_seconds=("time_seconds", "sum"), ok=("ok", "all"), failed=("failed", "any")
            )
            parts.append(total.reset_index().assign(strategy=steps.strategy))
    samples = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)
    if not samples.empty:
        kept = samples["ok"].astype(bool) | samples["failed"].astype(bool)
        if not kept.all():
            samples = samples[kept].reset_index(drop=True)
    samples["status"] = np.where(samples["ok"], "ok", "failed")
    samples["time_seconds"] = samples["time_seconds"].where(samples["ok"])
    samples["nodes"] = samples["nodes"].astype(int)
    samples["size_bytes"] = samples["size_bytes"].astype("int64")
    return samples[columns].reset_index(drop=True)


def _with_designs(frame: pd.DataFrame) -> pd.DataFrame:
    """Add `design` (the topology, with the setting of each knob that varies, and
    `CPU-bound` where a cell was) and its rank."""
    knobs = design_axes(frame)
    topos = frame["topo"].astype(str).tolist()
    designs = [
        f"{topo} · {setting}" if setting else topo
        for topo, setting in zip(topos, setting_labels(frame, knobs), strict=True)
    ]
    # Designs rank by their least (topology, setting) order, ties by name; a table's
    # rows repeat few topologies and designs, so each order is worked out once.
    topo_orders = {topo: topology_order_key(topo) for topo in set(topos)}
    least: dict[str, tuple[Any, ...]] = {}
    for design, topo, setting in zip(designs, topos, setting_order_key(frame, knobs), strict=True):
        order = (topo_orders[topo], setting)
        if design not in least or order < least[design]:
            least[design] = order
    ranked = sorted(least, key=lambda design: (least[design], design))
    rank = {design: i for i, design in enumerate(ranked)}
    return frame.assign(design=designs, design_rank=[rank[d] for d in designs])


def strategy_stats(samples: pd.DataFrame) -> pd.DataFrame:
    """summarize() per (strategy, source, nodes, design, size)."""
    return summarize(samples, _KEYS)


@dataclass(frozen=True)
class Candidate:
    """One design (a topology, and the knob setting where knobs vary) in a group, with its
    statistics."""

    design: str
    rank: int  # the designs' order: by topology, then by knob value
    n: int
    failed: int
    median: float | None
    ci: tuple[float, float] | None
    coverage: float | None


@dataclass
class Verdict:
    """The best design of one (strategy, source, nodes, size) group and how sure it is."""

    strategy: str
    source: str
    nodes: int
    size_bytes: int
    size_label: str
    ranked: list[Candidate]  # by median, then design order; all-failed ones last
    # The best's timings against each other timed design's, by design.
    tests: dict[str, RankTest] = field(default_factory=dict)

    @property
    def ties(self) -> list[str]:
        """Timed designs the test does not separate from the best, in ranked order."""
        return [design for design, test in self.tests.items() if not decides(test)]

    @property
    def best(self) -> Candidate | None:
        first = self.ranked[0] if self.ranked else None
        return first if first is not None and first.median is not None else None

    @property
    def runner_up(self) -> Candidate | None:
        timed = [c for c in self.ranked if c.median is not None]
        return timed[1] if len(timed) > 1 else None

    @property
    def margin(self) -> tuple[float, float] | None:
        """(seconds, fraction of the best's median) by which the runner-up is slower."""
        best, next_ = self.best, self.runner_up
        if best is None or next_ is None or best.median is None or next_.median is None:
            return None
        seconds = next_.median - best.median
        return seconds, (seconds / best.median if best.median > 0 else math.inf)

    @property
    def status(self) -> str:
        """clear, tie, unsure, alone, or failed.

        clear: p < ALPHA against every other timed design. tie: some other
        design's test could reach p < ALPHA at these runs and did not.
        unsure: the rest, where the runs are too few for the test to decide.
        """
        if self.best is None:
            return "failed"
        if self.runner_up is None:
            return "alone"
        ties = [self.tests[design] for design in self.ties]
        if not ties:
            return "clear"
        if any(could_decide(test) for test in ties):
            return "tie"
        return "unsure"


def number_or_none(value: object) -> float | None:
    """A float, or None for a missing or NaN value (pandas hands back either)."""
    if value is None:
        return None
    number = float(value)  # type: ignore[arg-type]
    return None if math.isnan(number) else number


def _candidate(row: pd.Series) -> Candidate:
    low, high = number_or_none(row["ci_low"]), number_or_none(row["ci_high"])
    return Candidate(
        design=str(row["design"]),
        rank=int(row["design_rank"]),
        n=int(row["n"]),
        failed=int(row["failed"]),
        median=number_or_none(row["median"]),
        ci=None if low is None or high is None else (low, high),
        coverage=number_or_none(row["ci_coverage"]),
    )


def _ok_times(samples: pd.DataFrame) -> dict[tuple[str, str, int, int, str], list[float]]:
    """The ok timings per (strategy, source, nodes, size, design)."""
    ok = samples[samples["status"] == "ok"]
    keys = zip(
        ok["strategy"], ok["source"], ok["nodes"], ok["size_bytes"], ok["design"], strict=True
    )
    times: dict[tuple[str, str, int, int, str], list[float]] = {}
    for (strategy, source, nodes, size, design), value in zip(
        keys, ok["time_seconds"].to_numpy(dtype=float), strict=True
    ):
        key = (str(strategy), str(source), int(nodes), int(size), str(design))
        times.setdefault(key, []).append(float(value))
    return times


def verdicts(stats: pd.DataFrame, samples: pd.DataFrame) -> list[Verdict]:
    """A Verdict per group of `stats` (from `samples`), in strategy, source, nodes, size order."""
    out: list[Verdict] = []
    if stats.empty:
        return out
    times = _ok_times(samples)
    order = {name: i for i, (name, _, _) in enumerate(STRATEGIES)}
    groups = stats.groupby(GROUP, sort=False)
    keyed: list[tuple[tuple[str, str, int, int], pd.DataFrame]] = [
        ((str(k[0]), str(k[1]), int(k[2]), int(k[3])), g)  # type: ignore[call-overload]
        for k, g in groups
    ]
    for key, group in sorted(keyed, key=lambda kv: (order[kv[0][0]], *kv[0][1:])):
        strategy, source, nodes, size = key
        ranked = sorted(
            (_candidate(row) for _, row in group.iterrows()),
            key=lambda c: (
                c.median is None,
                c.median if c.median is not None else 0.0,
                c.rank,
            ),
        )
        verdict = Verdict(
            strategy=strategy,
            source=source,
            nodes=nodes,
            size_bytes=size,
            size_label=str(group["size_label"].iloc[0]),
            ranked=ranked,
        )
        best = verdict.best
        if best is not None:
            mine = times[(*key, best.design)]
            for other in ranked[1:]:
                theirs = times[(*key, other.design)] if other.median is not None else []
                test = rank_test(np.asarray(mine), np.asarray(theirs)) if theirs else None
                if test is not None:
                    verdict.tests[other.design] = test
        out.append(verdict)
    return out
