"""The real benchmark template, unmodified, under bash on the emulator (the local backend).

Also what must never happen: a wrong copy passing verify, a dead broker hanging
the cell, a timeout or Ctrl-C leaving a process behind.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import FrameType

import pytest
from emulator_helpers import processes_mentioning, wait_for_no_processes

from experiments.api import plan
from experiments.backends.emulator.backend import EmulatorBackend
from experiments.emulator.calibration import calibrated_costs
from experiments.errors import UserError
from experiments.execution.outcome import judge
from experiments.formats.cell_layout import Knobs
from experiments.formats.kary_line import kary_records
from experiments.model.links import link_settings
from experiments.model.plan import Cell
from experiments.model.render import Rendered, RenderOptions, render_cell
from experiments.model.sweep import Sweep
from experiments.model.topology import build_tree, render_overlay

MIB = 2**20


def _rendered(cell: Cell, verify: bool = True) -> Rendered:
    return render_cell(
        cell.nodes,
        cell.topo,
        list(cell.sizes),
        list(cell.strategies),
        cell.id,
        RenderOptions(verify=verify),
        knobs=Knobs(purge_target_size=4 * MIB),
    )


def test_the_template_runs_unmodified_and_every_step_succeeds(short_tmp: Path) -> None:
    cell = Cell(5, "kary:2", 0, (2 * MIB + 4096,), ("all", "leaves", "middle"))
    backend = EmulatorBackend(workdir=short_tmp)
    with backend:
        result = backend.run(cell, _rendered(cell), timeout=120)
    verdict = judge(result)
    assert verdict.state == "succeeded", (verdict.error, result.log[-2000:])
    # The instance's start and stop are timed around the entrypoint (entry_stamps.py).
    assert set(result.spans) == {"instance_start", "entrypoint", "instance_stop"}
    events = [s["event"] for s in verdict.log.steps]
    assert events[:5] == [
        "generate-blob",
        "create-archive",
        "distribute-all-nodes",
        "verify-distribute-all-nodes",
        "delete-archive-all-nodes",
    ]
    assert "verify-distribute-middle-nodes-1" in events and len(events) == 18
    assert render_overlay(build_tree("kary:2", 5)) in result.log
    assert verdict.log.meta is not None
    assert verdict.log.meta["flux_version"] == "0.88.0-kary-emulator"
    assert verdict.log.meta["size_attr"] == "5"
    # Every emulated cell says how close its timings are to real Flux.
    assert result.provenance["emulator"]["fidelity"].startswith("within x1.5 of flux-core 0.88")
    # The reference costs, scaled to this machine (cached by the run itself).
    assert result.provenance["emulator"]["cpu_costs_ms_per_mib"] == (
        calibrated_costs().costs.text()
    )
    assert result.provenance["emulator"]["brokers"] == 5
    assert list(short_tmp.iterdir()) == []  # the instance folder is gone
    assert wait_for_no_processes(str(short_tmp)) == []


def test_a_corrupted_copy_fails_verify_and_only_verify(short_tmp: Path) -> None:
    cell = Cell(4, "kary:1", 0, (MIB,), ("all", "leaves"))
    backend = EmulatorBackend(workdir=short_tmp, faults=("corrupt:3",))
    with backend:
        result = backend.run(cell, _rendered(cell), timeout=120)
    verdict = judge(result)
    assert verdict.state == "failed"
    assert [s["event"] for s in verdict.log.failed] == [
        "verify-distribute-all-nodes",
        "verify-distribute-leaf-nodes",
    ]
    assert "3: Exit 1" in result.log and "sha256 mismatch" in result.log


def test_a_broker_killed_mid_run_fails_the_cell_quickly_and_leaves_nothing(
    short_tmp: Path,
) -> None:
    cell = Cell(6, "kary:2", 0, (4 * MIB,), ("all",))
    backend = EmulatorBackend(workdir=short_tmp, faults=("kill:1:2",))
    with backend:
        result = backend.run(cell, _rendered(cell), timeout=60)
    assert not result.timed_out  # it ended on the broker's death, not at the timeout
    verdict = judge(result)
    assert verdict.state == "failed"
    assert verdict.error is not None
    assert "distribute-all-nodes 4M (rc 68)" in verdict.error
    assert "emulator: broker rank 1 exited (killed by SIGKILL)" in verdict.error
    assert wait_for_no_processes(str(short_tmp)) == []


def _sleeper(seconds: int) -> Rendered:
    script = f"flux exec -r all sleep {seconds}\n"
    return Rendered(minicluster_yaml="", entrypoint_sh=script, template_hash="test")


def test_a_timeout_stops_the_cell_and_every_process(short_tmp: Path) -> None:
    cell = Cell(4, "kary:2", 0, (MIB,), ("all",))
    backend = EmulatorBackend(workdir=short_tmp)
    result = backend.run(cell, _sleeper(120), timeout=1.5)
    assert result.timed_out and result.rc is None
    assert result.error == "timed out after 1.5 s"
    assert judge(result).state == "timeout"
    assert wait_for_no_processes(str(short_tmp)) == []


def test_ctrl_c_during_a_cell_kills_everything_and_propagates(short_tmp: Path) -> None:
    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    cell = Cell(4, "kary:2", 0, (MIB,), ("all",))
    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 1.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            EmulatorBackend(workdir=short_tmp).run(cell, _sleeper(120), timeout=60)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert wait_for_no_processes(str(short_tmp)) == []
    assert list(short_tmp.iterdir()) == []


def test_a_killed_parent_takes_the_instance_with_it(short_tmp: Path) -> None:
    """kary itself SIGKILLed: the launcher notices (PDEATHSIG) and stops everything."""
    program = textwrap.dedent(
        f"""
        from pathlib import Path
        from experiments.backends.emulator.backend import EmulatorBackend
        from experiments.model.plan import Cell
        from experiments.model.render import Rendered
        rendered = Rendered("", "flux exec -r all sleep 120\\n", "test")
        EmulatorBackend(workdir=Path({str(short_tmp)!r})).run(
            Cell(4, "kary:2", 0, (1,), ("all",)), rendered, 60
        )
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", program])
    try:
        deadline = time.monotonic() + 20
        while len(processes_mentioning(str(short_tmp))) < 8 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(processes_mentioning(str(short_tmp))) >= 8  # launcher, 4 brokers, sleeps
    finally:
        parent.kill()
        parent.wait()
    assert wait_for_no_processes(str(short_tmp)) == []


def test_bad_link_settings_are_refused_by_the_plan_before_a_backend_exists() -> None:
    with pytest.raises(UserError, match="invalid bandwidth '1G'"):
        plan(Sweep(backend="local", exact_nodes=4, link_bandwidth="1G"))
    with pytest.raises(UserError, match="invalid latency '5'"):
        plan(Sweep(backend="local", exact_nodes=4, link_latency="5"))


def test_every_distribution_starts_cold_and_none_beats_the_link(short_tmp: Path) -> None:
    # 8M fits in a 64M cache: before the dropcache, `leaves` and `middle` read the
    # copy `all` left on each rank and took 0.13-0.21 s, below what the link allows.
    size = 8 * MIB
    cell = Cell(7, "kary:2", 0, (size,), ("all", "leaves", "middle"))
    rendered = render_cell(
        7, "kary:2", [size], ["all", "leaves", "middle"], cell.id,
        RenderOptions(verify=True), knobs=Knobs(purge_target_size=64 * MIB),
    )  # fmt: skip
    backend = EmulatorBackend(workdir=short_tmp, links=link_settings("200Mbit", None))
    with backend:
        result = backend.run(cell, rendered, timeout=120)
    verdict = judge(result)
    assert verdict.state == "succeeded", (verdict.error, result.log[-2000:])
    records = [r for r in kary_records(result.log) if r is not None]
    cold = [r for r in records if r.get("meta") == "cold-cache"]
    assert [r["strategy"] for r in cold] == ["all", "leaves", "middle"]
    assert all(r["cached_blobs"] == {str(rank): 0 for rank in range(1, 7)} for r in cold)
    one_hop = size * 8 / 200e6  # one copy over one 200 Mbit/s link: 0.34 s
    distributes = [r for r in records if str(r.get("event", "")).startswith("distribute-")]
    assert len(distributes) == 4
    assert all(r["seconds"] >= 0.95 * one_hop for r in distributes), distributes


def test_an_emulated_cell_on_shaped_links_states_its_gap_to_the_box(short_tmp: Path) -> None:
    cell = Cell(3, "kary:1", 0, (MIB,), ("all",))
    backend = EmulatorBackend(workdir=short_tmp, links=link_settings("1Gbit", None))
    with backend:
        result = backend.run(cell, _rendered(cell), timeout=120)
    assert judge(result).state == "succeeded"
    # The reference on shaped links is real Flux in a box, not a test instance.
    fidelity = result.provenance["emulator"]["fidelity"]
    assert fidelity.startswith("on shaped links, against real flux-core 0.88 in a box")
    assert "box-topologies-n16.json" in fidelity
