"""The benchmark's vocabulary: event names per strategy, and the order topologies sort in.

The entrypoint template is rendered with these names (experiments/model/render.py)
and `kary parse` reads them back (analysis/), so the names a run prints and the
names analysis knows are one list.  They are flux-distribute's (flux-distribute), so
old and new data line up in one table.

Per strategy the steps run in this order: create the archive, distribute it
(one event, or for a strategy that distributes in waves, one event per wave:
`distribute-middle-nodes-0`, `-1`, ...), verify each distribution
(`verify-<distribute event>`), delete the archive, clean the extracted files.
A new strategy is one more entry in STRATEGY_EVENTS.

`direct` is kary's baseline, not flux-distribute's: no archive and no tree, every
rank but 0 downloads the blob from rank 0 over plain HTTP.  Its create step
starts rank 0's HTTP server, its delete step stops it.

The ping experiment (`kary run --experiment ping`, flux-distribute's ping variant)
has events of its own: one `flux ping` from rank 0 per rank, service and
payload size, named `flux-ping-<service>` in its KARY line; its legacy EVENT
line is flux-distribute's `flux-ping-<service>-size-<size>-rank-<rank>`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from experiments.formats.cell_layout import size_from_label

__all__ = [
    "EXPERIMENTS",
    "GENERATE_BLOB",
    "PING_SERVICES",
    "SETUP_EVENTS",
    "STRATEGIES",
    "STRATEGY_EVENTS",
    "VERIFY_PREFIX",
    "StrategyEvents",
    "event_sort_key",
    "ping_event",
    "ping_service",
    "ping_step_name",
    "split_event_label",
    "strategy_events",
    "strategy_of",
    "topology_order_key",
    "verify_event",
]

VERIFY_PREFIX = "verify-"


def verify_event(event: str) -> str:
    """The step that checks a distribution's copies: `verify-distribute-all-nodes`."""
    return f"{VERIFY_PREFIX}{event}"


@dataclass(frozen=True)
class StrategyEvents:
    """The events one distribution strategy emits, in the order it runs them."""

    strategy: str
    create: str
    distribute: str  # the event, or for a waved strategy the prefix of `<prefix>-<wave>`
    delete: str
    clean: str
    waved: bool = False

    def distribute_event(self, wave: int | None = None) -> str:
        """`distribute-all-nodes`; for a waved strategy, wave 0 is `distribute-middle-nodes-0`."""
        if self.waved != (wave is not None):
            raise ValueError(f"strategy {self.strategy}: wave {wave!r} does not fit its events")
        return self.distribute if wave is None else f"{self.distribute}-{wave}"

    def distribute_wave(self, event: str) -> int | None:
        """The wave a distribute event is (0 when not waved); None when it is not one of ours."""
        if not self.waved:
            return 0 if event == self.distribute else None
        prefix, sep, wave = event.rpartition("-")
        if sep and prefix == self.distribute and wave.isdigit() and wave.isascii():
            return int(wave)
        return None


STRATEGY_EVENTS: tuple[StrategyEvents, ...] = (
    StrategyEvents(
        "all", "create-archive", "distribute-all-nodes", "delete-archive-all-nodes",
        "clean-all-nodes",
    ),
    StrategyEvents(
        "leaves", "create-leaf-nodes", "distribute-leaf-nodes", "delete-archive-leaf-nodes",
        "clean-leaf-nodes",
    ),
    StrategyEvents(
        "middle", "create-middle-nodes", "distribute-middle-nodes", "delete-archive-middle-nodes",
        "clean-middle-nodes", waved=True,
    ),
    StrategyEvents(
        "direct", "create-direct", "distribute-direct", "delete-direct", "clean-direct",
    ),
)  # fmt: skip
STRATEGIES: tuple[str, ...] = tuple(s.strategy for s in STRATEGY_EVENTS)
_BY_STRATEGY = {s.strategy: s for s in STRATEGY_EVENTS}

# Setup work done before the timed steps (kary's blob generation): kept as its
# own event so it never mixes with the benchmark's timings.
GENERATE_BLOB = "generate-blob"
SETUP_EVENTS = frozenset({GENERATE_BLOB})
SETUP = "setup"

# What a cell measures: `distribute` (the strategies above) or `ping`.
EXPERIMENTS: tuple[str, ...] = ("distribute", "ping")
# The services the ping experiment pings on each rank, as flux-distribute did.
PING_SERVICES: tuple[str, ...] = ("broker", "kvs")
_PING_PREFIX = "flux-ping-"


def ping_event(service: str) -> str:
    """The KARY event of one ping of `service`: `flux-ping-broker`."""
    return f"{_PING_PREFIX}{service}"


def ping_service(event: str) -> str | None:
    """`flux-ping-kvs` -> `kvs`; None for an event that is not a ping of a known service."""
    service = event[len(_PING_PREFIX) :] if event.startswith(_PING_PREFIX) else ""
    return service if service in PING_SERVICES else None


def ping_step_name(service: str, size_label: str, rank: int) -> str:
    """flux-distribute's name for one ping: `flux-ping-broker-size-0-rank-3` (its EVENT
    line, its uid)."""
    return f"{ping_event(service)}-size-{size_label}-rank-{rank}"


# A step's place within its strategy: create, distribute (and its verify), delete, clean.
_CREATE, _DISTRIBUTE, _DELETE, _CLEAN = range(4)
_UNKNOWN = (len(STRATEGY_EVENTS) + 1, 0, 0, 0)


def strategy_events(strategy: str) -> StrategyEvents:
    """The events of one strategy; KeyError for a strategy there is none of."""
    return _BY_STRATEGY[strategy]


@lru_cache(maxsize=4096)
def _place(event: str) -> tuple[int, int, int, int]:
    """(strategy rank, step, wave, 1 if a verify) for a known event; _UNKNOWN otherwise.

    Setup events rank before every strategy.
    """
    if event in SETUP_EVENTS:
        return (0, 0, 0, 0)
    verify = event.startswith(VERIFY_PREFIX)
    base = event[len(VERIFY_PREFIX) :] if verify else event
    for rank, names in enumerate(STRATEGY_EVENTS, start=1):
        wave = names.distribute_wave(base)
        if wave is not None:
            return (rank, _DISTRIBUTE, wave, int(verify))
        if verify:  # only a distribution is verified
            continue
        for step, name in ((_CREATE, names.create), (_DELETE, names.delete), (_CLEAN, names.clean)):
            if base == name:
                return (rank, step, 0, 0)
    return _UNKNOWN


def strategy_of(event: str) -> str | None:
    """The strategy an event belongs to (`all`, ..., `direct`, `setup`), None if unknown."""
    rank = _place(event)[0]
    if rank == 0:
        return SETUP
    return STRATEGY_EVENTS[rank - 1].strategy if rank <= len(STRATEGY_EVENTS) else None


def event_sort_key(event: str) -> tuple[int, int, int, int, str]:
    """Setup, then each strategy's steps in the order they run; unknown events last, by name."""
    return (*_place(event), event)


@lru_cache(maxsize=65536)
def split_event_label(name: str) -> tuple[str, str] | None:
    """`distribute-middle-nodes-0-16M` -> (`distribute-middle-nodes-0`, `16M`), or None.

    The legacy `EVENT <name>-<size>` line joins the two with '-'.
    """
    event, sep, label = name.rpartition("-")
    if not sep or not event or size_from_label(label) is None:
        return None
    return event, label


_TOPO = re.compile(r"^(?P<scheme>kary|binomial|mincrit)(?:[:-](?P<k>[0-9]+))?$")


def topology_order_key(topo: str) -> tuple[int, int, str]:
    """The one topology order: kary:1, kary:2, ..., kary:16, kary:0 (flat), binomial, mincrit.

    kary by fan-out, so depth falls left to right; kary:0 (every rank under
    rank 0) is the widest fan-out of all, hence last of the karys.  Accepts
    either spelling (`kary:2` or the directory name `kary-2`); anything else
    sorts after, by name, so analysis can order whatever a raw tree holds.
    """
    match = _TOPO.match(str(topo))
    if match is None:
        return (9, 0, str(topo))
    scheme, k = match.group("scheme"), match.group("k")
    if scheme == "kary" and k is not None:
        return (0, int(k) if int(k) > 0 else 10**9, "")
    if scheme == "binomial":
        return (1, 0, "")
    return (2, -1 if k is None else int(k), "")
