"""Where each cell ran and what that cost, in the words the report's overview opens with.

A place is one source (analysis.tables.sources: backend, host, place, links).
What it is follows from the backend and the place run.json recorded: a box is
this machine (real brokers in network namespaces over shaped links), not a
Flux allocation; a test instance is this machine too; an allocation is the
site's, billed by its accounting; the emulator is not Flux at all, and the
report says so before anything else.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pandas as pd

from analysis.tables.sources import source_names

__all__ = ["Where", "emulated_note", "free_or_unbilled_cost", "where_line", "where_of"]

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
        return "the seed's logs (no run.json)"
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
