"""The emulated Flux instance: start N brokers, run one command as rank 0, stop everything.

    python -m experiments.emulator.instance --root DIR --size N --topo kary:2 \\
        [--bandwidth 1Gbit] [--latency 200us] -- bash entrypoint.sh

The launcher imports the broker code once and forks one process per rank
(cheap on two cores), waits until every broker listens and is connected to its
parent, then runs the command with FLUX_URI, KARY_RANK_PREFIX and PATH (with
the emulator's `flux` first) set for rank 0, and exits with the command's
status.  Its stdout is the command's; its own messages go to stderr with a
`kary-emulator:` prefix.

No process outlives it: start it as a session leader (the local backend does);
on exit, SIGTERM/SIGINT/SIGHUP or the death of its parent it signals its whole
process group and kills stragglers.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import select
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from experiments.emulator.broker import BrokerConfig, run_broker
from experiments.emulator.content import DEFAULT_PURGE_TARGET_SIZE
from experiments.emulator.cpu import CLIENT_ENV, DEFAULT_COSTS, CpuCosts
from experiments.emulator.wire import uri_for
from experiments.errors import UserError
from experiments.model.faults import parse_faults
from experiments.model.topology import build_tree
from experiments.model.units import parse_bandwidth, parse_latency
from experiments.proctable import live_members

__all__ = ["STARTUP_FAILED", "group_members", "main", "write_flux_command"]

STARTUP_FAILED = 125
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


class _Stop(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in process group `pgid` (Linux /proc)."""
    return live_members("pgrp", pgid)


def write_flux_command(bin_dir: Path) -> Path:
    """`<bin_dir>/flux`: runs the emulator's client with this interpreter, without site.

    -S skips site-packages and -c skips runpy (together ~30 ms per call); the
    package's parent folder goes on sys.path instead, which works from a clone
    and from a wheel.
    """
    # experiments/emulator/instance.py -> the folder that holds experiments/.
    package_parent = str(Path(__file__).resolve().parents[2])
    # Appended, not prepended: nothing in site-packages may shadow the stdlib.
    code = (
        f"import sys; sys.path.append({package_parent!r}); "
        "from experiments.emulator.flux import main; sys.exit(main())"
    )
    script = (
        "#!/bin/sh\n"
        "# kary emulator: a stand-in for flux(1) that talks to the emulated brokers.\n"
        # An empty PYTHONDONTWRITEBYTECODE lets the first call cache bytecode for the rest.
        f"PYTHONDONTWRITEBYTECODE= exec {shlex.quote(sys.executable)} -S -c "
        f'{shlex.quote(code)} "$@"\n'
    )
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / "flux"
    path.write_text(script)
    path.chmod(0o755)
    return path


def _prctl(option: int, value: int) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the backend's process-group kill still applies


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="kary-emulator", description=__doc__.split("\n")[0])
    parser.add_argument("--root", required=True, type=Path)
    parser.add_argument("--size", required=True, type=int)
    parser.add_argument("--topo", required=True)
    parser.add_argument("--name", default="flux-sample")
    parser.add_argument("--bandwidth", default=None, help="per-node link to children, e.g. 1Gbit")
    parser.add_argument("--latency", default=None, help="per message and hop, e.g. 200us")
    parser.add_argument("--purge-target-size", type=int, default=DEFAULT_PURGE_TARGET_SIZE)
    parser.add_argument(
        "--cpu-costs",
        default=DEFAULT_COSTS.text(),
        help="extra CPU ms per MiB: broker receive, broker send, client (0,0,0: none)",
    )
    parser.add_argument("--ready-timeout", type=float, default=60.0)
    parser.add_argument(
        "--fault", action="append", default=[], help="tests: corrupt:RANK or kill:RANK:LOADS"
    )
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if not args.command:
        parser.error("give the command to run as rank 0 after --")
    try:
        args.cpu = CpuCosts.parse(args.cpu_costs)
    except ValueError as err:
        parser.error(str(err))
    return args


def _say(message: str) -> None:
    print(f"kary-emulator: {message}", file=sys.stderr, flush=True)


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit {os.waitstatus_to_exitcode(status)}"


def _start_brokers(args: argparse.Namespace, root: Path) -> tuple[dict[int, int], int]:
    """Fork one broker per rank; returns ({pid: rank}, read end of the ready pipe)."""
    tree = build_tree(args.topo, args.size)
    bandwidth = parse_bandwidth(args.bandwidth) if args.bandwidth else None
    cpu = args.cpu
    latency = parse_latency(args.latency) if args.latency else 0.0
    faults: dict[int, dict[str, object]] = args.faults
    ready_r, ready_w = os.pipe()
    pids: dict[int, int] = {}
    for rank in range(args.size):
        config = BrokerConfig(
            rank=rank,
            size=args.size,
            parent=tree.parents[rank],
            topo=str(tree.topology),
            root=str(root),
            name=args.name,
            bandwidth=bandwidth,
            latency=latency,
            purge_target_size=args.purge_target_size,
            cpu=cpu,
            faults=faults.get(rank, {}),
        )
        pid = os.fork()
        if pid == 0:  # the broker
            code = 1
            try:
                os.close(ready_r)
                _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
                for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                    signal.signal(signum, signal.SIG_DFL)
                code = run_broker(config, ready_w)
            finally:
                os._exit(code)
        pids[pid] = rank
    os.close(ready_w)
    return pids, ready_r


def _wait_ready(ready_r: int, count: int, pids: dict[int, int], timeout: float) -> None:
    got = 0
    deadline = time.monotonic() + timeout
    while got < count:
        left = deadline - time.monotonic()
        if left <= 0:
            raise RuntimeError(f"only {got} of {count} brokers came up within {timeout:.0f} s")
        readable, _, _ = select.select([ready_r], [], [], min(left, 0.5))
        if readable:
            data = os.read(ready_r, 4096)
            if not data:
                raise RuntimeError(f"only {got} of {count} brokers came up")
            got += len(data)
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid in pids:
            raise RuntimeError(f"broker rank {pids[pid]} failed to start ({_describe(status)})")
    os.close(ready_r)


def _teardown(pids: dict[int, int]) -> None:
    """SIGTERM the whole group (not us), give it a moment, then SIGKILL what is left."""
    me = os.getpid()
    pgid = os.getpgid(0)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    members = [p for p in group_members(pgid) if p != me] if pgid == me else list(pids)
    for pid in members:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass
        left = [p for p in group_members(pgid) if p != me] if pgid == me else []
        if not left and not any(_alive(p) for p in pids):
            return
        time.sleep(0.02)
    for pid in [p for p in group_members(pgid) if p != me] if pgid == me else list(pids):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == 0
    except ChildProcessError:
        return False


def _on_signal(signum: int, _frame: object) -> None:
    raise _Stop(signum)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    try:
        # Read with the rules the plan checked them by (model/faults.py).
        args.faults = parse_faults(args.fault)
    except UserError as err:
        _say(f"error: {err}")
        return STARTUP_FAILED
    root = args.root.resolve()
    for sub in ("sock", "content", "bin"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for rank in range(args.size):
        (root / "ranks" / str(rank)).mkdir(parents=True, exist_ok=True)
    write_flux_command(root / "bin")
    parent = os.getppid()
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    if os.getppid() != parent:  # our parent died before prctl took effect
        return STARTUP_FAILED
    pids: dict[int, int] = {}
    rc = STARTUP_FAILED
    try:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, _on_signal)
        started = time.monotonic()
        pids, ready_r = _start_brokers(args, root)
        try:
            _wait_ready(ready_r, args.size, pids, args.ready_timeout)
        except RuntimeError as err:
            _say(f"error: {err}")
            return STARTUP_FAILED
        _say(f"{args.size} brokers up ({args.topo}) in {time.monotonic() - started:.2f} s")
        env = dict(os.environ)
        env["FLUX_URI"] = uri_for(str(root), 0)
        env["KARY_RANK_PREFIX"] = str(root / "ranks" / "0")
        env[CLIENT_ENV] = f"{args.cpu.client_ms:g}"  # flux exec carries it to every rank
        env["PATH"] = f"{root / 'bin'}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
        proc = subprocess.Popen(args.command, env=env, cwd=root / "ranks" / "0")
        pids[proc.pid] = -1  # torn down with the brokers if the group kill cannot be used
        while True:
            pid, status = os.waitpid(-1, 0)
            if pid == proc.pid:
                proc.returncode = rc = os.waitstatus_to_exitcode(status)
                del pids[pid]  # reaped: its pid may be reused, never signal it again
                break
            if pids.get(pid, -1) >= 0:
                _say(f"broker rank {pids.pop(pid)} exited ({_describe(status)})")
        if rc < 0:
            rc = 128 - rc
        return rc
    except _Stop as stop:
        _say(f"stopped by {signal.Signals(stop.signum).name}")
        return 128 + stop.signum
    finally:
        _teardown(pids)


if __name__ == "__main__":
    sys.exit(main())
