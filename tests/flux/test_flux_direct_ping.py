"""`--strategy direct` and `--experiment ping` on real flux-core, and the emulator's flux ping.

Each run is one small cell on a `flux start --test-size` instance (a few
seconds); the emulator's `flux ping` is held to flux-core's output line by
line, with what must differ masked (route ids, times).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from script_run import run_script

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "emulator"))
from emulator_helpers import wait_for_no_processes  # noqa: E402

from analysis.tables.parsed_dir import load_parsed  # noqa: E402
from analysis.tree import parse_tree  # noqa: E402
from experiments.model.topology import build_tree  # noqa: E402

KARY = [sys.executable, "-c", "from experiments.cli import main; main()"]


def _kary(args: list[str], scratch: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TMPDIR=str(scratch))
    env.pop("FLUX_URI", None)
    return subprocess.run(
        [*KARY, *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=180
    )


def test_direct_runs_beside_a_tree_on_real_flux_and_parses_to_ok_rows(
    flux: str, scratch: Path
) -> None:
    data = scratch / "raw"
    args = ["run", "--backend", "flux", "--exact-nodes", "4", "--topo", "kary:2"]
    args += ["--sizes", "2M", "--strategy", "all,direct", "--data-dir", str(data)]
    done = _kary(args, scratch)
    assert done.returncode == 0, done.stderr
    parse_tree(data, scratch / "parsed", plots=False)
    events = load_parsed(scratch / "parsed").events
    direct = events[events["strategy"] == "direct"]
    assert list(direct["event"]) == [
        "create-direct",
        "distribute-direct",
        "verify-distribute-direct",
        "delete-direct",
        "clean-direct",
    ]
    assert set(direct["status"]) == {"ok"} and (direct["time_seconds"] > 0).all()
    assert wait_for_no_processes(str(scratch)) == []  # no HTTP server left behind


def test_ping_runs_on_real_flux_and_parses_into_ping_events(flux: str, scratch: Path) -> None:
    data = scratch / "raw"
    args = ["run", "--backend", "flux", "--experiment", "ping", "--exact-nodes", "4"]
    args += ["--topo", "kary:1", "--sizes", "4K", "--data-dir", str(data)]
    done = _kary(args, scratch)
    assert done.returncode == 0, done.stderr
    parse_tree(data, scratch / "parsed", plots=False)
    ping = load_parsed(scratch / "parsed").ping
    assert len(ping) == 4 * 2 * 2 and set(ping["status"]) == {"ok"}
    assert sorted(set(ping["message_size_bytes"])) == [0, 4096]
    level = build_tree("kary:1", 4).level
    for row in ping.itertuples(index=False):
        module = 1 if row.service == "kvs" else 0
        assert row.hops == 3 + level[int(row.rank)] + module, row
    assert wait_for_no_processes(str(scratch)) == []


SCRIPT = r"""
exec 2>&1
flux ping -c1 --pad=1.5K --rank=3 broker; echo rc=$?
flux ping -c 2 -i 0 -r 2 kvs; echo rc=$?
flux ping -c1 -r 1 content; echo rc=$?
flux ping -c1 2; echo rc=$?
flux ping -c1 -u 1; echo rc=$?
flux ping -c1 -r 9 broker; echo rc=$?
flux ping -c1 -r 2 nosuch; echo rc=$?
flux ping -c1 upstream; echo rc=$?
flux ping -c1 --pad=3G 1; echo rc=$?
flux ping -c1 --pad=abc 1; echo rc=$?
flux ping -c1 -r 1 2!broker; echo rc=$?
flux ping -c1 -r x broker; echo rc=$?
flux ping; echo rc=$?
"""
_ROUTE = re.compile(r"\(([0-9a-f]{8}(?:![0-9a-f]{8})*)\)")
_TIME = re.compile(r"time=[0-9]+\.[0-9]{3} ms")


def _masked(text: str) -> str:
    """Route ids and times differ between any two runs; the route's length may not."""
    text = _ROUTE.sub(lambda m: "(" + "!".join("ID" for _ in m.group(1).split("!")) + ")", text)
    return _TIME.sub("time=T ms", text)


def _run(command: list[str], scratch: Path, name: str) -> str:
    return run_script(command, SCRIPT, scratch, name)


def test_the_emulators_flux_ping_prints_what_flux_core_prints(flux: str, scratch: Path) -> None:
    real = _run([flux, "start", "--test-size=4", "-Stbon.topo=kary:1"], scratch, "real")
    emulated = _run(
        [sys.executable, "-m", "experiments.emulator.instance", "--root", str(scratch / "i"),
         "--size", "4", "--topo", "kary:1", "--"],
        scratch,
        "emulated",
    )  # fmt: skip
    # flux-core's userid is whoever ran it; the emulator says the same of itself.
    assert f"userid={os.getuid()} rolemask=0x1" in real
    assert _masked(emulated).splitlines() == _masked(real).splitlines()
