"""The network terms of a distribution, fitted from box sweeps at several link speeds.

A box cell's `distribute-all-nodes` time is modelled as

    t = a * link_floor + b * fill + c * cpu + d

- `link_floor`: seconds the busiest link needs at its nominal rate, in either
  direction (link_floor.py; on equal links, one copy per child through the
  busiest broker's link: children x size / rate); `a` near
  1 means the links run at their rate, above 1 says what TCP, ZeroMQ, CURVE
  and flux-core's one-blob-at-a-time requests cost on top.
- `fill`: the pipeline's fill, one 1 MiB blob per level of depth, at the
  links' rate (a chain's last rank waits for the first blob to cross every hop).
- `cpu`: GB x receiving ranks, the work every rank does on cores they share
  (`c` seconds per GB per rank: the test-instance default is 5).
- `d`: a wave's fixed cost (its `flux exec`, the first requests).

Each term is linear in its coefficient, so the fit is non-negative least
squares on seconds (as fit.py's is).  Because the features carry the link
speed, the busiest broker's children and the depth, one fit predicts other
node counts, topologies and link speeds.  Sweeps at one node count and one
size cannot tell `cpu` from `d` (the two columns are proportional): the fit
is then not unique, and the exact solver (nonnegative.py) takes the optimum
with `c` = 0, where an iterative one stopped wherever its path ended (0.37
s/GB/rank on the first protocol's N=8 fit, same residual).

The 80% interval.  A fit's own residuals (ratios actual / fitted, 10th to
90th percentile) describe run-to-run noise around the sweeps it saw: about
x0.95-x1.04 here, and only 31% and 25% of held-out runs fell inside it
(benchmarks/results/box-model-holdout.txt), because the model's error on a
node count or link speed it never saw is larger than that noise.  So with
three or more sweeps the band is the spread *between* sweeps instead: each
sweep (a node count at one link speed) predicted by a fit on the others
(leave one sweep out), the ratios of all those predictions, 10th to 90th
percentile (`interval="between sweeps"`).
With fewer sweeps there is nothing to leave out and the band is the
residuals', which the fit's text says.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from experiments.errors import UserError
from experiments.estimate.link_floor import distribution_floors
from experiments.estimate.nonnegative import nonnegative_least_squares
from experiments.estimate.parameters import GIB

if TYPE_CHECKING:
    import pandas as pd
from experiments.model.links import LinkSettings
from experiments.model.topology import build_tree

__all__ = [
    "BETWEEN_SWEEPS",
    "RESIDUALS",
    "BoxFit",
    "BoxObservation",
    "fit_box_network",
    "load_box_observations",
]

FEATURES = ("link_floor", "fill", "cpu", "wave")
MIB = 2**20
EVENT = "distribute-all-nodes"
_LOW, _HIGH = 10.0, 90.0  # percentiles of the ratios: an 80% interval
RESIDUALS = "residuals"
BETWEEN_SWEEPS = "between sweeps"
# Leave-one-sweep-out needs the rest to still span link speeds and node counts.
MIN_SWEEPS = 3


@dataclass(frozen=True)
class BoxObservation:
    """One distribution in a box: the cell, its links (bytes/s) and the seconds it took."""

    nodes: int
    topo: str
    size_bytes: int
    bandwidth: float
    seconds: float
    root_bandwidth: float | None = None
    sweep: str = ""
    started: str = ""  # the run's start (runs.csv `started`, ISO 8601), where recorded
    template_hash: str = ""  # the entrypoint's template (runs.csv), where recorded

    def features(self) -> np.ndarray:
        tree = build_tree(self.topo, self.nodes)
        links = LinkSettings(bandwidth=self.bandwidth, root_bandwidth=self.root_bandwidth)
        floor = distribution_floors(self.nodes, self.topo, "all", self.size_bytes, links)[EVENT]
        fill = tree.depth * MIB / self.bandwidth
        cpu = (self.nodes - 1) * self.size_bytes / GIB
        return np.array([floor.seconds, fill, cpu, 1.0])


@dataclass(frozen=True)
class BoxFit:
    """Fitted coefficients (FEATURES order), the 80% band of ratios, its n and its kind."""

    coefficients: tuple[float, ...]
    low_ratio: float
    high_ratio: float
    n: int
    interval: str = RESIDUALS  # or BETWEEN_SWEEPS (module doc)

    def predict(self, observation: BoxObservation) -> tuple[float, float, float]:
        """(predicted, low, high) seconds for the cell `observation` describes."""
        seconds = float(np.dot(self.coefficients, observation.features()))
        return seconds, seconds * self.low_ratio, seconds * self.high_ratio

    def text(self) -> str:
        a, b, c, d = self.coefficients
        return (
            f"t = {a:.3f} x link floor + {b:.2f} x fill + {c:.2f} s/GB/rank x cpu + {d:.2f} s; "
            f"80% band x{self.low_ratio:.2f}-x{self.high_ratio:.2f} ({self.interval}, n={self.n})"
        )


def fit_box_network(observations: Sequence[BoxObservation], interval: str = "auto") -> BoxFit:
    """Non-negative least squares over FEATURES; UserError when there is nothing to fit.

    `interval`: RESIDUALS, BETWEEN_SWEEPS, or "auto" (between sweeps when the
    observations come from MIN_SWEEPS or more sweeps, else residuals).
    """
    if len(observations) < len(FEATURES):
        raise UserError(
            f"the box network fit needs at least {len(FEATURES)} distributions, "
            f"got {len(observations)}"
        )
    sweeps = sorted({_condition(o) for o in observations}, key=str)
    if interval == "auto":
        interval = BETWEEN_SWEEPS if len(sweeps) >= MIN_SWEEPS else RESIDUALS
    solution = _solve(observations)
    if interval == BETWEEN_SWEEPS:
        if len(sweeps) < 2:
            raise UserError("a between-sweeps interval needs observations from two sweeps or more")
        ratios = np.concatenate(
            [
                _ratios(
                    [o for o in observations if _condition(o) == left_out],
                    _solve([o for o in observations if _condition(o) != left_out]),
                )
                for left_out in sweeps
            ]
        )
    else:
        ratios = _ratios(observations, solution)
    low, high = np.percentile(ratios, [_LOW, _HIGH]) if len(ratios) else (math.nan, math.nan)
    return BoxFit(tuple(float(x) for x in solution), float(low), float(high), len(ratios), interval)


def _condition(o: BoxObservation) -> tuple[int, float, float | None]:
    """What a sweep holds fixed: its node count and links (each left out in turn)."""
    return (o.nodes, o.bandwidth, o.root_bandwidth)


def _solve(observations: Sequence[BoxObservation]) -> np.ndarray:
    matrix = np.array([o.features() for o in observations])
    seconds = np.array([o.seconds for o in observations])
    return nonnegative_least_squares(matrix, seconds)


def _ratios(observations: Sequence[BoxObservation], solution: np.ndarray) -> np.ndarray:
    """actual / predicted for each observation, where the prediction is positive."""
    fitted = np.array([o.features() for o in observations]) @ solution
    seconds = np.array([o.seconds for o in observations])
    ratios = seconds / np.where(fitted > 0, fitted, np.nan)
    return np.asarray(ratios[np.isfinite(ratios)])


def load_box_observations(parsed_dir: Path) -> list[BoxObservation]:
    """The ok `distribute-all-nodes` steps of the box cells in a parsed directory."""
    from experiments.formats.parsed.load import load_parsed
    from experiments.model.units import parse_bandwidth

    parsed = load_parsed(parsed_dir)
    runs, events = parsed.runs, parsed.events
    if not {"links", "place"} <= set(runs.columns):
        return []  # parsed before runs.csv had links, or not kary's: no box cells
    box = runs[(runs["place"] == "box") & (runs["links"].fillna("") != "")]
    links = {
        (str(uid), str(it)): str(text)
        for uid, it, text in zip(box["uid"], box["iteration"], box["links"], strict=True)
    }
    starts, templates = _run_column(box, "started"), _run_column(box, "template_hash")
    ok = events[(events["event"] == EVENT) & (events["status"] == "ok")]
    columns = ("uid", "iteration", "nodes", "topo", "size_bytes", "time_seconds")
    found = []
    for uid, iteration, nodes, topo, size, seconds in zip(*(ok[c] for c in columns), strict=True):
        text = links.get((str(uid), str(iteration)))
        if text is None:
            continue
        parts = [part.strip() for part in text.split(",")]
        if any(part.startswith("groups of") for part in parts):
            continue  # a two-level network: its uplinks are not among the model's terms
        root = next((p.removeprefix("rank 0 ") for p in parts if p.startswith("rank 0 ")), None)
        found.append(
            BoxObservation(
                nodes=int(str(nodes)),
                topo=str(topo),
                size_bytes=int(str(size)),
                bandwidth=parse_bandwidth(parts[0]),
                seconds=float(str(seconds)),
                root_bandwidth=parse_bandwidth(root) if root else None,
                sweep=str(parsed_dir),
                started=starts[(str(uid), str(iteration))],
                template_hash=templates[(str(uid), str(iteration))],
            )
        )
    return found


def _run_column(box: pd.DataFrame, column: str) -> dict[tuple[str, str], str]:
    """{(uid, iteration): the run's text in `column`} ("" where absent or not recorded)."""
    values = box[column].fillna("") if column in box.columns else [""] * len(box)
    return {
        (str(uid), str(it)): str(text)
        for uid, it, text in zip(box["uid"], box["iteration"], values, strict=True)
    }
