"""The plain facts of a parsed directory: what ran, when, where, what failed, what it cost.

Everything comes from the parsed tables: parse copies what the report needs of
each cell's run.json (dates, template hash, where Flux ran, the emulator's
fidelity and faults) into runs.csv, so a parsed directory whose raw tree is
gone gives the same facts.  A runs.csv written before those columns existed
gives "not recorded" for them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pandas as pd

from analysis.page.cost import Cell, cost_text
from analysis.page.where import (
    Where,
    capacity_notes,
    capacity_rows,
    emulated_note,
    free_or_unbilled_cost,
    nodes_of,
    where_of,
)
from analysis.read.records import is_void, void_mask
from analysis.tables.blobs import WRITES, archive_facts, deduplicated_rows
from analysis.tables.parsed_dir import Parsed
from analysis.tables.sources import source_names
from experiments.estimate.prices import PriceCatalog, load_price_catalog
from experiments.formats.blobs import DEDUPLICATED
from experiments.formats.cell_layout import size_text
from experiments.formats.events import (
    SETUP_EVENTS,
    STRATEGIES,
    event_sort_key,
    topology_order_key,
)
from experiments.formats.parsed import RECORD_FACTS

__all__ = ["Facts", "Failure", "collect_facts"]

# A preempted cell (it lost a node) is never timed and runs again, as an interrupted one.
_BAD_STATES = {"failed", "timeout", "interrupted", "preempted"}


@dataclass(frozen=True)
class Failure:
    """Failed or void steps sharing a design, event, size and reason."""

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
    steps_void: int = 0  # a precondition failed: no timing, and not a failure of the step
    sources: list[str] = field(default_factory=list)
    # Where each cell ran (place and links) and what each place is: the overview's top.
    places: list[Where] = field(default_factory=list)
    # Said before anything else when any cell ran on the emulator.
    emulated_note: str | None = None
    # Said beside where the cells ran: mixed capacity, a node set that changed.
    capacity_notes: list[str] = field(default_factory=list)
    # Said at the top when any cell's blobs were zeros: what their times measure.
    blob_note: str | None = None
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
    # runs.csv predates the run.json facts (dates, template hash): parse again to get them.
    parsed_without_record_facts: bool = False


def _texts(values: Any) -> list[str]:
    return sorted({str(v) for v in values if isinstance(v, str) and v})


def _records(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs whose cell had a readable run.json (only a record gives a state)."""
    if "state" not in runs.columns:
        return runs.iloc[0:0]
    return runs[runs["state"].fillna("").astype(str) != ""]


def _when(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


# What _outcome and _bad_cells read of a cell's row of runs.csv.
_RUN_FACTS = ("state", "complete", "steps_failed", "error", "source", "nodes", "topo", "iteration")


def _outcome(run: Mapping[Hashable, Any]) -> str:
    state = str(run.get("state") or "")
    if state:
        return state
    # flux-distribute's logs have no run.json: a complete log with no failed step succeeded.
    if str(run.get("complete")) in ("True", "true", "1") and int(run.get("steps_failed", 0)) == 0:
        return "succeeded"
    return "failed" if int(run.get("steps_failed", 0)) else "incomplete"


def collect_facts(parsed: Parsed) -> Facts:
    """Overview, failures and provenance of one parsed directory."""
    facts = Facts()
    events, runs = parsed.events, parsed.runs
    timed = events[~events["event"].isin(SETUP_EVENTS)] if not events.empty else events
    # One dict a cell of the columns read, not iterrows' Series a cell (twice: the
    # bulk of these facts' time at 8,000 cells).
    run_rows = runs[[c for c in _RUN_FACTS if c in runs.columns]].to_dict("records")
    outcomes = [_outcome(run) for run in run_rows]
    if not runs.empty:
        facts.cells = len(runs)
        facts.outcomes = Counter(outcomes)
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
        present = set(timed["strategy"].astype(str).unique())
        facts.strategies = [s for s in STRATEGIES if s in present]
    facts.steps = len(timed)
    facts.steps_failed = int((timed["status"] == "failed").sum()) if len(timed) else 0
    facts.steps_void = int(void_mask(timed["status"]).sum()) if len(timed) else 0
    # One row per cell: runs.csv, or (flux-distribute's parsed CSVs have none) each log's events.
    table = runs if not runs.empty else events.drop_duplicates(["uid", "iteration"])
    facts.sources = sorted(set(source_names(table)))
    facts.places = where_of(table)
    facts.blob_note = _blob_note(table, events)
    ok = events[(events["status"] == "ok") & events["time_seconds"].notna()]
    facts.measured_seconds = float(ok["time_seconds"].astype(float).sum())
    facts.failures = _failures(timed)
    facts.bad_cells = _bad_cells(run_rows, outcomes)
    facts.problems = [
        {k: str(p.get(k, "")) for k in ("kind", "path", "reason")}
        for p in parsed.meta.get("problems", [])
        if isinstance(p, dict) and p.get("kind") != "ignored"
    ]
    records = _records(runs)
    facts.records_found = len(records)
    facts.parsed_without_record_facts = not runs.empty and not set(RECORD_FACTS) <= set(
        runs.columns
    )
    _dates_and_cost(facts, records)
    fidelity = _texts(records["emulator_fidelity"]) if "emulator_fidelity" in records else []
    facts.emulated_note = emulated_note(facts.places, fidelity)
    facts.provenance = _provenance(parsed, records, facts)
    nodes = nodes_of(runs)
    facts.capacity_notes = capacity_notes(nodes)
    facts.provenance += capacity_rows(nodes)
    return facts


def _blob_note(cells: pd.DataFrame, events: pd.DataFrame) -> str | None:
    """What the report says first when any cell's blobs were zeros (one row per cell in
    `cells`); None when none were."""
    zeros = deduplicated_rows(cells)
    count, total = int(zeros.sum()), len(cells)
    if not count:
        return None
    if count == total:
        which = "the one cell" if count == 1 else f"all {count} cells"
    else:
        which = f"{count} of {total} cells"
    # Where they ran, the blob kind left off the label: the sentence says it.
    sources = ", ".join(sorted(set(source_names(cells[zeros].drop(columns="blob")))))
    return (
        f"Deduplicated data: {which} had zero blobs ({sources}): an archive of one moves "
        "about one distinct chunk through the tree, not the blob, so these cells are ranked "
        f"and compared only among themselves. {WRITES.capitalize()}: "
        f"{archive_facts(events[deduplicated_rows(events)])}."
    )


def _blob_counts(runs: pd.DataFrame) -> str:
    """`random: 6 cells; zeros: 6 cells (deduplicated)`, or "" when runs.csv says nothing."""
    if "blob" not in runs.columns or runs.empty:
        return ""
    counts = Counter(str(b) for b in runs["blob"] if isinstance(b, str) and b)
    return "; ".join(
        f"{kind}: {n} cell{'' if n == 1 else 's'}"
        + (" (deduplicated: one distinct chunk per archive)" if kind in DEDUPLICATED else "")
        for kind, n in sorted(counts.items())
    )


def _failures(timed: pd.DataFrame) -> list[Failure]:
    if timed.empty:
        failed = timed
    else:
        failed = timed[(timed["status"] == "failed") | void_mask(timed["status"])]
    groups: dict[tuple[int, str, str, str, str], list[str]] = {}
    for row in failed.itertuples(index=False):
        # A void step's status says so and why: `void: cold cache not established`.
        reason = str(row.status) if is_void(row.status) else str(row.reason or "")
        key = (
            int(row.nodes),  # type: ignore[arg-type]
            str(row.topo),
            str(row.event),
            size_text(row.size_label),
            reason or "failed (no reason recorded)",
        )
        groups.setdefault(key, []).append(str(row.iteration))
    ordered = sorted(
        groups.items(),
        key=lambda kv: (kv[0][0], topology_order_key(kv[0][1]), event_sort_key(kv[0][2]), kv[0][3]),
    )
    return [Failure(*key, iterations=sorted(set(its), key=_natural)) for key, its in ordered]


def _natural(text: str) -> tuple[int, str]:
    return (int(text), "") if text.isdigit() else (1 << 30, text)


def _bad_cells(runs: Sequence[Mapping[Hashable, Any]], outcomes: list[str]) -> list[dict[str, str]]:
    """Each cell (a row of runs.csv) that did not succeed, given each one's outcome."""
    out = []
    for run, outcome in zip(runs, outcomes, strict=True):
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


def _dates_and_cost(facts: Facts, records: pd.DataFrame) -> None:
    if not {"started", "finished"} <= set(records.columns):
        return
    seconds: list[float] = []  # each timed cell's wall
    timed: list[int] = []  # and its row's position in records
    starts, ends = [], []
    # The two columns as arrays, not a Series a row (iterrows): 8,000 cells took 0.6 s.
    started = records["started"].to_numpy(dtype=object)
    finished = records["finished"].to_numpy(dtype=object)
    for position, (start_text, end_text) in enumerate(zip(started, finished, strict=True)):
        start, end = _when(start_text), _when(end_text)
        starts += [start] if start else []
        ends += [end] if end else []
        if start and end and end >= start:
            seconds.append((end - start).total_seconds())
            timed.append(position)
    if starts:
        facts.started = min(starts).strftime("%Y-%m-%d %H:%M %Z").strip()
    if ends:
        facts.finished = max(ends).strftime("%Y-%m-%d %H:%M %Z").strip()
    if seconds:
        facts.wall_seconds = sum(seconds)
    facts.cost = _cost(seconds, records.iloc[timed])


def _cost(seconds: list[float], cells: pd.DataFrame) -> str | None:
    """The cost of the cells' wall time (`seconds`, one a row of `cells`), each node at
    the capacity it ran on (analysis.page.cost), when every cell names a priced
    instance."""
    if not seconds:
        return None
    # This machine (the emulator, a test instance, a box) or an allocation: kary bills none.
    unbilled = free_or_unbilled_cost(where_of(cells))
    if unbilled is not None:
        return unbilled
    catalog = _catalog()
    if catalog is None:
        return None
    rows = (row for _, row in cells.iterrows())
    return cost_text([Cell.of(w, r) for w, r in zip(seconds, rows, strict=True)], catalog)


def _catalog() -> PriceCatalog | None:
    try:
        return load_price_catalog()
    except Exception:  # a missing or damaged catalog only means "cost unknown"
        return None


def _provenance(parsed: Parsed, records: pd.DataFrame, facts: Facts) -> list[tuple[str, str]]:
    runs, meta = parsed.runs, parsed.meta
    # One row per cell: runs.csv, or (flux-distribute's parsed CSVs have none) each log's events.
    cells = runs if not runs.empty else parsed.events.drop_duplicates(["uid", "iteration"])

    def found(column: str, table: pd.DataFrame = runs) -> list[str]:
        return _texts(table[column]) if column in table.columns else []

    def listed(column: str) -> str:
        return ", ".join(found(column)) or "not recorded"

    if facts.parsed_without_record_facts:
        template = "not recorded (parsed by an older kary: parse the raw tree again)"
    elif records.empty:
        template = "not recorded (no run.json)"
    else:
        template = ", ".join(found("template_hash", records)) or "not recorded"
    rows = [
        ("raw tree", str(meta.get("data", "not recorded"))),
        (
            "parsed by",
            f"kary {meta['kary_version']}" if meta.get("kary_version") else "flux-distribute",
        ),
        ("Flux versions", listed("flux_version")),
        ("instance types", listed("instance_type")),
        ("images", listed("image")),
        ("template hash", template),
        ("kary commit", listed("kary_commit")),
        ("log formats", listed("log_format")),
        ("blobs", _blob_counts(cells) or "not recorded"),
        ("run records", f"{len(records)} of {len(runs)} cells have a readable run.json"),
    ]
    places = found("place", records)
    if places:  # real Flux: a local test instance, or nested in an allocation
        rows.insert(3, ("where Flux ran", ", ".join(places)))
    links = found("links", records)
    if links:  # shaped links: what each node's link carried, both ways
        rows.insert(4 if places else 3, ("links", "; ".join(links)))
    bound = int((records["cpu_bound"] == "yes").sum()) if "cpu_bound" in records.columns else 0
    if bound:  # a box on too few cores: the cores, not the links, set the pace
        rows.append(
            (
                "CPU-bound box cells",
                f"{bound} of {len(records)}: every broker shared this machine's "
                "cores and their CPU was at least half the links' floor, so these timings "
                "measure the machine as much as the network",
            )
        )
    fidelity = found("emulator_fidelity", records)
    if fidelity:  # the emulator's timings are its own: say how close to flux-core they are
        rows.append(("emulator fidelity", "; ".join(fidelity)))
    faulted = sorted({f for text in found("emulator_faults", records) for f in text.split(", ")})
    if faulted:  # --emulator-fault: these cells test a template and measure nothing
        rows.append(("faults injected (testing only)", ", ".join(faulted)))
    if meta.get("ci_method"):
        rows.append(("intervals", str(meta["ci_method"])))
    if meta.get("note"):
        rows.append(("note", str(meta["note"])))
    return rows
