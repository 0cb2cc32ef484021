"""The parsed tables: their columns, how cell results become DataFrames, and the summary.

Rows are gathered as plain tuples and turned into one DataFrame per table at
the end: building a DataFrame row by row (the seed's `df.loc[i, :] = row`)
copies the frame on every insert and is orders of magnitude slower.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache

import numpy as np
import pandas as pd

from analysis.cells import CellResult
from analysis.model import Step
from analysis.stats import SUMMARY_STATS, summarize
from experiments.formats.cell_layout import KNOB_NAMES, knob_label_order, topology_dirname
from experiments.formats.events import event_sort_key, strategy_of, topology_order_key
from experiments.formats.run_record import RunRecord

__all__ = [
    "EVENT_COLUMNS",
    "KNOB_COLUMNS",
    "PING_COLUMNS",
    "RECORD_FACTS",
    "RUN_COLUMNS",
    "SUMMARY_KEYS",
    "build_tables",
    "order_summary",
    "summary_table",
]

# The Flux knobs a cell set, as labels (`256K`, `on`); "" where Flux's default ran.
KNOB_COLUMNS = list(KNOB_NAMES)
# The seed's columns first, in the seed's order, then kary's.
EVENT_COLUMNS = [
    "uid",
    "topology",
    "iteration",
    "nodes",
    "event",
    "size_gb",
    "time_seconds",
    "size_bytes",
    "status",
    "reason",
    "backend",
    "cluster",
    "source",
    "topo",
    "strategy",
    "size_label",
    "run_state",
    *KNOB_COLUMNS,
]
# The seed's ping columns (service is the ping target: broker or kvs;
# message_size_bytes is the pad), then kary's.
PING_COLUMNS = [
    "uid",
    "topology",
    "topology-uid",
    "iteration",
    "nodes",
    "rank",
    "service",
    "message_size_bytes",
    "message_size_mb",
    "time_ms",
    "time_seconds",
    "hops",
    "status",
    "reason",
    "backend",
    "cluster",
    "source",
    "topo",
]
# Facts of run.json that only the report reads: dates, the template, where Flux
# ran, and the emulator's fidelity and injected faults.
RECORD_FACTS = (
    "started",
    "finished",
    "template_hash",
    "place",
    "emulator_fidelity",
    "emulator_faults",
    "sweep_file",
    "sweep_sha256",
)
RUN_COLUMNS = [
    "uid",
    "topology",
    "iteration",
    "nodes",
    "topo",
    "source",
    "log_format",
    "complete",
    "state",
    "backend",
    "cluster",
    "instance_type",
    "image",
    "flux_version",
    "error",
    "steps_ok",
    "steps_failed",
    "pings_ok",
    "pings_failed",
    *KNOB_COLUMNS,
    # From run.json too, so the report needs the parsed tables alone.  A
    # parsed directory written before these were added lacks them.
    *RECORD_FACTS,
]
SUMMARY_KEYS = [
    "backend",
    "cluster",
    "nodes",
    "topology",
    "topo",
    *KNOB_COLUMNS,
    "event",
    "strategy",
    "size_label",
    "size_bytes",
    "size_gb",
]

_GIB = 2**30
# Every statistic in seconds or a ratio is rounded; the counts are whole already.
_ROUNDED = (*(s for s in SUMMARY_STATS if s not in ("n", "failed")), "seconds_per_gb")


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


_RECORD_TEXTS = ("backend", "cluster", "state", "instance_type", "image", "flux_version", "error")


def _record_texts(record: RunRecord | None) -> dict[str, str]:
    """The run.json facts the tables carry, as text ("" where unknown or no record)."""
    if record is None:
        return dict.fromkeys((*_RECORD_TEXTS, *RECORD_FACTS), "")
    texts = {name: _text(getattr(record, name)) for name in _RECORD_TEXTS}
    extra = record.model_extra or {}
    emulator = extra.get("emulator")
    emulator = emulator if isinstance(emulator, dict) else {}
    faults = emulator.get("faults")
    texts.update(
        started=_text(record.started),
        finished=_text(record.finished),
        template_hash=_text(record.template_hash),
        place=_text(extra.get("place")),
        emulator_fidelity=_text(emulator.get("fidelity")),
        emulator_faults=", ".join(map(str, faults)) if isinstance(faults, list) else "",
        sweep_file=_text(record.sweep_file),
        sweep_sha256=_text(record.sweep_sha256),
    )
    return texts


def build_tables(
    results: Iterable[CellResult],
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, dict[str, list[str]]]:
    """(events, ping, runs, overlays) from parsed cells, in the order given."""
    # Events go column by column: a cell's steps are transposed once and each
    # column extended, instead of building a tuple per step.
    events: dict[str, list[object]] = {name: [] for name in EVENT_COLUMNS}
    pings: list[tuple[object, ...]] = []
    runs: list[tuple[object, ...]] = []
    overlays: dict[str, list[str]] = {}
    for res in results:
        if not res.identified:
            continue
        assert res.topo is not None and res.nodes is not None
        topology = topology_dirname(res.topo)
        uid = f"{topology}-{res.nodes}"
        record = _record_texts(res.record)
        backend, cluster, state = record["backend"], record["cluster"], record["state"]
        source = (
            f"{res.cell.rel}/topology-experiment.out" if res.cell.rel else "topology-experiment.out"
        )
        knobs = res.knobs.labels()
        if res.steps:
            same = {
                "uid": uid, "topology": topology, "iteration": res.iteration,
                "nodes": res.nodes, "backend": backend, "cluster": cluster,
                "source": source, "topo": res.topo, "run_state": state, **knobs,
            }  # fmt: skip
            _add_steps(events, res.steps, same)
        for ping in res.pings:
            pings.append(
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
        if res.overlay and uid not in overlays:
            overlays[uid] = res.overlay
        steps_failed = sum(1 for s in res.steps if s.status != "ok")
        pings_failed = sum(1 for p in res.pings if p.status != "ok")
        runs.append(
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
                len(res.steps) - steps_failed,
                steps_failed,
                len(res.pings) - pings_failed,
                pings_failed,
                *(knobs[name] for name in KNOB_COLUMNS),
                *(record[name] for name in RECORD_FACTS),
            )
        )
    events_frame = _columns_frame(
        events,
        # numpy reads a list of numbers faster than pandas infers one.
        {"iteration": np.int64, "nodes": np.int64, "size_bytes": np.int64,
         "time_seconds": float, "size_gb": float},
    )  # fmt: skip
    gb = events_frame["size_gb"]
    if len(gb) and (gb == gb.round()).all():
        # The seed wrote whole GB sizes as integers (`1`, not `1.0`): keep that.
        events_frame["size_gb"] = gb.astype("int64")
    return (
        events_frame,
        _frame(pings, PING_COLUMNS, {"time_ms": float, "time_seconds": float, "hops": "Int64"}),
        _frame(runs, RUN_COLUMNS, {}),
        overlays,
    )


def _add_steps(
    events: dict[str, list[object]], steps: list[Step], same: Mapping[str, object]
) -> None:
    """Extend the event columns by one cell's steps; `same` holds the columns
    whose value is the cell's, the same for each of its steps."""
    count = len(steps)
    for name, value in same.items():
        events[name] += [value] * count
    event, size_label, size_bytes, seconds, status, reason = zip(*steps, strict=True)
    events["event"] += event
    events["size_gb"] += map(_size_gb, size_bytes)
    events["time_seconds"] += seconds
    events["size_bytes"] += size_bytes
    events["status"] += status
    events["reason"] += reason
    events["strategy"] += map(strategy_of, event)
    events["size_label"] += size_label


@lru_cache(maxsize=1024)
def _size_gb(size: int) -> int | float:
    # The seed's labels are whole GB numbers; keep them integral so `1` stays `1`.
    value = size / _GIB
    return int(value) if value == int(value) else value


def _int_or_float(value: float) -> int | float:
    return int(value) if value == int(value) else value


def _frame(
    rows: list[tuple[object, ...]], columns: list[str], dtypes: dict[str, object]
) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(rows, columns=columns)
    for column, dtype in dtypes.items():
        frame[column] = frame[column].astype(dtype)  # type: ignore[call-overload]
    return frame


def _columns_frame(columns: dict[str, list[object]], numbers: dict[str, object]) -> pd.DataFrame:
    """The frame of these columns; `numbers` are made arrays of those dtypes first."""
    if not next(iter(columns.values())):
        floats: dict[str, object] = {name: float for name, t in numbers.items() if t is float}
        return _frame([], list(columns), floats)
    arrays = {
        name: np.array(values, dtype=numbers[name])  # type: ignore[call-overload]
        if name in numbers
        else values
        for name, values in columns.items()
    }
    return pd.DataFrame(arrays)


def summary_table(events: pd.DataFrame) -> pd.DataFrame:
    """summary.csv: per (backend, cluster, nodes, topology, event, size) statistics.

    seconds_per_gb is the median divided by the size in GiB.
    """
    frame = events.copy()
    for column in ("backend", "cluster"):
        frame[column] = frame[column].fillna("")
    summary = summarize(frame, SUMMARY_KEYS)
    summary["seconds_per_gb"] = summary["median"] / summary["size_gb"].astype(float)
    # Timings are given to the microsecond; interpolated quartiles and ratios
    # would otherwise print float noise (0.031246000000000003).
    for column in _ROUNDED:
        summary[column] = summary[column].astype(float).round(6)
    return order_summary(summary)


def order_summary(summary: pd.DataFrame) -> pd.DataFrame:
    """Sort as a reader expects: nodes, topology (kary:1 .. kary:16, binomial), event, size."""
    if summary.empty:
        return summary.reset_index(drop=True)
    keys = pd.DataFrame(
        {
            "backend": summary["backend"].astype(str),
            "cluster": summary["cluster"].astype(str),
            "nodes": summary["nodes"],
            "topo": [topology_order_key(t) for t in summary["topo"].astype(str)],
            "knobs": [
                tuple(knob_label_order(str(label)) for label in labels)
                for labels in summary[KNOB_COLUMNS].itertuples(index=False)
            ],
            "event": [event_sort_key(e) for e in summary["event"].astype(str)],
            "size": summary["size_bytes"],
        }
    )
    order = np.lexsort(
        [
            keys[c].to_numpy() if c in ("nodes", "size") else _codes(keys[c])
            for c in reversed(keys.columns)
        ]
    )
    return summary.iloc[order].reset_index(drop=True)


def _codes(column: pd.Series) -> np.ndarray:
    """Dense ranks of a column of sortable values (tuples included)."""
    ranks = {value: i for i, value in enumerate(sorted(set(column)))}
    return np.array([ranks[v] for v in column])
