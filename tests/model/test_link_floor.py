"""The links' floor counts every shaped link, both directions, per distribution wave.

The expected seconds are worked out by hand here (copies x bytes / rate), not by
the function under test: 16 MiB is 16,777,216 bytes; 100 Mbit/s is 12.5e6 bytes/s.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.estimate.link_floor import (
    distribution_floors,
    faster_warning,
    floor_checks,
    link_floor,
)
from experiments.formats.kary_line import format_kary_line
from experiments.model.links import LinkSettings
from experiments.model.plan import Cell

REPO = Path(__file__).resolve().parents[2]
MIB = 2**20
S = 16 * MIB
GBIT, MBIT100, MBIT50, MBIT10 = 125e6, 12.5e6, 6.25e6, 1.25e6


def _all(nodes: int, topo: str, links: LinkSettings, size: int = S) -> object:
    return distribution_floors(nodes, topo, "all", size, links)["distribute-all-nodes"]


def test_a_relay_that_forwards_to_two_children_sets_the_floor_under_a_fast_root() -> None:
    # kary:2 on 7: rank 0 sends 2 copies at 1 Gbit/s (0.27 s); relays 1 and 2 each take 1
    # copy in (1.34 s) and send 2 out (2.68 s) at 100 Mbit/s.
    floor = _all(7, "kary:2", LinkSettings(bandwidth=MBIT100, root_bandwidth=GBIT))
    assert floor.seconds == pytest.approx(2 * 16777216 / 12.5e6)  # 2.684 s
    assert floor.busiest is not None
    assert (floor.busiest.link, floor.busiest.direction, floor.busiest.copies) == (
        "rank 1",
        "out",
        2,
    )


def test_slow_leaves_under_a_fast_root_set_a_floor_on_what_they_receive() -> None:
    # A flat tree of 4: rank 0 sends 3 copies at 1 Gbit/s (0.40 s), which a floor of
    # senders alone would report; each leaf takes its copy in at 10 Mbit/s: 13.42 s.
    floor = _all(4, "kary:0", LinkSettings(bandwidth=MBIT10, root_bandwidth=GBIT))
    assert floor.seconds == pytest.approx(16777216 / 1.25e6)
    assert floor.busiest is not None
    assert (floor.busiest.direction, floor.busiest.copies) == ("in", 1)
    assert floor.busiest.link in {"rank 1", "rank 2", "rank 3"}


def test_a_slow_root_link_carries_one_copy_per_child() -> None:
    # --root-link-bandwidth 10Mbit under 100 Mbit/s nodes: rank 0's 3 copies, 40.27 s.
    floor = _all(4, "kary:0", LinkSettings(bandwidth=MBIT100, root_bandwidth=MBIT10))
    assert floor.seconds == pytest.approx(3 * 16777216 / 1.25e6)
    assert floor.busiest is not None
    assert (floor.busiest.link, floor.busiest.direction) == ("rank 0", "out")
    # The chain's rank 0 sends one copy in all: 13.42 s.
    chain = _all(4, "kary:1", LinkSettings(bandwidth=MBIT100, root_bandwidth=MBIT10))
    assert chain.seconds == pytest.approx(16777216 / 1.25e6)


def test_a_groups_uplink_carries_each_copy_that_crosses_it() -> None:
    # Groups of 2 behind 25 Mbit/s uplinks, 200 Mbit/s nodes, 8 MiB: a flat tree sends
    # ranks 2 and 3 a copy each across group 0's uplink (5.37 s), a chain one (2.68 s).
    links = LinkSettings(bandwidth=25e6, group_size=2, group_bandwidth=3.125e6)
    flat = _all(4, "kary:3", links, 8 * MIB)
    assert flat.seconds == pytest.approx(2 * 8388608 / 3.125e6)
    assert flat.busiest is not None and flat.busiest.link.endswith("uplink")
    assert _all(4, "kary:1", links, 8 * MIB).seconds == pytest.approx(8388608 / 3.125e6)


def test_each_wave_counts_the_relays_it_reaches_and_not_those_that_hold_the_blob() -> None:
    # kary:2 on 7 with a 10 Mbit/s rank 0: `leaves` (3-6) reaches relays 1 and 2 through
    # rank 0's link (2 copies, 26.8 s); `middle` sends them in its first wave, and its
    # second wave starts at the relays, which hold the blob (2 copies at 100 Mbit/s).
    links = LinkSettings(bandwidth=MBIT100, root_bandwidth=MBIT10)
    leaves = distribution_floors(7, "kary:2", "leaves", S, links)
    assert leaves["distribute-leaf-nodes"].seconds == pytest.approx(2 * 16777216 / 1.25e6)
    middle = distribution_floors(7, "kary:2", "middle", S, links)
    assert middle["distribute-middle-nodes-0"].seconds == pytest.approx(2 * 16777216 / 1.25e6)
    assert middle["distribute-middle-nodes-1"].seconds == pytest.approx(2 * 16777216 / 12.5e6)
    # `direct` has no tree: rank 0 sends each of 6 ranks its copy.
    direct = distribution_floors(7, "kary:2", "direct", S, links)["distribute-direct"]
    assert direct.seconds == pytest.approx(6 * 16777216 / 1.25e6)


def test_unshaped_links_and_deduplicated_blobs_set_no_floor() -> None:
    assert _all(4, "kary:1", LinkSettings()).seconds == 0.0
    zeros = distribution_floors(4, "kary:1", "all", S, LinkSettings(bandwidth=MBIT10), "zeros")
    assert zeros["distribute-all-nodes"].seconds == 0.0
    assert link_floor([(0, 1)], LinkSettings(bandwidth=MBIT10), 0).busiest is None


def test_a_time_under_the_floor_beyond_its_slack_is_flagged() -> None:
    # One copy of 16 MiB at 100 Mbit/s: 1.342 s.  Slack: 2% (0.027 s), tbf's bucket of
    # 64 KiB at 12.5e6 bytes/s (0.005 s) and 0.01 s of clock: 0.042 s.
    floor = _all(2, "kary:1", LinkSettings(bandwidth=MBIT100))
    assert floor.slack_s == pytest.approx(0.02 * 1.34218 + 65536 / 12.5e6 + 0.01, abs=1e-4)
    assert not floor.beaten_by(1.31)
    assert floor.beaten_by(1.29)


def _log(*records: dict[str, object]) -> str:
    return "\n".join(format_kary_line(r) for r in records) + "\n"


def test_each_timed_distribution_of_a_log_is_checked_and_one_line_warns() -> None:
    cell = Cell(4, "kary:0", 0, (S,), ("all",))
    links = LinkSettings(bandwidth=MBIT50)  # 3 copies out of rank 0: 8.05 s
    cold = {"meta": "cold-cache", "size": "16M", "strategy": "all"}
    step = {"event": "distribute-all-nodes", "size": "16M", "size_bytes": S, "rc": 0}
    sound = _log({**cold, "cached_blobs": {"1": 0, "2": 0, "3": 0}}, {**step, "seconds": 8.3})
    (check,) = floor_checks(cell, links, sound)
    assert check["floor_seconds"] == pytest.approx(8.053, abs=1e-3)
    assert check["faster_than_floor"] is False
    assert faster_warning(cell.id, [check]) is None
    fast = _log({**cold, "cached_blobs": {"1": 0, "2": 0, "3": 0}}, {**step, "seconds": 1.5})
    (check,) = floor_checks(cell, links, fast)
    assert check["faster_than_floor"] is True
    assert faster_warning(cell.id, [check]) == (
        "kary: warning: 4/kary-0/0: distribute-all-nodes 16M took 1.5 s, faster than its "
        "links' floor of 8.053 s (rank 0 out: 3 x blob at 50 Mbit/s): the links did not "
        "carry what was timed (run.json box.faster_than_floor)"
    )
    # A warm distribution (rank 2 kept blobs) is void: no timing, nothing to check.
    warm = _log({**cold, "cached_blobs": {"1": 0, "2": 4, "3": 0}}, {**step, "seconds": 1.5})
    assert floor_checks(cell, links, warm) == []


def test_the_box_benchmark_fails_on_a_sample_faster_than_its_floor(tmp_path: Path) -> None:
    script = [sys.executable, str(REPO / "benchmarks" / "box_topologies.py"), "--from-json"]
    kept = json.loads((REPO / "benchmarks/results/box-topologies-n8.json").read_text())
    sound = subprocess.run(
        [*script, str(REPO / "benchmarks/results/box-topologies-n8.json")],
        capture_output=True,
        text=True,
    )
    assert sound.returncode == 0, sound.stderr
    # kary:7 at 100 Mbit/s: rank 0's 7 copies of 64 MiB take 37.6 s; 30 s cannot be.
    kept["box"]["100Mbit"]["kary:7"][0] = 30.0
    doctored = tmp_path / "samples.json"
    doctored.write_text(json.dumps(kept))
    done = subprocess.run([*script, str(doctored)], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "warning: faster than physics: box 100Mbit kary:7: 30.00 s, under its links' floor "
        "37.58 s (rank 0 out: 7 x blob at 100 Mbit/s)"
    ]
