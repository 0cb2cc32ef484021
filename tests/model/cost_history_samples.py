"""Small synthetic parsed directories for the time model's tests.

A sweep is made from a "true" TimeModel through the same structure the model
fits (experiments/estimate/structure.py), times a sweep factor and a little
per-step noise, and written as kary's parsed tables: topologies-events.csv,
runs.csv (run.json's started/finished, so cells have wall times) and
parse.json.  Nothing runs.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd

from analysis.tables.frames import summary_table
from analysis.tables.parsed_dir import Parsed, load_parsed, write_parsed
from experiments.estimate.parameters import TimeModel
from experiments.estimate.structure import cell_steps, step_seconds
from experiments.formats.cell_layout import format_size, topology_dirname
from experiments.formats.parsed import EVENT_COLUMNS, PARSED_FORMAT, PING_COLUMNS
from experiments.model.plan import Cell

MIB = 2**20

# A made-up 2-core test instance: per-rank CPU, a start-up per broker.
TRUE_FLUX = TimeModel(
    source="truth",
    create_s_per_gb=20.0,
    create_s=0.05,
    extract_s_per_gb=0.0,
    shared_cpu_s_per_gb=5.0,
    hop_s_per_gb=0.0,
    distribute_s=0.1,
    verify_s_per_gb=4.0,
    verify_s=0.02,
    verify_s_per_gb_per_rank=0.2,
    delete_s=0.01,
    clean_s_per_gb=0.0,
    clean_s=0.06,
    generate_s_per_gb=1.5,
    run_overhead_s=1.5,
    broker_start_s=0.25,
    image_pull_s=0.0,
)


def write_sweep(
    folder: Path,
    truth: TimeModel,
    nodes: int,
    topos: tuple[str, ...] = ("kary:1", "kary:2", "kary:0"),
    sizes: tuple[int, ...] = (16 * MIB, 64 * MIB),
    iterations: int = 2,
    factor: float = 1.0,
    noise: float = 0.03,
    seed: int = 0,
    backend: str = "flux",
    place: str = "test-instance",
    host: str = "testhost",
    walls: bool = True,
    blob: str = "random",
) -> Path:
    """A parsed directory of one sweep at `nodes`, each time `factor` x the truth, its
    cells' blobs of kind `blob` (formats/blobs.py)."""
    rng = random.Random(seed)
    events, runs = [], []
    clock = datetime(2026, 1, 1, tzinfo=UTC)
    for iteration in range(iterations):
        for topo in topos:
            cell = Cell(nodes, topo, iteration, sizes, ("all",), blob=blob)
            uid = f"{topology_dirname(topo)}-{nodes}"
            total = 0.0
            for step in cell_steps(cell, verify=True):
                seconds = step_seconds(step, truth) * factor * rng.lognormvariate(0, noise)
                total += seconds
                if step.event is None:
                    continue
                events.append(
                    {
                        "uid": uid,
                        "topology": topology_dirname(topo),
                        "iteration": iteration,
                        "nodes": nodes,
                        "event": step.event,
                        "size_gb": step.size / 2**30,
                        "time_seconds": round(seconds, 6),
                        "size_bytes": step.size,
                        "status": "ok",
                        "reason": "",
                        "backend": backend,
                        "cluster": f"flux:{host}" if backend == "flux" else "c",
                        "source": f"{cell.id}/topology-experiment.out",
                        "topo": topo,
                        "strategy": "setup" if step.part == "generate" else "all",
                        "size_label": format_size(step.size),
                        "run_state": "succeeded",
                        "blob": blob,
                    }
                )
            finished = clock + timedelta(seconds=total)
            runs.append(
                {
                    "uid": uid,
                    "topology": topology_dirname(topo),
                    "iteration": iteration,
                    "nodes": nodes,
                    "topo": topo,
                    "state": "succeeded",
                    "backend": backend,
                    "cluster": f"flux:{host}" if backend == "flux" else "c",
                    "instance_type": "" if backend == "flux" else "m.test",
                    "place": place if backend == "flux" else "",
                    "started": clock.isoformat() if walls else "",
                    "finished": finished.isoformat() if walls else "",
                }
            )
            clock = finished + timedelta(seconds=5)
    folder.mkdir(parents=True)
    # Every column kary's parse writes (knobs unset), so the summary is computed as kary's is.
    events_frame = pd.DataFrame(events).reindex(columns=[*EVENT_COLUMNS, "blob"])
    events_frame = events_frame.loc[:, ~events_frame.columns.duplicated()]
    tables = Parsed(
        events=events_frame,
        ping=pd.DataFrame(columns=PING_COLUMNS),
        runs=pd.DataFrame(runs),
        summary=summary_table(events_frame),
        meta={"format": PARSED_FORMAT},
    )
    write_parsed(folder, tables, jobs=1)
    return folder


def truth_seconds(folder: Path) -> float:
    """What a sweep written by write_sweep took in all (its cells' wall times)."""
    runs = load_parsed(folder).runs
    started = pd.to_datetime(runs["started"], format="ISO8601")
    finished = pd.to_datetime(runs["finished"], format="ISO8601")
    return float((finished - started).dt.total_seconds().sum())
