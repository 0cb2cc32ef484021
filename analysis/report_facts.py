"""The plain facts of a parsed directory: what ran, when, where, what failed, what it cost.

Dates and the template hash live in each cell's run.json, which the parsed
tables do not carry: they are read from the raw tree named in parse.json when
it is still there, and reported as unknown when it is not.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.output import Parsed
from analysis.report_results import source_label
from experiments.formats.cell_layout import size_text
from experiments.formats.events import SETUP_EVENTS, event_sort_key, topology_order_key

__all__ = ["Facts", "Failure", "collect_facts"]

_BAD_STATES = {"failed", "timeout", "interrupted"}


@dataclass(frozen=True)
class Failure:
    """Failed steps sharing a design, event, size and reason."""

    nodes: int
    topo: str
    event: str
    size: str
    reason: str
    iterations: list[str]


@dataclass
class Facts:
    """Everything the overview, failures and provenance sections show."""

    cells: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    designs: list[tuple[int, str]] = field(default_factory=list)
    iterations: tuple[int, int] = (0, 0)
    sizes: list[str] = field(default_factory=list)
    strategies: list[str] = field(default_factory=list)
    steps: int = 0
    steps_failed: int = 0
    sources: list[str] = field(default_factory=list)
    started: str | None = None
    finished: str | None = None
    measured_seconds: float = 0.0
    wall_seconds: float | None = None
    cost: str | None = None
    failures: list[Failure] = field(default_factory=list)
    bad_cells: list[dict[str, str]] = field(default_factory=list)
    problems: list[dict[str, str]] = field(default_factory=list)
    provenance: list[tuple[str, str]] = field(default_factory=list)
    records_found: int = 0


def _texts(values: Any) -> list[str]:
    return sorted({str(v) for v in values if isinstance(v, str) and v})


def _records(parsed: Parsed) -> dict[str, dict[str, Any]]:
    """run.json per cell (by its folder in the raw tree), when the raw tree is still there."""
    data = parsed.meta.get("data")
    if not isinstance(data, str) or parsed.runs.empty or not Path(data).is_dir():
        return {}
    records: dict[str, dict[str, Any]] = {}
    for rel in parsed.runs["source"].astype(str):
        try:
            record = json.loads((Path(data) / rel / "run.json").read_text())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict):
            records[rel] = record
    return records


def _when(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _outcome(run: pd.Series) -> str:
    state = str(run.get("state") or "")
    if state:
        return state
    # The seed's logs have no run.json: a complete log with no failed step succeeded.
    if str(run.get("complete")) in ("True", "true", "1") and int(run.get("steps_failed", 0)) == 0:
        return "succeeded"
    return "failed" if int(run.get("steps_failed", 0)) else "incomplete"


def collect_facts(parsed: Parsed) -> Facts:
    """Overview, failures and provenance of one parsed directory."""
    facts = Facts()
    events, runs = parsed.events, parsed.runs
    timed = events[~events["event"].isin(SETUP_EVENTS)] if not events.empty else events
    if not runs.empty:
        facts.cells = len(runs)
        facts.outcomes = Counter(_outcome(run) for _, run in runs.iterrows())
        designs = runs[["nodes", "topo"]]
        per_design = runs.groupby(["nodes", "topo"])["iteration"].nunique()
    else:
        cells = events.drop_duplicates(["uid", "iteration"]) if not events.empty else events
        facts.cells = len(cells)
        facts.outcomes = Counter({"succeeded": len(cells)}) if len(cells) else Counter()
        designs = events[["nodes", "topo"]]
        per_design = events.groupby(["nodes", "topo"])["iteration"].nunique()
    facts.designs = sorted(
        {(int(n), str(t)) for n, t in designs.itertuples(index=False)},
        key=lambda d: (d[0], topology_order_key(d[1])),
    )
    if len(per_design):
        facts.iterations = (int(per_design.min()), int(per_design.max()))
    if not timed.empty:
        sizes = timed.drop_duplicates("size_bytes").sort_values("size_bytes")
        facts.sizes = [size_text(s) for s in sizes["size_label"]]
        present = set(timed["strategy"].astype(str))
        facts.strategies = [s for s in ("all", "leaves", "middle") if s in present]
    facts.steps = len(timed)
    facts.steps_failed = int((timed["status"] == "failed").sum()) if len(timed) else 0
    table = runs if not runs.empty else events
    facts.sources = sorted(
        {source_label(b, c) for b, c in zip(table["backend"], table["cluster"], strict=True)}
    )
    ok = events[(events["status"] == "ok") & events["time_seconds"].notna()]
    facts.measured_seconds = float(ok["time_seconds"].astype(float).sum())
    facts.failures = _failures(timed)
    facts.bad_cells = _bad_cells(runs)
    facts.problems = [
        {k: str(p.get(k, "")) for k in ("kind", "path", "reason")}
        for p in parsed.meta.get("problems", [])
        if isinstance(p, dict) and p.get("kind") != "ignored"
    ]
    records = _records(parsed)
    facts.records_found = len(records)
    _dates_and_cost(facts, records, runs)
    facts.provenance = _provenance(parsed, records)
    return facts


def _failures(timed: pd.DataFrame) -> list[Failure]:
    failed = timed[timed["status"] == "failed"] if not timed.empty else timed
    groups: dict[tuple[int, str, str, str, str], list[str]] = {}
    for row in failed.itertuples(index=False):
        key = (
            int(row.nodes),  # type: ignore[arg-type]
            str(row.topo),
            str(row.event),
            size_text(row.size_label),
            str(row.reason or "failed (no reason recorded)"),
        )
        groups.setdefault(key, []).append(str(row.iteration))
    ordered = sorted(
        groups.items(),
        key=lambda kv: (kv[0][0], topology_order_key(kv[0][1]), event_sort_key(kv[0][2]), kv[0][3]),
    )
    return [Failure(*key, iterations=sorted(set(its), key=_natural)) for key, its in ordered]


def _natural(text: str) -> tuple[int, str]:
    return (int(text), "") if text.isdigit() else (1 << 30, text)


def _bad_cells(runs: pd.DataFrame) -> list[dict[str, str]]:
    out = []
    for _, run in runs.iterrows():
        outcome = _outcome(run)
        if outcome == "succeeded":
            continue
        if outcome not in _BAD_STATES and outcome != "incomplete":
            continue
        error = str(run.get("error") or "")
        if not error and outcome == "incomplete":
            error = "the log ends before the benchmark did"
        out.append(
            {
                "cell": str(run["source"]),
                "design": f"{run['nodes']} nodes, {run['topo']}",
                "iteration": str(run["iteration"]),
                "state": outcome,
                "error": error,
                "steps_failed": str(run.get("steps_failed", "")),
            }
        )
    return out


def _dates_and_cost(facts: Facts, records: dict[str, dict[str, Any]], runs: pd.DataFrame) -> None:
    starts = [t for r in records.values() if (t := _when(r.get("started")))]
    ends = [t for r in records.values() if (t := _when(r.get("finished")))]
    if starts:
        facts.started = min(starts).strftime("%Y-%m-%d %H:%M %Z").strip()
    if ends:
        facts.finished = max(ends).strftime("%Y-%m-%d %H:%M %Z").strip()
    walls = []
    for record in records.values():
        start, end = _when(record.get("started")), _when(record.get("finished"))
        if start and end and end >= start:
            walls.append(((end - start).total_seconds(), record))
    if walls:
        facts.wall_seconds = sum(w for w, _ in walls)
    facts.cost = _cost(walls)


def _cost(walls: list[tuple[float, dict[str, Any]]]) -> str | None:
    """List-price cost of the cells' wall time, when every cell names a priced instance."""
    if walls and all(r.get("backend") == "local" for _, r in walls):
        return "$0: ran on this machine (emulated Flux)"
    if walls and all(r.get("backend") == "flux" for _, r in walls):
        if all(r.get("place") == "test-instance" for _, r in walls):
            return "$0: ran on this machine (real Flux, flux start --test-size)"
        return "not billed by kary: ran inside a Flux allocation (the site's accounting applies)"
    recorded = [r.get("cost_usd") for _, r in walls]
    if walls and all(isinstance(c, (int, float)) for c in recorded):
        total = sum(float(c) for c in recorded if isinstance(c, (int, float)))
        return f"${total:,.2f} (recorded by the runner)"
    types = {r.get("instance_type") for _, r in walls}
    if not walls or None in types or len(types) != 1:
        return None
    (instance,) = types
    price = _list_price(str(instance))
    if price is None:
        return None
    usd_per_hour, as_of = price
    seconds_nodes = sum(w * int(r.get("nodes", 0)) for w, r in walls)
    usd = seconds_nodes / 3600 * usd_per_hour
    if not math.isfinite(usd):
        return None
    return (
        f"≈ ${usd:,.2f}: cells' wall time × {instance} at ${usd_per_hour:g}/h per node "
        f"(list price as of {as_of}); provisioning and control plane not included"
    )


def _list_price(instance: str) -> tuple[float, str] | None:
    """The catalog's price for an instance type, if every region that lists it agrees."""
    try:
        from experiments.estimate.prices import load_price_catalog

        catalog = load_price_catalog()
    except Exception:  # a missing or damaged catalog only means "cost unknown"
        return None
    found = {
        (float(entry["usd_per_hour"][instance]), str(entry.get("as_of", "unknown")))
        for entry in catalog.regions.values()
        if isinstance(entry, dict) and instance in entry.get("usd_per_hour", {})
    }
    return found.pop() if len({p for p, _ in found}) == 1 else None


def _provenance(parsed: Parsed, records: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    runs, meta = parsed.runs, parsed.meta
    values = list(records.values())

    def listed(column: str) -> str:
        found = set(_texts(runs[column])) if column in runs.columns else set()
        found |= set(_texts(r.get(column) for r in values))
        return ", ".join(sorted(found)) or "not recorded"

    rows = [
        ("raw tree", str(meta.get("data", "not recorded"))),
        ("parsed by", f"kary {meta['kary_version']}" if meta.get("kary_version") else "the seed"),
        ("Flux versions", listed("flux_version")),
        ("instance types", listed("instance_type")),
        ("images", listed("image")),
        ("template hash", ", ".join(_texts(r.get("template_hash") for r in values)) or ""),
        ("log formats", listed("log_format")),
        ("run records", f"{len(records)} of {len(runs)} cells have a readable run.json"),
    ]
    if not rows[5][1]:
        rows[5] = ("template hash", "not recorded (no run.json)")
    places = sorted(set(_texts(r.get("place") for r in values)))
    if places:  # real Flux: a local test instance, or nested in an allocation
        rows.insert(3, ("where Flux ran", ", ".join(places)))
    emulated = [r["emulator"] for r in values if isinstance(r.get("emulator"), dict)]
    fidelity = sorted(set(_texts(e.get("fidelity") for e in emulated)))
    if fidelity:  # the emulator's timings are its own: say how close to flux-core they are
        rows.append(("emulator fidelity", "; ".join(fidelity)))
    faulted = sorted({str(f) for e in emulated for f in e.get("faults") or []})
    if faulted:  # --emulator-fault: these cells test a template and measure nothing
        rows.append(("faults injected (testing only)", ", ".join(faulted)))
    if meta.get("ci_method"):
        rows.append(("intervals", str(meta["ci_method"])))
    if meta.get("note"):
        rows.append(("note", str(meta["note"])))
    return rows
