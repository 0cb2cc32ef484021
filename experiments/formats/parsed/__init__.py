"""The parsed directory's format: its files, their columns and kinds, its version, and
the one writer of its files (no pandas here; the loader is `.load`).

A parsed directory holds topologies-events.csv, ping-events.csv, runs.csv,
summary.csv, topologies.json, parse.json (format stamp, counts, problems) and
plots/.  `kary parse` makes it (analysis: the CSV texts come from the parse's
rows, `analysis.tables.parsed_rows`, or from DataFrames,
`analysis.tables.parsed_dir.write_parsed`; both are written here), and both
analysis and the time model's history (experiments.estimate) read it back with
`experiments.formats.parsed.load.load_parsed`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from experiments.files import write_atomic
from experiments.formats.cell_layout import KNOB_NAMES

__all__ = [
    "ARCHIVE_COLUMNS",
    "BLOB_COLUMN",
    "EVENTS_CSV",
    "EVENT_COLUMNS",
    "EVENT_KINDS",
    "IDENTITY_FACTS",
    "KNOB_COLUMNS",
    "META_JSON",
    "OVERLAYS_JSON",
    "PARSED_FORMAT",
    "PING_COLUMNS",
    "PING_CSV",
    "PING_KINDS",
    "PLACE_COLUMNS",
    "RAN_COLUMNS",
    "RECORD_FACTS",
    "RUNS_CSV",
    "RUN_COLUMNS",
    "RUN_KINDS",
    "SUMMARY_CSV",
    "SUMMARY_KEYS",
    "TEXT_COLUMNS",
    "write_parsed_files",
]

PARSED_FORMAT = 1
EVENTS_CSV = "topologies-events.csv"
PING_CSV = "ping-events.csv"
RUNS_CSV = "runs.csv"
SUMMARY_CSV = "summary.csv"
OVERLAYS_JSON = "topologies.json"
META_JSON = "parse.json"

# The Flux knobs a cell set, as labels (`256K`, `on`); "" where Flux's default ran.
KNOB_COLUMNS = list(KNOB_NAMES)
# Where a cell ran, from its run.json: the place Flux ran (`box`, `test-instance`,
# `allocation`; "" for the emulator and Kubernetes), its shaped links as typed
# (`200Mbit, rank 0 1Gbit`; "" when unshaped) and whether a box cell was CPU-bound
# (`yes`, `no`; "" elsewhere).  They shape a cell's numbers as much as a knob does,
# so every events row and summary group carries them: nothing is ranked across them.
PLACE_COLUMNS = ["place", "links", "cpu_bound"]
# What the cell's blobs held (experiments.formats.blobs): `random` or `zeros`.  A
# kary cell says so in run.json (else its log's cell line, else its blob directory;
# a kary cell recorded before kary said made random blobs), and a seed-format log
# is `zeros` (SEED_BLOB: its only producer built zero blobs).  A zeros time
# measures each rank's disk writes, not the tree: nothing is ranked across kinds.
BLOB_COLUMN = "blob"
# What the archive of a step's strategy and size was, from the log's `KARY
# {"meta": "archive"}` line: its 1 MiB chunks, and how many objects rank 0's
# content store gained when it was made (its new distinct chunks and the archive's
# own few objects; a later strategy's archive of the same blob finds its chunks
# stored, so the most of a cell's archives at a size is the one that tells).  On
# every step of that strategy and size; empty where the log has no such line
# (`direct`, flux-distribute's logs, a kary log written before it).
ARCHIVE_COLUMNS = ["archive_chunks", "store_objects_added"]
# The Flux version a cell ran and the hash of every template it ran (run.json; "" where
# not recorded: a seed log, a kary from before it said).  Another Flux or another
# template is another benchmark, so each is a summary group of its own, as a knob is,
# and the report names them where they vary (analysis.tables.sources).
RAN_COLUMNS = ["flux_version", "template_hash"]
# flux-distribute's columns first, in flux-distribute's order, then kary's.
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
    *PLACE_COLUMNS,
    BLOB_COLUMN,
    *ARCHIVE_COLUMNS,
    *RAN_COLUMNS,
]
# The events columns that are not text or flux-distribute's numbers: nullable integers.
EVENT_KINDS = dict.fromkeys(ARCHIVE_COLUMNS, "Int64")
# flux-distribute's ping columns (service is the ping target: broker or kvs;
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
# Facts of run.json that only the report reads: dates, the template, the kary commit
# that ran the cell, where Flux ran, the emulator's fidelity and injected faults, the
# shaped links (a box's or the emulator's), whether a box cell was CPU-bound, and its layout
# (per-cell or nested, and the outer instance or MiniCluster it ran in), and
# its content store's sqlite settings (`WAL/NORMAL`; a create is not comparable across them).
RECORD_FACTS = (
    "started",
    "finished",
    "template_hash",
    "kary_commit",
    "place",
    "emulator_fidelity",
    "emulator_faults",
    "sweep_file",
    "sweep_sha256",
    "links",
    "cpu_bound",
    "layout",
    "outer",
    "content_store",
    # The capacity its nodes ran on (`on-demand`, `spot`, or `mixed`), each rank's
    # node with its capacity and instance id, and the worker nodes there were then
    # (experiments.formats.node_text): the report flags mixed capacity and a node set
    # that changed between cells.
    "capacity",
    "rank_nodes",
    "node_set",
    # The zones its nodes were in (`us-east-2a, us-east-2b`): the report prices a spot
    # node at its zone's (its region's) spot price.
    "zones",
)
# Two fields of a cell's identity (experiments/model/identity.py) no other column holds:
# the Flux view a cluster mounted, and whether ranks could share a node (`yes`, `no`);
# "" where not recorded.  `kary compare` holds two trees to them; the report does not
# read them, so a parse from before them is not one to make again.
IDENTITY_FACTS = ("flux_view", "shared_nodes")
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
    BLOB_COLUMN,
    *IDENTITY_FACTS,
]
# summary.csv's group keys: one group per cell identity, event and size.
SUMMARY_KEYS = [
    "backend",
    "cluster",
    *PLACE_COLUMNS,
    BLOB_COLUMN,
    "nodes",
    "topology",
    "topo",
    *KNOB_COLUMNS,
    *RAN_COLUMNS,
    "event",
    "strategy",
    "size_label",
    "size_bytes",
    "size_gb",
]
# How the ping and runs tables' columns are typed, as pandas makes them and
# writes them (analysis.tables.csv_cells.kind_cells; the rest are text): `complete` is
# a bool, and message_size_mb is a "number" (a 1 MB pad is `1`, 512 KB `0.5`).
PING_KINDS = {
    "iteration": "int", "nodes": "int", "rank": "int", "message_size_bytes": "int",
    "message_size_mb": "number", "time_ms": "float", "time_seconds": "float", "hops": "Int64",
}  # fmt: skip
RUN_KINDS = {
    "iteration": "int", "nodes": "int", "complete": "int", "steps_ok": "int",
    "steps_failed": "int", "pings_ok": "int", "pings_failed": "int",
}  # fmt: skip
# The columns read back as text, whatever their cells look like (a cluster named 30).
TEXT_COLUMNS = {
    "uid", "topology", "event", "status", "reason", "backend", "cluster", "source", "topo",
    "strategy", "size_label", "run_state", "topology-uid", "service", "log_format", "state",
    "instance_type", "image", "flux_version", "error", *RECORD_FACTS, *IDENTITY_FACTS,
    *KNOB_COLUMNS,
    BLOB_COLUMN,
}  # fmt: skip


def write_parsed_files(
    out_dir: Path,
    tables: Mapping[str, str | Iterable[str | bytes]],
    overlays: dict[str, list[str]],
    meta: dict[str, Any],
) -> list[Path]:
    """Write the four tables' CSV texts (by file name; a text may come in pieces, written
    one after the other), topologies.json and parse.json into out_dir, atomically file by
    file; the paths written, in that order."""
    files: dict[str, str | Iterable[str | bytes]] = {
        **{name: tables[name] for name in (EVENTS_CSV, PING_CSV, RUNS_CSV, SUMMARY_CSV)},
        OVERLAYS_JSON: json.dumps(overlays, indent=4, ensure_ascii=False) + "\n",
        META_JSON: json.dumps(meta, indent=2) + "\n",
    }
    written = []
    for name, text in files.items():
        write_atomic(out_dir / name, text)
        written.append(out_dir / name)
    return written
