"""`kary race` on a real-Flux test instance: its blocks are real cells, judged and recorded."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "emulator"))
from emulator_helpers import wait_for_no_processes

from experiments.cli import app
from experiments.formats.race_state import read_race
from experiments.formats.run_record import read_record

pytestmark = pytest.mark.slow


def test_a_race_on_a_real_test_instance_times_real_cells(
    flux: str, scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(scratch))
    raw = scratch / "raw"
    result = CliRunner().invoke(
        app,
        ["race", "--backend", "flux", "--exact-nodes", "4", "--topo", "kary:1", "--topo",
         "kary:3", "--sizes", "1M,4M", "--first-test", "2", "--max-blocks", "2", "--seed", "1",
         "--data-dir", str(raw)],
    )  # fmt: skip
    _answered_in_two_blocks(result)
    # Across sizes, the answer says what its blocks timed: both ends, 1M then 4M.
    assert "timed at every size asked, 1M, 4M" in result.output.strip().splitlines()[-1]
    kept = read_race(raw)
    assert kept is not None
    blocks = kept.race["blocks"]
    assert [b["iteration"] for b in blocks] == [0, 1]
    assert [b["size_bytes"] for b in blocks] == [2**20, 4 * 2**20]
    # One look, at block 2 of 2: it may spend the whole 5% and no more, kept in race.json.
    (look,) = [d for d in kept.race["lanes"][0]["decisions"] if d["level"] is not None]
    assert look["blocks"] == 2 and look["level"] == pytest.approx(0.05)
    for block in blocks:
        assert set(block["times"]) == {"kary:1", "kary:3"}
        for topo, seconds in block["times"].items():
            record = read_record(raw / "4" / topo.replace(":", "-") / str(block["iteration"]))
            assert record is not None and record.state == "succeeded"
            assert record.backend == "flux" and seconds > 0
    assert os.environ.get("TMPDIR") == str(scratch)
    assert wait_for_no_processes(str(scratch)) == []


def test_a_nested_race_runs_every_block_in_one_outer_instance(
    flux: str, scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race keeps its backend up across blocks: with the nested layout, block 1's
    cells run in the outer instance block 0's ran in, and none is left after."""
    monkeypatch.setenv("TMPDIR", str(scratch))
    raw = scratch / "raw"
    result = CliRunner().invoke(
        app,
        ["race", "--backend", "flux", "--layout", "nested", "--exact-nodes", "4", "--topo",
         "kary:1", "--topo", "kary:3", "--sizes", "1M", "--first-test", "2", "--max-blocks",
         "2", "--seed", "1", "--data-dir", str(raw)],
    )  # fmt: skip
    _answered_in_two_blocks(result)
    outers = {}
    for cell in ("4/kary-1/0", "4/kary-3/0", "4/kary-1/1", "4/kary-3/1"):
        record = read_record(raw / cell)
        assert record is not None and record.state == "succeeded", cell
        outers[cell] = json.loads((raw / cell / "run.json").read_text())["nested_in"]
    assert len({o["name"] for o in outers.values()}) == 1
    assert sorted(o["cell_index"] for o in outers.values()) == [0, 1, 2, 3]
    assert wait_for_no_processes(str(scratch)) == []


def _answered_in_two_blocks(result: Result) -> None:
    """Two blocks end the race one of three ways, each with its own exit status: a
    fastest (a paired t-test on one degree of freedom decides only a gap consistent in
    both blocks), a tie within the zone (TOST), or not separated (exit 1).  The answer
    is the last line, and says which."""
    answer = result.output.strip().splitlines()[-1]
    decided = ("kary race: fastest within 5% at 95%", "kary race: tie within 5% at 95%")
    if result.exit_code == 0:
        assert answer.startswith(decided), result.output
    else:
        assert result.exit_code == 1 and "not separated" in answer, result.output
