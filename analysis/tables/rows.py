"""The rows of the parsed tables, as plain Python: cell results in, columns and tuples out.

No pandas here: a forked parse worker turns its cells into `TableRows` (and
the events rows into CSV text) without importing it, while the parent process
imports pandas and later makes DataFrames of every worker's rows
(analysis.tables.frames).  Rows follow the order of the cells given.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import repeat
from typing import TYPE_CHECKING

from analysis.read.cell import CellResult
from analysis.read.records import Step
from analysis.tables.csv_cells import (
    float_cells,
    int_cells,
    join_rows,
    kind_cells,
    quoted,
    table_text,
    text_cells,
)
from experiments.formats.cell_layout import topology_dirname
from experiments.formats.events import strategy_of
from experiments.formats.kary_line import content_store_text
from experiments.formats.node_text import node_set_text, rank_nodes_text, zones_text
from experiments.formats.parsed import (
    ARCHIVE_COLUMNS,
    BLOB_COLUMN,
    EVENT_COLUMNS,
    EVENT_KINDS,
    IDENTITY_FACTS,
    KNOB_COLUMNS,
    PLACE_COLUMNS,
    RAN_COLUMNS,
    RECORD_FACTS,
)
from experiments.model.links import QUEUE_BEFORE_LINK_QUEUES

if TYPE_CHECKING:
    from experiments.formats.run_record import RunRecord

__all__ = [
    "CodedColumn",
    "TableRows",
    "events_csv_rows",
    "overlays_of",
    "records_csv",
    "size_gb_of",
    "table_rows",
]

# Event columns by kind, for writing them as CSV (the rest are text).
_EVENT_INTS = ("iteration", "nodes", "size_bytes")
_GIB = 2**30


@dataclass
class TableRows:
    """Rows of the events, ping and runs tables for some cells.

    `events` is column by column (EVENT_COLUMNS); `ping` and `runs` are row
    tuples (PING_COLUMNS, RUN_COLUMNS).  `counts` has, per cell given, how many
    rows it gave each table (events, ping, runs), in order: a cell's rows are
    consecutive.  `whole_gb`: every size_gb here is a whole number (flux-distribute's
    1..10 GB), which the events table then writes as integers.

    `groups` numbers the summary's groups these rows hold, in the order they
    first appear: (cell key number, event, size_label, size_bytes), where
    `cell_keys` numbers the cells' part of SUMMARY_KEYS (backend .. knobs).
    `group_ids` has each events row's group number.  The summary then needs
    no key columns compared row by row.
    """

    events: dict[str, list[object]] = field(
        default_factory=lambda: {name: [] for name in EVENT_COLUMNS}
    )
    ping: list[tuple[object, ...]] = field(default_factory=list)
    runs: list[tuple[object, ...]] = field(default_factory=list)
    counts: list[tuple[int, int, int]] = field(default_factory=list)
    whole_gb: bool = True
    cell_keys: dict[tuple[object, ...], int] = field(default_factory=dict)
    groups: dict[tuple[int, str, str, int], int] = field(default_factory=dict)
    group_ids: list[int] = field(default_factory=list)
    # (cell key number, events, size labels, sizes) of a cell's steps -> their group
    # numbers: what `_add_steps` numbered already.  Emptied by `pack`.
    steps_groups: dict[tuple[object, ...], list[int]] = field(default_factory=dict, repr=False)

    def pack(self) -> None:
        """Make the number columns typed arrays (a float NaN where no time): a worker
        sends them back as bytes, and numpy reads them without a copy."""
        self.steps_groups = {}  # only for numbering; not sent back
        for name, code in _NUMBER_CODES.items():
            values = self.events[name]
            if name == "time_seconds" and None in values:
                values = [_NAN if v is None else v for v in values]
            self.events[name] = array(code, values)  # type: ignore[assignment,type-var]
        self.group_ids = array("q", self.group_ids)  # type: ignore[assignment]
        for name, values in self.events.items():
            if isinstance(values, list) and set(map(type, values)) <= _CODED_TYPES:
                self.events[name] = CodedColumn.of(values)  # type: ignore[assignment]


class CodedColumn:
    """A text column as its distinct values and one small code per row.

    Most of the events table's columns hold a cell's value in each of its rows
    (backend, knobs, source): as lists they were most of what a large parse held
    (8 bytes a row a column; 0.7 GB at 100,000 cells).  Reads as the list it was:
    iterate, len, count, list().
    """

    __slots__ = ("codes", "values")

    def __init__(self, values: tuple[object, ...], codes: array[int]) -> None:
        self.values, self.codes = values, codes

    @classmethod
    def of(cls, column: list[object]) -> CodedColumn:
        """Coded in C (dict.fromkeys, map): no Python call per row."""
        values = tuple(dict.fromkeys(column))
        numbers = {value: i for i, value in enumerate(values)}
        kind = "B" if len(values) <= 1 << 8 else "H" if len(values) <= 1 << 16 else "I"
        return cls(values, array(kind, map(numbers.__getitem__, column)))

    def __iter__(self) -> Iterator[object]:
        return map(self.values.__getitem__, self.codes)

    def __len__(self) -> int:
        return len(self.codes)

    def count(self, value: object) -> int:
        return sum(self.codes.count(i) for i, v in enumerate(self.values) if v == value)

    def __reduce__(self) -> tuple[object, ...]:
        return (CodedColumn, (self.values, self.codes))


# The typed-array codes of the number columns of the events table.
_NUMBER_CODES = {
    "iteration": "q", "nodes": "q", "size_bytes": "q", "time_seconds": "d", "size_gb": "d"
}  # fmt: skip
_NAN = float("nan")
# The columns coded by `pack`: text, and None where missing.  Only these: a dict
# would take 1, 1.0 and True for one value.
_CODED_TYPES = {str, type(None)}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


_RECORD_TEXTS = ("backend", "cluster", "state", "instance_type", "image", "flux_version", "error")


def _record_texts(record: RunRecord | None) -> dict[str, str]:
    """The run.json facts the tables carry, as text ("" where unknown or no record)."""
    if record is None:
        return dict.fromkeys((*_RECORD_TEXTS, *RECORD_FACTS, *IDENTITY_FACTS), "")
    texts = {name: _text(getattr(record, name)) for name in _RECORD_TEXTS}
    extra = record.model_extra or {}
    emulator = extra.get("emulator")
    emulator = emulator if isinstance(emulator, dict) else {}
    faults = emulator.get("faults")
    box = extra.get("box")
    box = box if isinstance(box, dict) else {}
    links = box.get("links")
    links = links if isinstance(links, dict) else emulator
    cpu_bound = box.get("cpu_bound")
    # The nested layout's outer instance (or MiniCluster) the cell ran in.
    nested = extra.get("nested_in")
    nested = nested if isinstance(nested, dict) else {}
    identity = extra.get("identity")
    identity = identity if isinstance(identity, dict) else {}
    shared = identity.get("shared_nodes")
    texts.update(
        started=_text(record.started),
        finished=_text(record.finished),
        template_hash=_text(record.template_hash),
        kary_commit=_text(record.kary_commit),
        place=_text(extra.get("place")),
        emulator_fidelity=_text(emulator.get("fidelity")),
        emulator_faults=", ".join(map(str, faults)) if isinstance(faults, list) else "",
        sweep_file=_text(record.sweep_file),
        sweep_sha256=_text(record.sweep_sha256),
        links=_links_text(links, in_box=bool(box)),
        cpu_bound={True: "yes", False: "no"}.get(cpu_bound, "")
        if isinstance(cpu_bound, bool)
        else "",
        layout=_text(extra.get("layout")),
        outer=_text(nested.get("name")),
        content_store=content_store_text(extra.get("content_store")),
        capacity=_text(extra.get("capacity")),
        rank_nodes=rank_nodes_text(extra.get("rank_nodes")),
        node_set=node_set_text(extra.get("node_set")),
        zones=zones_text(extra.get("zones")),
        flux_view=_text(identity.get("flux_view")),
        shared_nodes={True: "yes", False: "no"}.get(shared, "") if isinstance(shared, bool) else "",
    )
    return texts


def _links_text(links: dict[str, object], in_box: bool = False) -> str:
    """Shaped links as typed: `200Mbit`, `200Mbit, rank 0 1Gbit, 1ms`,
    `200Mbit, groups of 4 via 50Mbit`; "" when unshaped.  A box's shaped rates say
    their queue too (`200Mbit, fair queues`, `200Mbit, one FIFO`): the two are other
    links, never one sample (box/shaping.py)."""
    parts = [_text(links.get("link_bandwidth"))]
    if root := _text(links.get("root_link_bandwidth")):
        parts.append(f"rank 0 {root}")
    parts.append(_text(links.get("link_latency")))
    group = links.get("group_size")
    grouped = isinstance(group, int) and not isinstance(group, bool) and group > 0
    if grouped:
        parts.append(f"groups of {group} via {_text(links.get('group_link_bandwidth'))}")
    if in_box and (parts[0] or root or grouped):
        queue = _text(links.get("queue")) or QUEUE_BEFORE_LINK_QUEUES
        parts.append(_QUEUE_WORDS.get(queue, queue))
    return ", ".join(part for part in parts if part)


_QUEUE_WORDS = {"fair": "fair queues", "fifo": "one FIFO"}


def table_rows(results: Iterable[CellResult]) -> TableRows:
    """The table rows of these cells, in the order given; unidentified cells give none."""
    rows = TableRows()
    # Events go column by column: a cell's steps are transposed once and each
    # column extended, instead of building a tuple per step.
    for res in results:
        if not res.identified:
            rows.counts.append((0, 0, 0))
            continue
        rows.counts.append((len(res.steps), len(res.pings), 1))
        assert res.topo is not None and res.nodes is not None
        topology = topology_dirname(res.topo)
        uid = f"{topology}-{res.nodes}"
        record = _record_texts(res.record)
        backend, cluster, state = record["backend"], record["cluster"], record["state"]
        source = (
            f"{res.cell.rel}/topology-experiment.out" if res.cell.rel else "topology-experiment.out"
        )
        knobs = res.knobs.labels()
        place = {name: record[name] for name in PLACE_COLUMNS}
        ran = {name: record[name] for name in RAN_COLUMNS}
        if res.steps:
            same = {
                "uid": uid, "topology": topology, "iteration": res.iteration,
                "nodes": res.nodes, "backend": backend, "cluster": cluster,
                "source": source, "topo": res.topo, "run_state": state, **knobs, **place,
                BLOB_COLUMN: res.blob, **ran,
            }  # fmt: skip
            # In SUMMARY_KEYS order: a box cell at 200Mbit and a test-instance cell
            # of one design are two groups, never one; nor are zero and random blobs.
            cell_key: tuple[object, ...] = (backend, cluster, *place.values(), res.blob)
            cell_key += (res.nodes, topology, res.topo)
            cell_key += tuple(knobs[name] for name in KNOB_COLUMNS)
            cell_key += tuple(ran.values())  # another Flux or template: another group
            _add_steps(rows, res.steps, same, cell_key)
            _add_archive_counts(rows, res)
        for ping in res.pings:
            rows.ping.append(
                (
                    f"flux-ping-{ping.service}-size-{ping.size_label}-rank-{ping.rank}",
                    topology,
                    uid,
                    res.iteration,
                    res.nodes,
                    ping.rank,
                    ping.service,
                    ping.pad_bytes,
                    _int_or_float(ping.pad_bytes / 2**20),
                    ping.ms,
                    None if ping.ms is None else ping.ms / 1000,
                    ping.hops,
                    ping.status,
                    ping.reason,
                    backend,
                    cluster,
                    source,
                    res.topo,
                )
            )
        # A void step is neither: it counts in steps_void (parse meta, report).
        statuses = [s.status for s in res.steps]
        steps_ok, steps_failed = statuses.count("ok"), statuses.count("failed")
        pings_failed = sum(1 for p in res.pings if p.status != "ok")
        rows.runs.append(
            (
                uid,
                topology,
                res.iteration,
                res.nodes,
                res.topo,
                res.cell.rel,
                res.log_format,
                res.complete,
                state,
                backend,
                cluster,
                record["instance_type"],
                record["image"],
                record["flux_version"],
                record["error"],
                steps_ok,
                steps_failed,
                len(res.pings) - pings_failed,
                pings_failed,
                *(knobs[name] for name in KNOB_COLUMNS),
                *(record[name] for name in RECORD_FACTS),
                res.blob,
                *(record[name] for name in IDENTITY_FACTS),
            )
        )
    rows.whole_gb = all(type(gb) is int for gb in rows.events["size_gb"])
    return rows


def overlays_of(results: Iterable[CellResult]) -> dict[str, list[str]]:
    """topologies.json: the first printed overlay of each uid (`kary-2-8`), in cell order."""
    overlays: dict[str, list[str]] = {}
    for res in results:
        if res.identified and res.overlay:
            uid = f"{topology_dirname(res.topo)}-{res.nodes}"  # type: ignore[arg-type]
            overlays.setdefault(uid, res.overlay)
    return overlays


def _add_steps(
    rows: TableRows, steps: list[Step], same: Mapping[str, object], cell_key: tuple[object, ...]
) -> None:
    """Extend the event columns by one cell's steps; `same` holds the columns
    whose value is the cell's, the same for each of its steps, and `cell_key`
    the cell's part of each step's summary group."""
    events = rows.events
    count = len(steps)
    for name, value in same.items():
        events[name] += [value] * count
    event, size_label, size_bytes, seconds, status, reason = zip(*steps, strict=True)
    events["event"] += event
    events["size_gb"] += map(size_gb_of, size_bytes)
    events["time_seconds"] += seconds
    events["size_bytes"] += size_bytes
    events["status"] += status
    events["reason"] += reason
    events["strategy"] += map(_strategy, event)
    events["size_label"] += size_label
    cell = rows.cell_keys.setdefault(cell_key, len(rows.cell_keys))
    # The cells of one design run the same steps: their groups are numbered once.
    memo = (cell, event, size_label, size_bytes)
    ids = rows.steps_groups.get(memo)
    if ids is None:
        groups = rows.groups
        keys = zip(repeat(cell, count), event, size_label, size_bytes, strict=True)
        ids = rows.steps_groups[memo] = [groups.setdefault(key, len(groups)) for key in keys]
    rows.group_ids += ids


def _add_archive_counts(rows: TableRows, res: CellResult) -> None:
    """Each step's archive: the chunks and store growth its log's archive line gave for
    the step's strategy and size (None where there is no such line)."""
    events = rows.events
    if not res.archives:
        for name in ARCHIVE_COLUMNS:
            events[name] += [None] * len(res.steps)
        return
    counts = [res.archives.get((s.size_label, _strategy(s.event) or "")) for s in res.steps]
    events["archive_chunks"] += [c.chunks if c else None for c in counts]
    events["store_objects_added"] += [c.store_objects_added if c else None for c in counts]


@lru_cache(maxsize=1024)
def size_gb_of(size: int) -> int | float:
    """A size in GiB; whole numbers as int (flux-distribute's labels are whole GB: `1`
    stays `1`)."""
    value = size / _GIB
    return int(value) if value == int(value) else value


@lru_cache(maxsize=1024)
def _strategy(event: str) -> str | None:
    return strategy_of(event)


def _int_or_float(value: float) -> int | float:
    return int(value) if value == int(value) else value


def events_csv_rows(rows: TableRows, whole_gb: bool) -> str | None:
    """The events rows as the events table's CSV writes them, without its header line.

    `whole_gb`: whether the whole table (not only these rows) writes size_gb as
    integers.  None where a value needs what only pandas' writer does (a
    carriage return); the caller then writes the table from its DataFrame.
    """
    events = rows.events
    if not events["uid"]:
        return ""
    columns: list[list[str] | None] = []
    for name in EVENT_COLUMNS:
        values = events[name]
        if name in _EVENT_INTS:
            columns.append(int_cells(values))
        elif name == "size_gb":
            columns.append(int_cells(values) if whole_gb else float_cells(values))
        elif name == "time_seconds":
            columns.append(float_cells(values))
        elif name in EVENT_KINDS:
            columns.append(kind_cells(EVENT_KINDS[name], values))
        else:
            columns.append(text_cells(values))
    return join_rows(columns)


def records_csv(
    records: list[tuple[object, ...]], columns: list[str], kinds: Mapping[str, str]
) -> str | None:
    """The ping or runs table's CSV text from its row tuples (PING_KINDS, RUN_KINDS); None
    where a value needs what only pandas' writer does (a carriage return)."""
    values = list(zip(*records, strict=True)) if records else [()] * len(columns)
    cells = [
        kind_cells(kinds.get(name, "text"), list(column))
        for name, column in zip(columns, values, strict=True)
    ]
    return table_text(quoted(columns), cells)
