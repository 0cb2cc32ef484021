"""What the report template shows for one parsed directory: plain dicts, text already formatted.

The template only lays things out; every number is worded here, so tests can
check the words without rendering HTML.
"""

from __future__ import annotations

from typing import Any, cast

import pandas as pd
from markupsafe import Markup

from analysis.page.floors import FloorKey, box_floors
from analysis.page.results import (
    STRATEGIES,
    Candidate,
    Verdict,
    strategy_samples,
    strategy_stats,
    verdicts,
)
from analysis.page.svg import Scale, strip_svg, tree_svg
from analysis.tables.blobs import writes_warning
from analysis.tables.parsed_dir import Parsed
from analysis.tables.sources import data_note, deduplicated, source_names
from analysis.tables.stats import (
    ALPHA,
    MIN_RUNS,
    TEST_NAME,
    RankTest,
    could_decide,
    runs_needed,
    smallest_p,
)
from experiments.errors import UserError
from experiments.formats.cell_layout import size_text, topology_dirname
from experiments.model.topology import build_tree, overlay_parents

__all__ = ["coverage_text", "design_cards", "seconds", "strategy_views", "test_rule"]


def seconds(value: float | None) -> str:
    """3.2671 -> '3.27 s'; small values keep three significant digits."""
    if value is None:
        return "—"
    if value >= 100:
        return f"{value:,.0f} s"
    if value >= 10:
        return f"{value:.1f} s"
    if value >= 0.1:
        return f"{value:.2f} s"
    return f"{value:.3g} s"


def _percent(fraction: float) -> str:
    return f"{fraction:.1%}" if fraction < 0.1 else f"{fraction:.0%}"


def coverage_text(coverage: float | None) -> str:
    """0.75 -> '75%', 0.9375 -> '94%': how often such an interval holds the median."""
    return "" if coverage is None else f"{coverage:.0%}"


def test_rule() -> str:
    """What a clear verdict takes, in one sentence."""
    return (
        f"{TEST_NAME}, p < {ALPHA:g} against every other topology; it needs at least "
        f"{runs_needed()} runs a side (3 vs 3 gives at best p = {smallest_p(3, 3):.2g})"
    )


def _p_text(test: RankTest) -> str:
    return f"p={test.p:.3f}" if test.p >= 0.001 else "p<0.001"


def _too_few(test: RankTest) -> str:
    """Why this test cannot decide: too few runs for any test, or for p < ALPHA."""
    runs = f"{test.n_a} vs {test.n_b} runs"
    if min(test.n_a, test.n_b) < MIN_RUNS:
        return f"{runs} are too few for a test"
    best_p = smallest_p(test.n_a, test.n_b)
    return f"{runs} cannot reach p < {ALPHA:g} (Mann-Whitney at best p={best_p:.2g})"


def _verdict_cell(verdict: Verdict) -> dict[str, Any]:
    best, status = verdict.best, verdict.status
    if best is None:
        # The template reads every key a verdict has: a group whose every run failed
        # still names its failures (its report is the one a user needs most).
        return {
            "status": "failed",
            "design": "all failed",
            "median": "",
            "n": 0,
            "note": "no run of any design succeeded, so nothing is timed",
            "failed": _fails(verdict),
        }
    margin = verdict.margin
    runner = verdict.runner_up
    longer = ""
    if margin is not None and runner is not None:
        # The runner-up's time over the best's: "took 154% longer", never "154% faster".
        longer = f"{runner.design} took {_percent(margin[1])} ({seconds(margin[0])}) longer"
    if status == "alone":
        note = "only design at this size"
    elif status == "clear":
        weakest = max(verdict.tests.values(), key=lambda t: t.p)
        note = f"{longer}; Mann-Whitney p ≤ {weakest.p:.3f} against every other ({weakest.n_text})"
    elif status == "tie":
        tied = [verdict.tests[design] for design in verdict.ties]
        test = next(t for t in tied if could_decide(t))
        design = verdict.ties[tied.index(test)]
        note = (
            f"tie with {', '.join(verdict.ties)}: Mann-Whitney {_p_text(test)} against "
            f"{design} ({test.n_text}), not below {ALPHA:g}"
        )
    else:
        assert runner is not None
        note = f"{longer}, but {_too_few(verdict.tests[runner.design])}"
    failed = _fails(verdict)
    return {
        "status": status,
        "design": best.design,
        "median": seconds(best.median),
        "n": best.n,
        "note": note,
        "failed": failed,
    }


def _fails(verdict: Verdict) -> str:
    failed = [c for c in verdict.ranked if c.failed]
    return "; ".join(f"{c.design}: {c.failed} failed" for c in failed)


def _strip_cell(
    candidate: Candidate | None,
    samples: pd.DataFrame,
    scale: Scale,
    verdict: Verdict,
    width: int,
) -> dict[str, Any]:
    if candidate is None:
        return {"empty": True}
    ok = samples[samples["status"] == "ok"].sort_values("iteration", kind="stable")
    times = [(it, float(t)) for it, t in zip(ok["iteration"], ok["time_seconds"], strict=True)]
    failed = [str(i) for i in samples[samples["status"] != "ok"]["iteration"]]
    best = verdict.best is not None and verdict.best.design == candidate.design
    tied = candidate.design in verdict.ties
    svg = strip_svg(
        times, failed, candidate.median, candidate.ci, scale, best=best, width=width,
        coverage=candidate.coverage,
    )  # fmt: skip
    return {
        "empty": False,
        "svg": Markup(svg),
        "median": seconds(candidate.median),
        "n": candidate.n,
        "coverage": coverage_text(candidate.coverage),
        "failed": len(failed),
        "best": best,
        "tied": tied,
        "best_is_clear": best and verdict.status == "clear",
    }


def strategy_views(parsed: Parsed, samples: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """Per strategy present: its verdict matrix and its table of iteration strips.
    `samples`: the events' `strategy_samples`, where the caller has them already."""
    if samples is None:
        samples = strategy_samples(parsed.events)
    if samples.empty:
        return []
    # Each zero-blob source's words, from its events (its archives' chunks, by size).
    warnings = _writes_warnings(parsed.events, samples)
    all_verdicts = verdicts(strategy_stats(samples), samples)
    knobs_vary = bool((samples["design"] != samples["topo"]).any())
    floors = box_floors(parsed.events, [strategy for strategy, _, _ in STRATEGIES])
    views = []
    for strategy, event, meaning in STRATEGIES:
        mine = [v for v in all_verdicts if v.strategy == strategy]
        if not mine:
            continue
        sizes = sorted({(v.size_bytes, v.size_label) for v in mine})
        width = 150 if len(sizes) <= 3 else (110 if len(sizes) <= 5 else 80)
        groups = [
            _group(
                samples[samples["strategy"] == strategy], mine, source, nodes, sizes, width, floors
            )
            for source, nodes in sorted({(v.source, v.nodes) for v in mine})
        ]
        archive = strategy != "direct"  # direct's HTTP moves every byte, zeros or not
        for group in groups:
            key = (group["source"], group["nodes"])
            group["warning"] = warnings.get(key, "") if archive else ""
        views.append(
            {
                "strategy": strategy,
                "event": event,
                "meaning": meaning,
                "sizes": [size_text(label) for _, label in sizes],
                "groups": groups,
                "many_sources": len({g["source"] for g in groups}) > 1,
                # Where these timings ran (a box and its links, a test instance, the
                # emulator), as the plots' captions say it: each source is ranked apart.
                "data": data_note(sorted({g["source"] for g in groups}), archive),
                "design_title": "topology, knobs" if knobs_vary else "topology",
                # Not "clear": a template's `s.clear` would find dict.clear first.
                "n_clear": sum(1 for v in mine if v.status == "clear"),
                "n_tie": sum(1 for v in mine if v.status == "tie"),
                "n_unsure": sum(1 for v in mine if v.status == "unsure"),
                "verdicts": len(mine),
            }
        )
    return views


def _writes_warnings(events: pd.DataFrame, samples: pd.DataFrame) -> dict[tuple[str, int], str]:
    """Per zero-blob (source, nodes): `these times measure each rank's disk writes: the
    archive had 1 distinct chunk of 16 at 16M`."""
    sources = sorted({s for s in samples["source"].astype(str).unique() if deduplicated(s)})
    if not sources:
        return {}
    frame = events.assign(where=source_names(events))
    warnings = {}
    zeros = frame[frame["where"].isin(sources)]
    for key, rows in zeros.groupby(["where", "nodes"]):
        where, nodes = cast("tuple[str, int]", key)
        warnings[(str(where), int(nodes))] = writes_warning(rows)
    return warnings


def _group(
    samples: pd.DataFrame,
    verdict_list: list[Verdict],
    source: str,
    nodes: int,
    sizes: list[tuple[int, str]],
    width: int,
    floors: dict[FloorKey, float] | None = None,
) -> dict[str, Any]:
    """One node count of one strategy: a verdict per size, a strip per design and size;
    a box cell also says its links' floor (analysis/page/floors.py)."""
    here = samples[(samples["source"] == source) & (samples["nodes"] == nodes)]
    by_size = {v.size_bytes: v for v in verdict_list if (v.source, v.nodes) == (source, nodes)}
    scales: dict[int, Scale] = {}
    for size, group_verdict in by_size.items():
        values = list(here[here["size_bytes"] == size]["time_seconds"].dropna().astype(float))
        values += [bound for c in group_verdict.ranked if c.ci for bound in c.ci]
        scales[size] = Scale.of(values)
    rows = []
    for design in _ordered_designs(by_size.values()):
        cells = []
        for size, _ in sizes:
            verdict: Verdict | None = by_size.get(size)
            candidate = None
            if verdict is not None:
                candidate = next((c for c in verdict.ranked if c.design == design), None)
            if verdict is None or candidate is None:
                cells.append({"empty": True})
                continue
            part = here[(here["size_bytes"] == size) & (here["design"] == design)]
            cell = _strip_cell(candidate, part, scales[size], verdict, width)
            strategy = str(part["strategy"].iloc[0]) if not part.empty else ""
            topo = str(part["topo"].iloc[0]) if not part.empty else ""
            floor = (floors or {}).get((source, nodes, topo, size, strategy))
            cell["floor"] = _floor_text(floor, candidate.median)
            cells.append(cell)
        rows.append({"design": design, "cells": cells})
    return {
        "source": source,
        "nodes": nodes,
        "axes": [
            f"{seconds(scales[s].low)} … {seconds(scales[s].high)}" if s in scales else ""
            for s, _ in sizes
        ],
        "rows": rows,
        "matrix": [_verdict_cell(by_size[s]) if s in by_size else None for s, _ in sizes],
    }


def _floor_text(floor: float | None, median: float | None) -> str:
    """`floor 10.7 s · x1.40`: the links' floor and the median's ratio to it."""
    if floor is None or floor <= 0:
        return ""
    ratio = f" · x{median / floor:.2f}" if median else ""
    return f"floor {seconds(floor)}{ratio}"


def _ordered_designs(group: Any) -> list[str]:
    found = {c.design: c.rank for v in group for c in v.ranked}
    return sorted(found, key=found.__getitem__)


def design_cards(parsed: Parsed, designs: list[tuple[int, str]]) -> list[dict[str, Any]]:
    """One card per (nodes, topology): the tree drawn, its shape, the logged overlay checked."""
    logged: dict[tuple[int, str], list[str]] = {}
    for uid, text in parsed.overlays.items():
        topology, _, count = str(uid).rpartition("-")
        if count.isdigit() and isinstance(text, list):
            logged[(int(count), topology)] = [str(line) for line in text]
    cards: list[dict[str, Any]] = []
    for nodes, topo in designs:
        try:
            tree = build_tree(topo, nodes)
        except UserError as err:
            cards.append({"nodes": nodes, "topo": topo, "svg": "", "shape": str(err)})
            continue
        lines = logged.get((nodes, topology_dirname(topo)))
        if lines is None:
            check, check_class = "no overlay in the logs", "muted"
        elif overlay_parents(lines) == list(tree.parents):
            check, check_class = "matches the logged flux overlay status", "good"
        else:
            check, check_class = "differs from the logged flux overlay status", "bad"
        svg = tree_svg(tree)
        cards.append(
            {
                "nodes": nodes,
                "topo": topo,
                "svg": Markup(svg),
                "shape": f"depth {tree.depth}, fan-out ≤ {tree.max_fanout}",
                "too_big": not svg,
                "check": check,
                "check_class": check_class,
                "overlay": "\n".join(lines) if lines else "",
            }
        )
    return cards
