"""Helpers the box tests share: the box's processes, its links and namespaces, a kary to stop."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _live_argvs() -> list[tuple[int, list[bytes]]]:
    """(pid, argv) of every live process but this one; zombies left out."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            found.append((int(entry), argv.split(b"\0")))
    return found


def box_processes(name: str = "kary-box-") -> list[str]:
    """Command lines of live processes that belong to a box (`name` in their argv)."""
    return [
        b" ".join(argv).decode("utf-8", "replace")
        for _, argv in _live_argvs()
        if any(name.encode() in word for word in argv)
    ]


def box_broker_pids(hostname: str) -> list[int]:
    """Pids of a live box broker whose hostname is `hostname` (`flux-sample-1`)."""
    return [
        pid
        for pid, argv in _live_argvs()
        if f"-Shostname={hostname}".encode() in argv and any(b"kary-box-" in a for a in argv)
    ]


def wait_until(condition: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return bool(condition())  # type: ignore[operator]


def box_names(init_pid: int, broker_pids: list[int]) -> tuple[set[str], set[str]]:
    """While a box is up: the links of its switch namespace (`kary-br`, `h<rank>`, ...) and
    the network namespaces of its init and brokers (`net:[inode]`)."""
    shown = subprocess.run(
        ["nsenter", f"--net=/proc/{init_pid}/ns/net", "ip", "-o", "link", "show"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    links = {line.split(":")[1].strip().split("@")[0] for line in shown.splitlines()} - {"lo"}
    namespaces = {os.readlink(f"/proc/{pid}/ns/net") for pid in [init_pid, *broker_pids]}
    return links, namespaces


def host_holds(links: set[str], namespaces: set[str]) -> list[str]:
    """Which of a box's links are in this namespace, and which of its namespaces a live
    process is in or a mount holds open (the names `ip netns` would list are such mounts)."""
    shown = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    here = {line.split(":")[1].strip().split("@")[0] for line in shown.splitlines()}
    held: set[str] = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                held.add(os.readlink(f"/proc/{entry}/ns/net"))
    mounts = Path("/proc/self/mountinfo").read_text()
    inodes = {ns for ns in namespaces if ns[len("net:[") : -1] in mounts}
    return sorted(links & here) + sorted(namespaces & held) + sorted(inodes)


def box_init_pid() -> int | None:
    """The pid of a live box's init (`python -m experiments.box.init .../kary-box-...`, in a
    network namespace not this one's: the `unshare` that starts it has the same argv)."""
    ours = os.readlink("/proc/self/ns/net")
    for pid, argv in _live_argvs():
        if b"experiments.box.init" not in argv or not any(b"kary-box-" in a for a in argv):
            continue
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/ns/net") != ours:
                return pid
    return None


def start_kary(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """`kary ARGS` in a process group of its own, with SIGINT's default action restored
    (a suite started in the background of a shell inherits it ignored)."""
    return subprocess.Popen(
        [sys.executable, "-c", "from experiments.cli import main; main()", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
