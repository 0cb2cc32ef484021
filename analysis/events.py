"""The benchmark's vocabulary: event names, strategies, size labels, topology order.

One place knows which events the benchmark emits (seed and kary templates
alike), how an `EVENT <name>-<size>` label splits, how big a size label is,
and in what order topologies read naturally (kary:1, kary:2, ..., binomial).
"""

from __future__ import annotations

import re
from functools import lru_cache

from experiments.model.topology import topo_from_dirname, topology_dirname

__all__ = [
    "EVENT_ORDER",
    "SETUP_EVENTS",
    "event_sort_key",
    "size_from_label",
    "size_text",
    "source_label",
    "split_event_label",
    "strategy_of",
    "topo_from_dirname",
    "topology_dirname",
    "topology_order_key",
]

# Setup work done before the timed steps (kary's blob generation): kept as its
# own event so it never mixes with the benchmark's timings.
SETUP_EVENTS = frozenset({"generate-blob"})

# The order a reader expects: per strategy, the steps in the order they run.
EVENT_ORDER = (
    "generate-blob",
    "create-archive",
    "distribute-all-nodes",
    "verify-distribute-all-nodes",
    "delete-archive-all-nodes",
    "clean-all-nodes",
    "create-leaf-nodes",
    "distribute-leaf-nodes",
    "verify-distribute-leaf-nodes",
    "delete-archive-leaf-nodes",
    "clean-leaf-nodes",
    "create-middle-nodes",
    "distribute-middle-nodes-0",
    "verify-distribute-middle-nodes-0",
    "distribute-middle-nodes-1",
    "verify-distribute-middle-nodes-1",
    "delete-archive-middle-nodes",
    "clean-middle-nodes",
)
_EVENT_RANK = {name: i for i, name in enumerate(EVENT_ORDER)}

_STRATEGY = {
    "generate-blob": "setup",
    "create-archive": "all",
    "distribute-all-nodes": "all",
    "delete-archive-all-nodes": "all",
    "clean-all-nodes": "all",
    "create-leaf-nodes": "leaves",
    "distribute-leaf-nodes": "leaves",
    "delete-archive-leaf-nodes": "leaves",
    "clean-leaf-nodes": "leaves",
    "create-middle-nodes": "middle",
    "delete-archive-middle-nodes": "middle",
    "clean-middle-nodes": "middle",
}
# The middle strategy distributes in waves, one event per tree level.
_MIDDLE_WAVE = re.compile(r"^distribute-middle-nodes-[0-9]+$")

# `16M`, `1G`, `1.5G`; a bare number is the seed's GB label (`1` .. `10`).
_SIZE_LABEL = re.compile(r"^(?P<num>[0-9]+(?:\.[0-9]+)?)(?P<unit>[KMGTB]?)$")
_UNIT = {"": 2**30, "B": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


@lru_cache(maxsize=4096)
def strategy_of(event: str) -> str | None:
    """The strategy an event belongs to (all, leaves, middle, setup), None if unknown."""
    base = event[len("verify-") :] if event.startswith("verify-") else event
    strategy = _STRATEGY.get(base)
    if strategy is not None:
        return None if base != event and not base.startswith("distribute-") else strategy
    if _MIDDLE_WAVE.match(base):
        return "middle"
    return None


def event_sort_key(event: str) -> tuple[int, str]:
    """Known events in benchmark order, then unknown ones alphabetically."""
    return (_EVENT_RANK.get(event, len(EVENT_ORDER)), event)


@lru_cache(maxsize=4096)
def size_from_label(label: str) -> int | None:
    """Bytes for a size label: `16M` -> 16777216; the seed's bare `1` means 1 GiB.

    The seed's `1gb.txt` blobs are taken as 2**30 bytes; None when unreadable.
    """
    match = _SIZE_LABEL.match(label)
    if match is None:
        return None
    size = float(match.group("num")) * _UNIT[match.group("unit")]
    return int(size) if size >= 1 and size == int(size) else None


def source_label(backend: object, cluster: object) -> str:
    """Where timings come from: `local:vm`, `kubernetes/gke-30`, or `seed logs`."""
    backend = backend if isinstance(backend, str) else ""
    cluster = cluster if isinstance(cluster, str) else ""
    if not backend and not cluster:
        return "seed logs"
    if not cluster or cluster.startswith(f"{backend}:"):  # local:HOST names itself
        return cluster or backend
    return f"{backend}/{cluster}"


def size_text(label: object) -> str:
    """`1` (the seed's bare GB label) -> `1G`, so it reads beside kary's `16M`."""
    text = str(label)
    return f"{text}G" if text.isdigit() else text


@lru_cache(maxsize=65536)
def split_event_label(name: str) -> tuple[str, str] | None:
    """`distribute-middle-nodes-0-16M` -> (`distribute-middle-nodes-0`, `16M`), or None."""
    event, sep, label = name.rpartition("-")
    if not sep or not event or size_from_label(label) is None:
        return None
    return event, label


_TOPO = re.compile(r"^(?P<scheme>kary|binomial|mincrit)(?:[:-](?P<k>[0-9]+))?$")


def topology_order_key(topo: str) -> tuple[int, int, str]:
    """Sort key: kary:1, kary:2, ..., kary:16, kary:0 (flat), binomial, mincrit, others.

    Accepts either spelling (`kary:2` or the directory form `kary-2`).
    """
    match = _TOPO.match(str(topo))
    if match is None:
        return (9, 0, str(topo))
    scheme, k = match.group("scheme"), match.group("k")
    if scheme == "kary" and k is not None:
        # kary:0 is flat: every rank under 0, i.e. the widest fan-out of all.
        return (0, int(k) if int(k) > 0 else 10**9, "")
    if scheme == "binomial":
        return (1, 0, "")
    return (2, -1 if k is None else int(k), "")
