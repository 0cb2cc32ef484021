"""Nothing of a box outlives its cell: Ctrl-C, a killed kary, a dead run's leftovers.

Checked where a person would look: the process table (no broker, no init), the
box's own links and namespaces, recorded while it was up (none in the host's
namespace, none a process is in or a mount holds), the scratch folder.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from box_helpers import (
    box_broker_pids,
    box_init_pid,
    box_names,
    box_processes,
    host_holds,
    start_kary,
    wait_until,
)

from experiments.box.reap import reap_dead_boxes

# Slow links (a flat tree of 64M at 20 Mbit/s takes 80 s), so that the cell is
# surely mid-distribution when it is stopped.
_ARGS = ["run", "--exact-nodes", "4", "--topo", "kary:0", "--sizes", "64M"]
_ARGS += ["--link-bandwidth", "20Mbit"]


def _distributing() -> bool:
    """Every broker is up and ranks 1-3 are extracting the archive."""
    argvs = box_processes()
    brokers = [argv for argv in argvs if "--config-path=" in argv and "-Shostname=" in argv]
    extracts = [argv for argv in argvs if "flux archive extract" in argv]
    return len(brokers) == 4 and len(extracts) == 3


# From inside a node's namespace: how long a connection to an address outside the box
# takes to fail, and with what (TEST-NET-1: nothing answers there anyway).
_CONNECT_OUT = """
import errno, socket, time
s = socket.socket()
s.settimeout(5)
t = time.monotonic()
try:
    s.connect(("192.0.2.1", 80))
    print("connected")
except OSError as err:
    print(errno.errorcode.get(err.errno, err), round(time.monotonic() - t, 3))
"""


def _no_way_out_of(pid: int) -> None:
    """A box node has its own link and nothing else: no default route, and a connection
    outside the box fails at once (no route), so no packet of a cell leaves the box."""
    enter = ["nsenter", f"--net=/proc/{pid}/ns/net"]
    routes = subprocess.run([*enter, "ip", "-o", "route", "show"], capture_output=True, text=True)
    assert routes.returncode == 0, routes.stderr
    assert "default" not in routes.stdout and routes.stdout.strip(), routes.stdout
    out = subprocess.run(
        [*enter, sys.executable, "-c", _CONNECT_OUT], capture_output=True, text=True, timeout=30
    )
    code, seconds = out.stdout.split()
    assert code == "ENETUNREACH" and float(seconds) < 0.5, out.stdout


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL])
def test_a_stopped_kary_leaves_no_broker_link_or_namespace(
    box_flux: str, box_env: dict[str, str], tmp_path: Path, signum: int
) -> None:
    kary = start_kary([*_ARGS, "--data-dir", str(tmp_path)], box_env)
    try:
        up = wait_until(_distributing, 60)
        init = box_init_pid()
        assert init is not None, box_processes()
        # The box's own names while it is up: its switch's links, its namespaces.
        brokers = [pid for r in range(4) for pid in box_broker_pids(f"flux-sample-{r}")]
        links, namespaces = box_names(init, brokers)
        assert {"kary-br", "h0", "h3"} <= links and len(namespaces) == 5, (links, namespaces)
        assert host_holds(links, namespaces) == sorted(namespaces)  # alive, so held
        if up and signum == signal.SIGINT:  # once: a node's way out, while the box is up
            _no_way_out_of(box_broker_pids("flux-sample-1")[0])
        # Ctrl-C reaches the terminal's foreground group: kary, not the guard's session.
        os.killpg(kary.pid, signum)
        _, err = kary.communicate(timeout=60)
        assert up, err
    finally:
        if kary.poll() is None:
            kary.kill()
            kary.communicate()
    assert wait_until(lambda: not box_processes(), 30), box_processes()
    # None of them is left: no link in the host's namespace, no namespace that a process
    # is in or a mount holds.
    assert host_holds(links, namespaces) == []
    scratch = Path(box_env["TMPDIR"])
    if signum == signal.SIGINT:
        assert kary.returncode == 130
        assert not list(scratch.glob("kary-box-*"))
        assert '"state": "interrupted"' in (tmp_path / "4/kary-0/bw-20Mbit/0/run.json").read_text()
    else:
        # A killed kary could not delete its scratch folder; the next run (or reap) does.
        left = list(scratch.glob("kary-box-*"))
        assert len(left) == 1
        reaped = reap_dead_boxes(scratch)
        assert reaped.removed == left and not left[0].exists()


def test_reap_removes_a_dead_runs_leftovers_and_nothing_else(tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = tmp_path / f"kary-box-{gone.pid}-abcdef"
    live = tmp_path / f"kary-box-{os.getpid()}-abcdef"
    other = tmp_path / f"kary-flux-{gone.pid}"
    for folder in (dead, live, other):
        (folder / "rank-0").mkdir(parents=True)
    # A box init whose kary is gone: a stand-in that names the dead run's folder.
    init = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; time.sleep(60)",
            "-m",
            "experiments.box.init",
            str(dead / "box.json"),
        ]
    )
    cmdline = Path(f"/proc/{init.pid}/cmdline")
    # Popen returns once exec began; the new command line shows a moment later.
    assert wait_until(lambda: b"experiments.box.init" in cmdline.read_bytes(), 10)
    try:
        reaped = reap_dead_boxes(tmp_path)
        assert init.pid in reaped.killed
        assert init.wait(timeout=10) == -signal.SIGKILL
        assert reaped.removed == [dead]
        assert not dead.exists() and live.exists() and other.exists()
    finally:
        init.kill()
        init.wait()
