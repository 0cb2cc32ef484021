"""The race plan's replay spread (experiments/race/spread.py): history's repeats, else stated."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from experiments.race.spread import DEFAULT_SPREAD, race_spread

BOX_N8 = Path(__file__).resolve().parents[2] / "benchmarks/results/box-sweeps/n8-100Mbit"


def test_the_spread_is_the_pooled_spread_of_repeated_cells_in_history() -> None:
    events = pd.read_csv(BOX_N8 / "topologies-events.csv")
    timed = events[(events["event"] == "distribute-all-nodes") & (events["status"] == "ok")]
    logs = timed.assign(log=timed["time_seconds"].map(math.log))
    groups = logs.groupby(["topology", "size_bytes"])["log"]
    squares = float(groups.apply(lambda g: ((g - g.mean()) ** 2).sum()).sum())
    freedom = int((groups.size() - 1).sum())
    spread = race_spread(BOX_N8, "distribute-all-nodes")
    assert spread.sigma == pytest.approx(math.sqrt(squares / freedom))
    assert (spread.groups, spread.runs) == (groups.ngroups, len(timed))
    assert spread.sigma != DEFAULT_SPREAD
    assert f"spread {spread.sigma:.1%} from history ({len(timed)} runs" in spread.note


def test_without_repeats_the_spread_is_the_stated_default(tmp_path: Path) -> None:
    assert race_spread(None, "distribute-all-nodes").sigma == DEFAULT_SPREAD
    assert "stated" in race_spread(None, "distribute-all-nodes").note
    # History without the race's step has no repeats of it either.
    assert race_spread(BOX_N8, "distribute-leaves").groups == 0


def test_the_race_plan_replays_with_historys_spread_and_says_so(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from experiments.cli import app

    sweep = ["race", "--backend", "local", "--exact-nodes", "8", "--topo", "kary:1,kary:2",
             "--sizes", "16M,64M", "--dry-run", "--data-dir", str(tmp_path)]  # fmt: skip
    with_history = CliRunner().invoke(app, [*sweep, "--history", str(BOX_N8)])
    assert with_history.exit_code == 0, with_history.output
    expected = next(line for line in with_history.output.splitlines() if "expected" in line)
    assert expected.endswith("spread 4.0% from history (16 runs of 4 repeated cells)")
    without = CliRunner().invoke(app, sweep)
    assert "spread 10% (stated; --history with repeated cells sets it)" in without.output
