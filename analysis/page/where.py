"""Where each cell ran and what that cost, in the words the report's overview opens with.

A place is one source (analysis.tables.sources: backend, host, place, links).
What it is follows from the backend and the place run.json recorded: a box is
this machine (real brokers in network namespaces over shaped links), not a
Flux allocation; a test instance is this machine too; an allocation is the
site's, billed by its accounting; the emulator is not Flux at all, and the
report says so before anything else.

On a cluster, the nodes matter too: each cell's capacity (on-demand, spot or
mixed), each rank's node and the set of worker nodes there were (runs.csv's
`capacity`, `rank_nodes` and `node_set`).  The report flags a study that ran on
mixed capacity, or whose node set changed between cells (a node replaced, as
after a Spot preemption), and lists every node with its capacity.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pandas as pd

from analysis.tables.sources import source_names
from experiments.formats.node_text import UNKNOWN, NodeText, nodes_of_text

__all__ = [
    "Nodes",
    "Where",
    "capacity_notes",
    "capacity_rows",
    "emulated_note",
    "free_or_unbilled_cost",
    "nodes_of",
    "where_line",
    "where_of",
]

# What each (backend, place) is, and what it cost when kary bills nothing.
_WHAT = {
    ("local", ""): "kary's Flux emulator on this machine, not real Flux",
    ("flux", "box"): "a box: real Flux brokers in network namespaces over shaped links, "
    "on this machine, not a Flux allocation",
    ("flux", "test-instance"): "real Flux on this machine (flux start --test-size)",
    ("flux", "allocation"): "real Flux nested inside a Flux allocation",
    ("kubernetes", ""): "Flux Operator MiniClusters on Kubernetes",
}
_FREE = {
    ("local", ""): "$0: ran on this machine (emulated Flux)",
    ("flux", "box"): "$0: ran on this machine (a box: real Flux brokers in network namespaces "
    "over shaped links, not a Flux allocation)",
    ("flux", "test-instance"): "$0: ran on this machine (real Flux, flux start --test-size)",
    ("flux", "allocation"): "not billed by kary: ran inside a Flux allocation "
    "(the site's accounting applies)",
}


@dataclass(frozen=True)
class Where:
    """The cells that ran in one place, on one link setting."""

    source: str  # `box on flux:vm, links 200Mbit` (analysis.tables.sources)
    what: str  # what that place is, for people
    cells: int
    cpu_bound: int  # of those cells, how many a box found CPU-bound
    emulated: bool
    cost: str | None  # `$0: ...` or `not billed by kary: ...`; None: priced or unknown


def _column(table: pd.DataFrame, name: str) -> list[str]:
    if name not in table.columns:
        return [""] * len(table)
    return [value if isinstance(value, str) else "" for value in table[name]]


def where_of(table: pd.DataFrame) -> list[Where]:
    """One Where per source among `table`'s rows (runs.csv: one row per cell), by source."""
    kinds: dict[str, tuple[str, str]] = {}
    cells: Counter[str] = Counter()
    bound: Counter[str] = Counter()
    rows = zip(
        source_names(table),
        _column(table, "backend"),
        _column(table, "place"),
        _column(table, "cpu_bound"),
        strict=True,
    )
    for source, backend, place, cpu_bound in rows:
        # Only real Flux has places that differ in what they are (and cost).
        kinds.setdefault(source, (backend, place if backend == "flux" else ""))
        cells[source] += 1
        bound[source] += cpu_bound == "yes"
    return [
        Where(
            source=source,
            what=_WHAT.get(kind) or _unknown(kind),
            cells=cells[source],
            cpu_bound=bound[source],
            emulated=kind[0] == "local",
            cost=_FREE.get(kind),
        )
        for source, kind in sorted(kinds.items())
    ]


def _unknown(key: tuple[str, str]) -> str:
    backend, place = key
    if not backend:
        return "flux-distribute's logs (no run.json)"
    if backend == "flux":
        return f"real Flux ({place or 'where not recorded'})"
    return backend + (f" ({place})" if place else "")


def where_line(where: Where) -> str:
    """`4 cells · box on flux:vm, links 200Mbit · a box: real Flux brokers ...`."""
    line = f"{where.cells} cell{'' if where.cells == 1 else 's'} · {where.source} · {where.what}"
    if where.cpu_bound:
        line += (
            f" · {where.cpu_bound} of {where.cells} CPU-bound: their brokers shared too few "
            "cores, so they measure this machine as much as the links"
        )
    return line


def free_or_unbilled_cost(places: list[Where]) -> str | None:
    """The cost when kary billed none of these places; None when one was priced (or unknown)."""
    costs = list(dict.fromkeys(w.cost for w in places))
    if not costs or None in costs:
        return None
    if len(costs) == 1:
        return costs[0]
    free = [str(c) for c in costs if str(c).startswith("$0: ran on this machine (")]
    if len(free) == len(costs):
        details = [c.removeprefix("$0: ran on this machine (").removesuffix(")") for c in free]
        return f"$0: ran on this machine ({'; '.join(details)})"
    return "mixed: " + "; ".join(f"{w.source}: {w.cost}" for w in places)


def emulated_note(places: list[Where], fidelity: list[str]) -> str | None:
    """What the report says first when any cell ran on the emulator; None when none did."""
    emulated = [w for w in places if w.emulated]
    if not emulated:
        return None
    cells = sum(w.cells for w in emulated)
    total = sum(w.cells for w in places)
    hosts = ", ".join(w.source for w in emulated)
    if cells == total:
        which = "the one cell" if cells == 1 else f"all {cells} cells"
        note = (
            f"Emulated Flux: {which} ran on kary's Flux emulator ({hosts}), not on flux-core: "
            "these timings model Flux, they do not measure it."
        )
    else:
        note = (
            f"Emulated Flux: {cells} of {total} cells ran on kary's Flux emulator ({hosts}), "
            "not on flux-core; the report never ranks them with the others."
        )
    if fidelity:
        note += f" Fidelity: {'; '.join(fidelity)}."
    return note


@dataclass(frozen=True)
class Nodes:
    """The nodes the cells ran on, and the node sets each cluster's cells saw."""

    nodes: dict[str, NodeText]  # by name: as the last cell that used it recorded it
    cells: Counter[str]  # cells by their capacity (on-demand, spot, mixed)
    sets: dict[str, int]  # cluster -> how many node sets its cells saw (when more than 1)
    set_cells: dict[str, int]  # cluster -> how many of its cells recorded their node set


def nodes_of(table: pd.DataFrame) -> Nodes:
    """The nodes of runs.csv's cells (one row per cell); empty where it says nothing."""
    nodes: dict[str, NodeText] = {}
    for text in _column(table, "rank_nodes"):
        nodes.update((node.name, node) for node in nodes_of_text(text))
    cells = Counter(c for c in _column(table, "capacity") if c)
    seen: dict[str, set[str]] = {}
    counted: Counter[str] = Counter()
    for cluster, node_set in zip(
        _column(table, "cluster"), _column(table, "node_set"), strict=True
    ):
        if node_set:
            seen.setdefault(cluster, set()).add(node_set)
            counted[cluster] += 1
    sets = {cluster: len(found) for cluster, found in sorted(seen.items()) if len(found) > 1}
    return Nodes(nodes, cells, sets, dict(counted))


def capacity_notes(nodes: Nodes) -> list[str]:
    """What the overview flags: mixed capacity, and a node set that changed between cells."""
    notes = []
    kinds = Counter(n.capacity for n in nodes.nodes.values() if n.capacity != UNKNOWN)
    if len(kinds) > 1 or nodes.cells.get("mixed"):
        notes.append(
            f"Mixed capacity: these cells ran on {_kinds(kinds, 'node')} (cells: "
            f"{_kinds(nodes.cells, 'cell')}): a Spot node can be reclaimed mid-cell and need "
            "not match an on-demand one, so compare cells of one capacity (runs.csv's "
            "capacity column)."
        )
    for cluster, count in nodes.sets.items():
        where = f" on {cluster}" if cluster else ""
        notes.append(
            f"The node set changed between cells{where}: {count} sets of worker nodes over "
            f"{nodes.set_cells[cluster]} cells (a node was replaced, as after a Spot "
            "preemption), so not every cell ran on the same machines."
        )
    return notes


def capacity_rows(nodes: Nodes) -> list[tuple[str, str]]:
    """The provenance's rows: cells by capacity, and every node with its capacity."""
    if not nodes.nodes and not nodes.cells:
        return []
    listed = ", ".join(
        f"{n.name} {n.capacity}" + (f" ({n.instance_id})" if n.instance_id else "")
        for n in sorted(nodes.nodes.values())
    )
    return [
        ("capacity", _kinds(nodes.cells, "cell") or "not recorded"),
        ("nodes", listed or "not recorded"),
    ]


def _kinds(counts: Counter[str], noun: str) -> str:
    """`4 spot and 2 on-demand nodes`-like counts, most first."""
    parts = [f"{n} {kind}" for kind, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    if not parts:
        return ""
    text = parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"
    return f"{text} {noun}{'' if sum(counts.values()) == 1 else 's'}"
