"""The links' floor beside a box cell's median in the report, as docs/box.md's tables show it.

A box cell's distribution can be no faster than its busiest shaped link allows
(experiments/estimate/link_floor.py, the rule run.json's `box.distributions`
records).  The tables carry a cell's links as typed (`200Mbit`, `200Mbit, rank 0
1Gbit, 1ms`, `200Mbit, groups of 4 via 50Mbit`: analysis/tables/rows.py); this
reads that text back and computes each (source, nodes, topology, size)'s floor, so
the report can say how far above it a median is.
"""

from __future__ import annotations

import re

import pandas as pd

from analysis.tables.sources import source_names
from experiments.errors import UserError
from experiments.estimate.link_floor import distribution_floors
from experiments.formats.events import strategy_events, strategy_of
from experiments.model.links import LinkSettings, link_settings

__all__ = ["FloorKey", "box_floors", "links_of_text"]

FloorKey = tuple[str, int, str, int, str]  # source, nodes, topology, size, strategy
_GROUPS = re.compile(r"^groups of (?P<size>\d+) via (?P<bw>\S+)$")


def links_of_text(text: str) -> LinkSettings | None:
    """The links the tables' text names; None when unshaped or not kary's form."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        return None
    bandwidth = latency = root = group_bandwidth = None
    group_size = None
    for part in parts:
        if part.startswith("rank 0 "):
            root = part.removeprefix("rank 0 ")
        elif match := _GROUPS.match(part):
            group_size, group_bandwidth = int(match["size"]), match["bw"]
        elif re.fullmatch(r"[0-9.]+\s*[mun]?s(ec)?", part):
            latency = part
        else:
            bandwidth = part
    try:
        return link_settings(bandwidth, latency, root, group_size, group_bandwidth)
    except UserError:
        return None


def box_floors(events: pd.DataFrame, strategies: list[str]) -> dict[FloorKey, float]:
    """Each box (source, nodes, topology, size, strategy)'s distribution floor, in seconds."""
    if events.empty or "place" not in events.columns or "links" not in events.columns:
        return {}
    box = events[(events["place"] == "box") & (events["links"].astype(str) != "")]
    if box.empty:
        return {}
    box = box.assign(where=source_names(box))
    blob = box["blob"] if "blob" in box.columns else pd.Series("random", index=box.index)
    box = box.assign(kind=blob.replace("", "random"))
    box = box.assign(strategy=[strategy_of(str(e)) or "" for e in box["event"]])
    box = box[box["strategy"].isin(strategies)]
    columns = ["where", "nodes", "topo", "size_bytes", "links", "kind", "strategy"]
    floors: dict[FloorKey, float] = {}
    for where, nodes, topo, size, text, kind, strategy in (
        box[columns].drop_duplicates().itertuples(index=False)
    ):
        links = links_of_text(str(text))
        if links is None or not links.shaped:
            continue
        if True:
            event = strategy_events(strategy).distribute_event()
            found = distribution_floors(
                int(nodes), str(topo), strategy, int(size), links, str(kind)
            )
            if event in found:
                floors[(str(where), int(nodes), str(topo), int(size), strategy)] = found[
                    event
                ].seconds
    return floors
