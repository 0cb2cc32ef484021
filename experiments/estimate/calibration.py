"""Refit the time model from parsed history (`--history DIR` of parsed directories).

A plan predicts a sum, so the estimator is the mean, not the median (these
timings are right-skewed: the median under-predicts a sweep's total).  Rows
marked failed (kary's own CSVs) are left out; the seed's CSVs have no status
and record failed steps as ~0.015 s, so times under a fifth of their event's
median are dropped as failures before averaging.  What
the history cannot tell (a MiniCluster's start-up, the image pull) keeps its
default, and `source` says so.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import load_parsed
from analysis.output import EVENTS_CSV
from experiments.errors import UserError
from experiments.estimate.time_model import TimeModel
from experiments.formats.events import GENERATE_BLOB, STRATEGY_EVENTS, VERIFY_PREFIX
from experiments.model.topology import build_tree

__all__ = ["calibrate", "load_history"]

GIB = 2**30
_NEEDED = {"event", "status", "time_seconds", "size_bytes", "nodes", "topology"}
# Each step's events across the strategies, as prefixes (a waved distribution's
# events are `<distribute>-<wave>`).
_CREATES = tuple(s.create for s in STRATEGY_EVENTS)
_DISTRIBUTES = tuple(s.distribute for s in STRATEGY_EVENTS)
_DELETES = tuple(s.delete for s in STRATEGY_EVENTS)
_CLEANS = tuple(s.clean for s in STRATEGY_EVENTS)


def load_history(history: Path) -> pd.DataFrame:
    """Timed, successful event rows of every parsed directory at or below `history`
    (or of the one whose topologies-events.csv `history` names), read by
    analysis's one loader: kary's own parsed directories and the seed's CSVs alike."""
    history = Path(history)
    if history.is_file():
        dirs = [history.parent] if history.name == EVENTS_CSV else []
    else:
        dirs = sorted({path.parent for path in history.rglob(EVENTS_CSV)})
    if not dirs:
        raise UserError(f"--history {history}: no {EVENTS_CSV} found")
    frames = []
    for folder in dirs:
        try:
            events = load_parsed(folder).events
        except UserError as err:
            raise UserError(f"--history: {err}") from None
        missing = _NEEDED - set(events.columns)
        if missing:
            raise UserError(
                f"--history: {folder / EVENTS_CSV} lacks columns {', '.join(sorted(missing))}"
            )
        frames.append(events)
    rows = pd.concat(frames, ignore_index=True)
    rows = rows[rows["status"] == "ok"]
    rows = rows.assign(
        gb=pd.to_numeric(rows["size_bytes"], errors="coerce") / GIB,
        time_seconds=pd.to_numeric(rows["time_seconds"], errors="coerce"),
    )
    rows = rows.dropna(subset=["gb", "time_seconds"])
    rows = rows[rows["gb"] > 0]
    # Seed topology names use '-' ("kary-2"); ours use ':'.
    return rows.assign(topology=rows["topology"].astype(str).str.replace("-", ":", n=1))


def _per_gb(rows: pd.DataFrame, prefix: str | tuple[str, ...]) -> pd.Series:
    chosen = rows[rows["event"].astype(str).str.startswith(prefix)]
    return chosen["time_seconds"] / chosen["gb"]


def _mean(series: pd.Series, default: float) -> float:
    """Mean of the plausible values: under a fifth of the median is a failed step."""
    if not len(series):
        return default
    kept = series[series >= 0.2 * series.median()]
    return float(kept.mean())


def _design_shape(nodes: int, topology: str) -> tuple[int, int] | None:
    try:
        tree = build_tree(topology, int(nodes))
    except Exception:  # history may name designs this kary cannot build
        return None
    return tree.max_fanout, tree.depth


def calibrate(model: TimeModel, history: Path) -> TimeModel:
    """A copy of `model` with every parameter the history can tell refitted."""
    rows = load_history(history)
    update: dict[str, object] = {"calibrated_from": len(rows)}
    update["create_s_per_gb"] = _mean(_per_gb(rows, _CREATES), model.create_s_per_gb)
    update["generate_s_per_gb"] = _mean(_per_gb(rows, GENERATE_BLOB), model.generate_s_per_gb)
    update["verify_s_per_gb"] = _mean(_per_gb(rows, VERIFY_PREFIX), model.verify_s_per_gb)
    deletes = rows[rows["event"].astype(str).str.startswith(_DELETES)]["time_seconds"]
    update["delete_s"] = _mean(deletes, model.delete_s)

    cleans = rows[rows["event"].astype(str).str.startswith(_CLEANS)]
    if cleans["gb"].nunique() >= 2:
        slope, intercept = np.polyfit(cleans["gb"], cleans["time_seconds"], 1)
        update["clean_s_per_gb"] = max(float(slope), 0.0)
        update["clean_s"] = max(float(intercept), 0.0)

    dist = rows[rows["event"].astype(str).str.startswith(_DISTRIBUTES)]
    if len(dist):
        per_design = (
            (dist["time_seconds"] / dist["gb"])
            .groupby([dist["nodes"], dist["topology"]])
            .agg(lambda values: _mean(values, float("nan")))
        )
        measured: dict[tuple[int, str], float] = {
            (int(key[0]), str(key[1])): float(value)  # type: ignore[index]
            for key, value in per_design.items()
        }
        update["design_s_per_gb"] = {f"{n}/{t}": v for (n, t), v in measured.items()}
        depth_and_rate = [
            (shape[1], rate)
            for (n, t), rate in measured.items()
            if (shape := _design_shape(n, t)) is not None
        ]
        if depth_and_rate:
            update["extract_s_per_gb"] = float(np.mean([r for _, r in depth_and_rate]))
        if len({d for d, _ in depth_and_rate}) >= 2:
            # The extra seconds per GB that each level below the first adds.
            depths, rates = zip(*depth_and_rate, strict=True)
            slope = np.polyfit([d - 1 for d in depths], rates, 1)[0]
            update["hop_s_per_gb"] = max(float(slope), 0.0)
    if any(isinstance(v, float) and not math.isfinite(v) for v in update.values()):
        raise UserError(f"--history {history}: the timings do not fit a model (non-finite values)")
    update["source"] = f"{model.source}, calibrated on {len(rows)} rows of {history}"
    return model.model_copy(update=update)
