"""Builders for synthetic logs and raw trees: kary's own format and flux-distribute's legacy one.

Imported by the analysis tests (pytest puts this folder on sys.path).  kary's
own format is built from experiments/formats (cell ids, KARY lines, event
names, run.json's names), so a test double cannot drift from what a run writes.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.formats.cell_layout import cell_id
from experiments.formats.events import (
    GENERATE_BLOB,
    VERIFY_PREFIX,
    ping_event,
    ping_step_name,
    strategy_events,
)
from experiments.formats.kary_line import format_kary_line
from experiments.formats.run_record import LOG_NAME, RECORD_FORMAT, RECORD_NAME
from experiments.model.topology import build_tree, render_overlay


def _steps(strategy: str, verify: bool) -> list[str]:
    """A single-wave strategy's events in the order the entrypoint runs them."""
    events = strategy_events(strategy)
    distribute = events.distribute_event()
    verified = [VERIFY_PREFIX + distribute] if verify else []
    return [events.create, distribute, *verified, events.delete, events.clean]


# `all` and `direct` with their copies verified, `leaves` without.
STEPS = {
    "all": _steps("all", verify=True),
    "leaves": _steps("leaves", verify=False),
    "direct": _steps("direct", verify=True),
}
SIZES = {"16M": 16 * 2**20, "64M": 64 * 2**20, "1G": 2**30}


def header(nodes: int, topo: str) -> str:
    overlay = render_overlay(build_tree(topo, nodes))
    return (
        'MODULE STATS CONTENT\n\x1b[1;39m{\n  \x1b[0m\x1b[34;1m"count"\x1b[0m: 0\n}\x1b[0m\n'
        f"NODES\n{nodes}\nTOPOLOGY diagram\n{overlay}TOPOLOGY description\n{topo}\n"
    )


def kary_log(
    nodes: int = 4,
    topo: str = "kary:2",
    iteration: int = 0,
    sizes: Sequence[str] = ("16M", "64M"),
    strategies: Sequence[str] = ("all",),
    seconds: float = 1.0,
    rc: dict[str, int] | None = None,
    stop_before: str | None = None,
    done: bool = True,
    output: dict[str, str] | None = None,
    blob: str | None = None,
) -> str:
    """A log as templates/entrypoint.sh.j2 writes it; `rc` maps 'event-size' to an exit status.

    stop_before='event-size' cuts the log right after that step's EVENT line (a killed run).
    output maps 'event-size' to what that step printed (instead of flux exec's `[1-N]: Exit`).
    `blob` ('random', 'zeros'): the cell line names it, and each archive is followed by
    its archive line, its store growth as flux-core 0.88 gives it (`archive_line`); None:
    a log written before kary said either.
    """
    rc = rc or {}
    output = output or {}
    cell = cell_id(nodes, topo, iteration, blob=blob)
    meta: dict[str, Any] = {
        "meta": "cell",
        "cell": cell,
        "nodes": nodes,
        "topo": topo,
        "flux_version": "0.66.0",
        "size_attr": str(nodes),
    }
    if blob is not None:
        meta["blob"] = blob
    lines = [header(nodes, topo), format_kary_line(meta) + "\n"]
    stored: set[str] = set()  # the distinct chunks rank 0's content store holds
    failed = 0
    for label in sizes:
        size = SIZES[label]
        lines.append(_kary(GENERATE_BLOB, label, size, 0.25, 0))
        for strategy in strategies:
            for i, event in enumerate(STEPS[strategy]):
                name = f"{event}-{label}"
                lines.append(f"EVENT {name}\n")
                if stop_before == name:
                    return "".join(lines)
                status = rc.get(name, 0)
                took = round(seconds * (1 + i) * size / 2**24, 6)
                if status:
                    failed += 1
                if name in output:
                    lines.append(output[name])
                elif status:
                    lines.append(f"[1-{nodes - 1}]: Exit {status}\n")
                lines.append(f"\nreal\t0m{took:.3f}s\nuser\t0m0.001s\nsys\t0m0.002s\n")
                lines.append(_kary(event, label, size, took, status))
                if blob is not None and i == 0 and strategy != "direct" and not status:
                    lines.append(archive_line(label, strategy, blob, size, stored))
                if i == 0 and strategy != "direct" and not status:
                    lines.append(cold_cache_line(label, strategy, nodes))
    if done:
        lines.append(format_kary_line({"meta": "done", "failed_steps": failed}) + "\n")
        lines.append('SCRIPT entrypoint\n#!/bin/bash\necho "KARY {\\"meta\\": \\"done\\"}"\n')
    return "".join(lines)


def archive_line(label: str, strategy: str, blob: str, size: int, stored: set[str]) -> str:
    """The line after an archive is made: its chunks, and the objects the content store
    gained (its chunks not stored before, and 3 of its own; `stored` is updated)."""
    chunks = size // 2**20
    distinct = {"zeros"} if blob == "zeros" else {f"{label}/{i}" for i in range(chunks)}
    added = len(distinct - stored) + 3
    stored |= distinct
    record = {
        "meta": "archive", "size": label, "strategy": strategy, "blob": blob,
        "chunks": chunks, "store_objects_added": added,
    }  # fmt: skip
    return format_kary_line(record) + "\n"


def cold_cache_line(label: str, strategy: str, nodes: int) -> str:
    """The line before a distribution: every rank's cache dropped, none still holds a blob."""
    cached = {str(rank): 0 for rank in range(1, nodes)}
    record = {"meta": "cold-cache", "size": label, "strategy": strategy, "cached_blobs": cached}
    return format_kary_line(record) + "\n"


def _kary(event: str, label: str, size: int, seconds: float, rc: int) -> str:
    record = {"event": event, "size": label, "size_bytes": size, "seconds": seconds, "rc": rc}
    return format_kary_line(record) + "\n"


def legacy_log(
    nodes: int = 4,
    topo: str = "kary:2",
    sizes: Sequence[int] = (1, 2),
    events: Sequence[str] = ("create-archive", "distribute-all-nodes", "clean-all-nodes"),
    blocks: dict[str, str] | None = None,
    ended: bool = True,
) -> str:
    """A seed-format log; `blocks` replaces the output of 'event-size' steps verbatim."""
    blocks = blocks or {}
    parts = [header(nodes, topo)]
    for size in sizes:
        for i, event in enumerate(events):
            name = f"{event}-{size}"
            default = f"\nreal\t0m{(i + 1) * size}.{size:03d}s\nuser\t0m0.001s\nsys\t0m0.000s\n"
            parts.append(f"EVENT {name}\n{blocks.get(name, default)}")
    if ended:
        parts.append('SCRIPT entrypoint\n\n#!/bin/bash\n    echo "EVENT create-archive-${size}"\n')
        parts.append("broker.err[0]: rc3.0: flux-content: No such file or directory\n")
    return "".join(parts)


def run_record(nodes: int, topo: str, iteration: int, **extra: Any) -> str:
    record = {
        "format": RECORD_FORMAT,
        "cell": cell_id(nodes, topo, iteration),
        "nodes": nodes,
        "topo": topo,
        "iteration": iteration,
        "state": "succeeded",
        "started": "2026-01-01T00:00:00+00:00",
        "finished": "2026-01-01T00:01:00+00:00",
        "backend": "local",
        "cluster": None,
        "instance_type": None,
        "image": None,
        "flux_version": "0.66.0",
        "template_hash": "abc123",
        "sizes": [16 * 2**20, 64 * 2**20],
        "strategies": ["all"],
        "error": None,
        "future_key": {"kept": True},
    }
    record.update(extra)
    return json.dumps(record, indent=2) + "\n"


def box_record(
    nodes: int, topo: str, iteration: int, links: str = "200Mbit", cpu_bound: bool = False
) -> str:
    """run.json of a real-Flux cell in a box on this machine, its links shaped to `links`."""
    box = {"links": {"link_bandwidth": links}, "cpu_bound": cpu_bound}
    return run_record(
        nodes, topo, iteration, backend="flux", cluster="flux:vm", place="box", box=box
    )


def write_places_tree(raw: Path) -> Path:
    """kary:1 and kary:2 on 4 nodes, three iterations each, twice over: in a box at
    200Mbit (kary:2 CPU-bound there, twice as slow) and in a test instance."""
    for topo in ("kary:1", "kary:2"):
        for it in range(3):
            slow = 2.0 if topo == "kary:2" else 1.0
            log = kary_log(4, topo, it, sizes=("16M",), seconds=slow + 0.01 * it)
            record = box_record(4, topo, it, cpu_bound=topo == "kary:2")
            write_cell(raw / "box", cell_id(4, topo, it), log, record)
            log = kary_log(4, topo, it, sizes=("16M",), seconds=0.5 + 0.01 * it)
            record = run_record(
                4, topo, it, backend="flux", cluster="flux:vm", place="test-instance"
            )
            write_cell(raw / "test-instance", cell_id(4, topo, it), log, record)
    return raw


def write_cell(root: Path, rel: str, log: str | bytes | None, record: str | None = None) -> Path:
    cell = root / rel
    cell.mkdir(parents=True, exist_ok=True)
    if log is not None:
        data = log.encode() if isinstance(log, str) else log
        (cell / LOG_NAME).write_bytes(data)
    if record is not None:
        (cell / RECORD_NAME).write_text(record)
    return cell


def tree_digest(root: Path) -> dict[str, tuple[str, int, int]]:
    """Every path under root with its content hash, mode and mtime: proof nothing changed."""
    out: dict[str, tuple[str, int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            stat = path.lstat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
            out[str(path.relative_to(root))] = (digest, stat.st_mode, stat.st_mtime_ns)
    return out


def _ping(service: str, rank: int, label: str, pad: int, ms: float | None, rc: int = 0) -> str:
    """One ping as the entrypoint prints it: EVENT line, flux ping's output, KARY line."""
    lines = [f"EVENT {ping_step_name(service, label, rank)}\n"]
    hops = None
    if rc:
        lines.append(f"flux-ping: {rank}!{service}.ping: No route to host\n")
        lines.append(f"flux-ping {rank}!{service}\n")
    else:
        level = build_tree("kary:1", 4).level[rank]
        hops = 3 + level + (service == "kvs")
        route = "!".join(["a1b2c3d4"] * hops)
        lines.append(f"flux-ping {rank}!{service}\n")
        lines.append(f"{rank}!{service}.ping pad={pad} seq=0 time={ms:.3f} ms ({route})\n")
    record = {
        "event": ping_event(service),
        "size": label,
        "size_bytes": pad,
        "rank": rank,
        "seconds": 0.01,
        "ms": None if rc else ms,
        "hops": hops,
        "rc": rc,
    }
    lines.append(format_kary_line(record) + "\n")
    return "".join(lines)


def ping_log(failed_rank: int | None = None, cut_at: int | None = None) -> str:
    """A kary ping log of 4/kary-1/0: every rank, broker and kvs, no pad and 4K;
    `failed_rank`'s 4K pings fail, and `cut_at` cuts the log inside that rank's 4K ping."""
    meta = {"meta": "cell", "cell": "4/kary-1/0", "nodes": 4, "topo": "kary:1"}
    parts = [header(4, "kary:1"), format_kary_line(meta) + "\n"]
    failed = 0
    for label, pad in (("0", 0), ("4K", 4096)):
        for rank in range(4):
            for service in ("broker", "kvs"):
                rc = 1 if rank == failed_rank and label == "4K" else 0
                failed += rc
                text = _ping(service, rank, label, pad, round(0.1 + 0.2 * rank, 3), rc)
                if cut_at is not None and rank == cut_at and label == "4K":
                    return "".join(parts) + text.split("\n", 1)[0] + "\n"
                parts.append(text)
    parts.append(format_kary_line({"meta": "done", "failed_steps": failed}) + "\n")
    return "".join(parts)
