"""Helpers the box tests share: the box's processes, the host's links, a kary to stop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def box_processes(name: str = "kary-box-") -> list[str]:
    """Command lines of live processes that belong to a box (`name` in their argv)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if name.encode() in argv and state != "Z":
            found.append(argv.replace(b"\0", b" ").decode("utf-8", "replace"))
    return found


def box_broker_pids(hostname: str) -> list[int]:
    """Pids of a live box broker whose hostname is `hostname` (`flux-sample-1`)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"-Shostname={hostname}".encode() in argv and any(b"kary-box-" in a for a in argv):
            found.append(int(entry))
    return found


def wait_until(condition: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return bool(condition())  # type: ignore[operator]


def host_links() -> str:
    """This namespace's links and named namespaces, to compare before and after."""
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    # Counters and states change by themselves; names and kinds do not.
    return "\n".join(sorted(line.split(":")[1].strip() for line in links.splitlines())) + names


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
