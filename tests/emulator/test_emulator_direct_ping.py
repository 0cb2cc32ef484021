"""The direct strategy and the ping experiment on the emulator (the local backend).

The emulator's `flux ping` must route through the tree as flux-core's does:
the route it reports has one id per broker on the way, so hops grow with the
target's depth exactly as on real Flux (tests/flux compares the two outputs).
"""

from __future__ import annotations

from pathlib import Path

from emulator_helpers import Instance, wait_for_no_processes

from experiments.backends.emulator.backend import EmulatorBackend
from experiments.execution.outcome import judge
from experiments.formats.kary_line import kary_records
from experiments.model.plan import Cell
from experiments.model.render import RenderOptions, render_cell
from experiments.model.topology import build_tree

MIB = 2**20


def _run(cell: Cell, short_tmp: Path) -> tuple[str, str]:
    rendered = render_cell(
        cell.nodes,
        cell.topo,
        list(cell.sizes),
        list(cell.strategies),
        cell.id,
        RenderOptions(verify=True),
        experiment=cell.experiment,
    )
    with EmulatorBackend(workdir=short_tmp) as backend:
        result = backend.run(cell, rendered, timeout=120)
    verdict = judge(result)
    return verdict.state, result.log


def test_direct_downloads_verifies_and_stops_its_server(short_tmp: Path) -> None:
    cell = Cell(4, "kary:2", 0, (MIB + 4096,), ("all", "direct"))
    state, log = _run(cell, short_tmp)
    assert state == "succeeded", log[-2000:]
    steps = [r for r in kary_records(log) if r is not None and "event" in r]
    direct = [s["event"] for s in steps if "direct" in s["event"]]
    assert direct == [
        "create-direct",
        "distribute-direct",
        "verify-distribute-direct",
        "delete-direct",
        "clean-direct",
    ]
    (meta,) = [r for r in kary_records(log) if r is not None and r.get("meta") == "direct"]
    assert meta["url"].startswith("http://127.0.0.1:") and meta["client"] in ("curl", "python3")
    assert wait_for_no_processes(str(short_tmp)) == []


def test_direct_fails_where_a_rank_cannot_download(short_tmp: Path) -> None:
    """A rank whose broker died cannot fetch: distribute-direct fails, the server still stops."""
    cell = Cell(4, "kary:1", 0, (MIB,), ("all", "direct"))
    rendered = render_cell(4, "kary:1", [MIB], ["all", "direct"], cell.id)
    with EmulatorBackend(workdir=short_tmp, faults=("kill:3",)) as backend:
        result = backend.run(cell, rendered, timeout=120)
    verdict = judge(result)
    failed = {s["event"] for s in verdict.log.failed}
    assert verdict.state == "failed" and "distribute-direct" in failed, result.log[-2000:]
    assert "delete-direct" not in failed  # the server was running until asked to stop
    assert wait_for_no_processes(str(short_tmp)) == []


def test_ping_reaches_every_rank_through_the_tree(short_tmp: Path) -> None:
    cell = Cell(6, "kary:2", 0, (64 * 1024,), (), experiment="ping")
    state, log = _run(cell, short_tmp)
    assert state == "succeeded", log[-2000:]
    pings = [r for r in kary_records(log) if r is not None and "event" in r]
    assert len(pings) == 6 * 2 * 2  # ranks x (broker, kvs) x (no payload, 64K)
    level = build_tree("kary:2", 6).level
    for ping in pings:
        # client, rank 0's connector, then one broker per level; a module once more.
        module = 1 if ping["event"] == "flux-ping-kvs" else 0
        assert ping["hops"] == 3 + level[ping["rank"]] + module, ping
        assert ping["rc"] == 0 and ping["ms"] > 0
    assert {p["size"] for p in pings} == {"0", "64K"}


def test_the_emulators_flux_ping_speaks_flux_cores_options(instance: Instance) -> None:
    """Six brokers under kary:2: rank 5 is two levels down (0 -> 2 -> 5)."""
    done = instance.flux("ping", "--count=2", "--interval=0", "--pad=1.5K", "--rank=5", "kvs")
    assert done.returncode == 0, done.stderr
    header, *replies = done.stdout.splitlines()
    assert header == "flux-ping 5!kvs"
    assert len(replies) == 2 and all(r.startswith("5!kvs.ping pad=1536 seq=") for r in replies)
    route = replies[0].rsplit("(", 1)[1].rstrip(")").split("!")
    assert len(route) == 3 + 2 + 1 and route[-1] == route[-2]
    short = instance.flux("ping", "-c", "1", "2")
    assert short.stdout.startswith("flux-ping 2!broker\n2!broker.ping pad=0 seq=0 time=")
    for args, error in [
        (["-c1", "-r", "9", "broker"], "flux-ping: 9!broker.ping: No route to host\n"),
        (["-c1", "2!nosuch"], "flux-ping: 2!nosuch.ping: Function not implemented\n"),
        (
            ["-c1", "--pad=3G", "1"],
            "flux-ping: flux-ping: pad: value 3G too large (must be < 2G)\n",
        ),
        (
            ["-c1", "-r", "1", "2!broker"],
            "flux-ping: --rank and TARGET both try to specify a nodeid\n",
        ),
    ]:
        failed = instance.flux("ping", *args)
        assert (failed.returncode, failed.stderr) == (1, error), args
