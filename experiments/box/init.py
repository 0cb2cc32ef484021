"""Build one box, run the cell's brokers in it, and end with rank 0's exit status.

    unshare --pid --fork --kill-child --mount-proc --net [--user --map-root-user] \\
        python -m experiments.box.init BOX_DIR/box.json

This program is PID 1 of a fresh PID namespace, in a fresh mount namespace
and in a fresh network namespace that becomes the box's switch (a bridge,
`kary-br`).  When it ends, however it ends (even SIGKILL), the kernel kills
every process of its PID namespace, and with the last of them go the node
namespaces, their veth pairs, the bridge and every qdisc: nothing of a box
can outlive it, and nothing of it is ever in the host's namespace.

For each rank it forks a child that moves into a network namespace of its own,
waits until the switch side of its link exists, brings its side up (address,
`tc` on `eth0`), then becomes `flux broker --config-path=... -Shostname=...`;
rank 0's broker runs the entrypoint as its initial program, with this
program's stdout and stderr (the cell's log).  The other ranks log to
`BOX_DIR/rank-<r>.log`.  When rank 0's broker exits, the others (which Flux
shuts down with it) get a grace period, then SIGKILL; once the entrypoint has
left its exit status in the spec's `end_file` (experiments/initial_exit.py), every
broker gets SIGKILL at once and the box ends with that status.  Last, the byte count
of every link and the `tc -s` statistics of its shaped qdiscs (bytes, drops,
overlimits, each direction) go to `BOX_DIR/links.json`.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.initial_exit import read_exit_status

__all__ = ["BoxSpec", "main"]

_CLONE_NEWNET = 0x40000000
_PR_SET_PDEATHSIG = 1
BRIDGE = "kary-br"
_SHUTDOWN_GRACE_S = 30.0
_KILL_GRACE_S = 3.0
_EXIT_STARTUP_FAILED = 124


@dataclass(frozen=True)
class BoxSpec:
    """What `init` builds, as the backend writes it to `BOX_DIR/box.json`."""

    folder: str
    flux: str
    nodes: int
    config: str
    hosts: list[str]
    addresses: list[str]
    prefix_length: int
    # tc -batch lines per rank, with `DEV` for the device: the node's side, the switch's side.
    node_qdiscs: list[list[str]]
    switch_qdiscs: list[list[str]]
    initial_program: list[str]
    env: dict[str, str]
    # A two-level network: each rank's group (empty: every node on the core switch),
    # and the tc lines of each group's uplink (both ends, so both directions).
    groups: list[int] = field(default_factory=list)
    trunk_qdiscs: list[str] = field(default_factory=list)
    # Where the stamped entrypoint leaves its exit status ("": wait for rank 0's broker).
    end_file: str = ""

    @classmethod
    def read(cls, path: Path) -> BoxSpec:
        return cls(**json.loads(path.read_text()))

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(self.__dict__, indent=1))


class _Stopped(Exception):
    pass


def _raise_stopped(_signum: int, _frame: object) -> None:
    raise _Stopped


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _run(command: list[str], stdin: str | None = None) -> None:
    """Run a setup command; RuntimeError with its last line when it fails."""
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise RuntimeError(f"`{' '.join(command)}`: {last}")


def _batch(tool: str, lines: list[str]) -> None:
    if lines:
        _run([tool, "-batch", "-"], "\n".join(lines) + "\n")


class _Rank:
    """One rank's child: in its own network namespace, waiting to become a broker."""

    def __init__(self, spec: BoxSpec, rank: int) -> None:
        self.rank = rank
        go_read, self._go = os.pipe()
        ready_read, ready_write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover - the child execs or exits
            os.close(self._go)
            os.close(ready_read)
            self._child(spec, go_read, ready_write)
        os.close(go_read)
        os.close(ready_write)
        with os.fdopen(ready_read, "rb") as ready:
            if ready.read(1) != b"1":
                raise RuntimeError(f"rank {rank} could not make its network namespace")
        # Holding the namespace open keeps its link (and the link's byte counts)
        # after the broker exits, until this program ends.
        self.netns = os.open(f"/proc/{self.pid}/ns/net", os.O_RDONLY)

    def release(self) -> None:
        """Its link exists: let it configure its side and exec the broker."""
        os.write(self._go, b"g")
        os.close(self._go)

    def _child(self, spec: BoxSpec, go_read: int, ready_write: int) -> None:  # pragma: no cover
        code = _EXIT_STARTUP_FAILED
        try:
            for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(signum, signal.SIG_DFL)
            libc = _libc()
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if libc.unshare(_CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNET)")
            os.write(ready_write, b"1")
            os.close(ready_write)
            if os.read(go_read, 1) != b"g":
                os._exit(code)
            folder = Path(spec.folder) / f"rank-{self.rank}"
            if self.rank != 0:
                log = os.open(folder.with_suffix(".log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                os.dup2(log, 1)
                os.dup2(log, 2)
            address = f"{spec.addresses[self.rank]}/{spec.prefix_length}"
            _batch(
                "ip",
                ["link set lo up", f"address add {address} dev eth0", "link set eth0 up"],
            )
            _batch("tc", [line.replace("DEV", "eth0") for line in spec.node_qdiscs[self.rank]])
            env = {**spec.env, "TMPDIR": str(folder)}
            command = [
                spec.flux,
                "broker",
                f"--config-path={spec.config}",
                f"-Shostname={spec.hosts[self.rank]}",
                *(spec.initial_program if self.rank == 0 else []),
            ]
            os.chdir(folder)
            os.execve(spec.flux, command, env)
        except BaseException as err:  # a child reports and exits, never returns
            with contextlib.suppress(OSError):
                os.write(2, f"kary box: rank {self.rank}: {err}\n".encode())
        os._exit(code)


def build_and_run(spec: BoxSpec) -> int:
    """The box's life: switch, ranks, links, brokers; rank 0's exit status."""
    _batch("ip", ["link set lo up", f"link add {BRIDGE} type bridge", f"link set {BRIDGE} up"])
    for rank in range(spec.nodes):
        (Path(spec.folder) / f"rank-{rank}").mkdir(exist_ok=True)
    ranks = [_Rank(spec, rank) for rank in range(spec.nodes)]
    switches = _group_switches(spec)
    _batch(
        "ip",
        [
            line
            for r in ranks
            for line in (
                f"link add h{r.rank} type veth peer name eth0 netns {r.pid}",
                f"link set h{r.rank} master {switches[r.rank]} up",
            )
        ],
    )
    _batch(
        "tc",
        [line.replace("DEV", f"h{r.rank}") for r in ranks for line in spec.switch_qdiscs[r.rank]],
    )
    # Rank 0 last: its initial program starts once every other broker may join.
    for r in reversed(ranks):
        r.release()
    return _wait(ranks, spec)


def _group_switches(spec: BoxSpec) -> list[str]:
    """Each rank's switch: the core bridge, or in a two-level network its group's
    bridge `kary-g<i>`, made here with its uplink (`u<i>` on it, `c<i>` on the
    core, both ends shaped by the trunk's tc lines)."""
    if not spec.groups:
        return [BRIDGE] * spec.nodes
    groups = sorted(set(spec.groups))
    _batch(
        "ip",
        [
            line
            for g in groups
            for line in (
                f"link add kary-g{g} type bridge",
                f"link set kary-g{g} up",
                f"link add u{g} type veth peer name c{g}",
                f"link set u{g} master kary-g{g} up",
                f"link set c{g} master {BRIDGE} up",
            )
        ],
    )
    _batch(
        "tc",
        [
            line.replace("DEV", end)
            for g in groups
            for end in (f"u{g}", f"c{g}")
            for line in spec.trunk_qdiscs
        ],
    )
    return [f"kary-g{g}" for g in spec.groups]


def _wait(ranks: list[_Rank], spec: BoxSpec) -> int:
    """Reap until rank 0's broker exits, then give the others a grace period; or
    until the entrypoint's exit status is in the end file, then none."""
    alive = {r.pid: r.rank for r in ranks}
    code: int | None = None
    deadline: float | None = None
    end_file = Path(spec.end_file) if spec.end_file else None
    ended: int | None = None
    while alive:
        if code is None and end_file is not None:
            ended = read_exit_status(end_file)
            if ended is not None:
                code, deadline = ended, time.monotonic()
        if deadline is not None and time.monotonic() > deadline:
            _signal(list(alive), signal.SIGKILL)
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.05)
            continue
        rank = alive.pop(pid, None)
        if rank is None:
            continue  # an orphan re-parented to PID 1: reaped
        exit_code = os.waitstatus_to_exitcode(status)
        if rank == 0 and ended is None:  # killed once the entrypoint ended: its status stands
            code = exit_code if exit_code >= 0 else 128 - exit_code
            deadline = time.monotonic() + _SHUTDOWN_GRACE_S
        elif exit_code == _EXIT_STARTUP_FAILED and code is None:
            # A rank that never became a broker: rank 0 would wait for it forever.
            print(f"kary box: rank {rank} did not start; stopping the box", file=sys.stderr)
            code = _EXIT_STARTUP_FAILED
            deadline = time.monotonic()
    _write_link_bytes(spec, ranks)
    return 128 + signal.SIGKILL if code is None else code


def _signal(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


def _write_link_bytes(spec: BoxSpec, ranks: list[_Rank]) -> None:
    """Bytes each node sent and received over its link, from the switch side's counters,
    and the `tc -s` statistics of every shaped qdisc on it, each direction."""
    done = subprocess.run(
        ["ip", "-json", "-statistics", "link", "show"], capture_output=True, text=True, check=False
    )
    switch = _qdisc_stats(None)
    links: dict[str, Any] = {}
    with contextlib.suppress(ValueError, TypeError):
        for link in json.loads(done.stdout):
            name, stats = link.get("ifname", ""), link.get("stats64", {})
            if name.startswith("h") and name[1:].isdigit():
                # The switch side receives what the node sends, and the reverse.
                links[name[1:]] = {
                    "sent_bytes": stats.get("rx", {}).get("bytes"),
                    "received_bytes": stats.get("tx", {}).get("bytes"),
                    # The node's eth0 shapes what it sends, the switch's h<rank> what it gets.
                    "qdiscs": {"received": switch.get(name, [])},
                }
            elif name.startswith("c") and name[1:].isdigit():
                # A group's uplink, seen from the core: what the group sent out, and took in.
                links[f"group {name[1:]}"] = {
                    "sent_bytes": stats.get("rx", {}).get("bytes"),
                    "received_bytes": stats.get("tx", {}).get("bytes"),
                    # u<g> shapes what the group sends to the core, c<g> what it gets.
                    "qdiscs": {
                        "sent": switch.get(f"u{name[1:]}", []),
                        "received": switch.get(name, []),
                    },
                }
    for r in ranks:
        link = links.get(str(r.rank))
        if link is not None:
            link["qdiscs"] = {"sent": _qdisc_stats(r.netns).get("eth0", []), **link["qdiscs"]}
    (Path(spec.folder) / "links.json").write_text(json.dumps(links))


# What run.json keeps of each shaped qdisc `tc -s -j qdisc show` lists.
_QDISC_FIELDS = ("kind", "handle", "bytes", "packets", "drops", "overlimits", "requeues")
# A fair link's htb root counts every drop of its per-peer FIFOs; those are not kept.
_SHAPING = ("tbf", "netem", "htb")


def _qdisc_stats(netns: int | None) -> dict[str, list[dict[str, Any]]]:
    """{device: [its tbf, htb and netem qdiscs' statistics]} in this namespace, or in the one
    `netns` (an open namespace file) names; {} when tc cannot say."""

    def enter() -> None:  # pragma: no cover - runs in the child, before tc
        if netns is not None and _libc().setns(netns, _CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns(CLONE_NEWNET)")

    try:
        done = subprocess.run(
            ["tc", "-s", "-j", "qdisc", "show"],
            capture_output=True,
            text=True,
            check=False,
            preexec_fn=enter,
            pass_fds=() if netns is None else (netns,),
        )
        found: dict[str, list[dict[str, Any]]] = {}
        for qdisc in json.loads(done.stdout):
            if qdisc.get("kind") in _SHAPING:
                stats = {key: qdisc.get(key) for key in _QDISC_FIELDS}
                found.setdefault(str(qdisc.get("dev")), []).append(stats)
        return found
    except (OSError, subprocess.SubprocessError, ValueError, TypeError, AttributeError):
        return {}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m experiments.box.init BOX_DIR/box.json", file=sys.stderr)
        return 2
    spec = BoxSpec.read(Path(argv[0]))
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _raise_stopped)
    try:
        return build_and_run(spec)
    except _Stopped:
        return 128 + signal.SIGTERM
    except (OSError, RuntimeError) as err:
        print(f"kary box: {err}", file=sys.stderr)
        return _EXIT_STARTUP_FAILED
    # Returning ends PID 1, and the kernel kills whatever of the box is left.


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
