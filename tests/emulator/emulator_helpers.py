"""Helpers for emulator tests: a live instance, and a way to prove no process outlived one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from experiments.emulator.instance import group_members


def processes_mentioning(marker: str) -> list[str]:
    """Processes (other than this one) whose command line or environment holds `marker`."""
    found = []
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            if stat[stat.rindex(")") + 2] == "Z":
                continue
            blob = Path(f"/proc/{entry}/cmdline").read_bytes()
            blob += Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in blob:
            argv0 = blob.split(b"\0")[0].decode(errors="replace")
            found.append(f"{entry}: {argv0}")
    return found


def wait_for_no_processes(marker: str, seconds: float = 10.0) -> list[str]:
    deadline = time.monotonic() + seconds
    left = processes_mentioning(marker)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = processes_mentioning(marker)
    return left


@dataclass
class Instance:
    root: Path
    size: int
    proc: subprocess.Popen[bytes]

    def env(self, rank: int = 0) -> dict[str, str]:
        env = dict(os.environ)
        env["FLUX_URI"] = f"local://{self.root}/sock/{rank}"
        env["KARY_RANK_PREFIX"] = str(self.root / "ranks" / str(rank))
        env["PATH"] = f"{self.root / 'bin'}:{env['PATH']}"
        return env

    def flux(
        self, *args: str, rank: int = 0, timeout: float = 30.0
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["flux", *args],
            env=self.env(rank),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.root / "ranks" / str(rank),
        )

    def prefix(self, rank: int) -> Path:
        return self.root / "ranks" / str(rank)


def start_instance(root: Path, size: int, topo: str, *extra: str) -> Instance:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "experiments.emulator.instance",
            "--root",
            str(root),
            "--size",
            str(size),
            "--topo",
            topo,
            *extra,
            "--",
            "sleep",
            "600",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline().decode()
    assert "brokers up" in line, line
    return Instance(root, size, proc)


def stop_instance(instance: Instance) -> None:
    proc = instance.proc
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
    if proc.stderr is not None:
        proc.stderr.close()
    deadline = time.monotonic() + 5
    while group_members(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert group_members(proc.pid) == []


@contextmanager
def short_folder() -> Iterator[Path]:
    """A short folder under /tmp (unix socket paths are limited to ~107 bytes), removed after."""
    folder = Path(tempfile.mkdtemp(prefix="kt-", dir="/tmp"))
    try:
        yield folder
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)


@contextmanager
def running_instance(size: int, topo: str) -> Iterator[Instance]:
    """An emulated instance of `size` brokers under `topo`, stopped and removed after."""
    with short_folder() as folder:
        inst = start_instance(folder / "i", size, topo)
        try:
            yield inst
        finally:
            stop_instance(inst)
