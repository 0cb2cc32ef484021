"""What a dead run's boxes may have left, found by name and removed.

A box cannot outlive its init (the kernel ends a PID namespace with its PID 1),
and its init cannot outlive kary: kary's death signals the session guard,
which ends the init.  Two things can still be left when the guard itself is
killed with kary (`kill -9` of both) or the machine loses power mid-cell:

- a box's init still running (and with it the box, until its cell ends), and
- its scratch folder, `kary-box-<pid>-<tag>` under the temporary directory,
  with the brokers' rundirs and the blobs the ranks extracted.

Both carry the run id, whose `<pid>` is the kary process that made them.  A
box is a dead run's when that process is gone; nothing else is touched.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from experiments.box.layout import BOX_PREFIX, owner_of

__all__ = ["Reaped", "reap_dead_boxes"]

_INIT_MODULE = "experiments.box.init"
_KILL_WAIT_S = 5.0


@dataclass
class Reaped:
    """What `reap_dead_boxes` removed: init pids it killed, folders it deleted."""

    killed: list[int] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.killed or self.removed)

    def text(self) -> str:
        parts = []
        if self.killed:
            parts.append(f"stopped {len(self.killed)} box(es) of dead runs (pids {self.killed})")
        if self.removed:
            parts.append(f"removed {', '.join(str(p) for p in self.removed)}")
        return "; ".join(parts) or "nothing left by dead box runs"


def _alive(pid: int) -> bool:
    """The process exists and has not exited (a zombie waiting for its parent is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].split()[0] not in ("Z", "X")


def _box_inits() -> dict[int, str]:
    """pid -> box name of every box init on this machine (its cmdline names its folder)."""
    inits = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [word.decode("utf-8", "replace") for word in argv]
        if _INIT_MODULE not in words:
            continue
        for word in words:
            parts = Path(word).parts
            names = [part for part in parts if part.startswith(BOX_PREFIX)]
            if names:
                inits[int(entry)] = names[-1]
    return inits


def _scratch_bases(extra: Path | None) -> list[Path]:
    bases = {Path(tempfile.gettempdir()), Path("/tmp")}
    if extra is not None:
        bases.add(extra)
    return sorted(bases)


def reap_dead_boxes(base: Path | None = None) -> Reaped:
    """Stop the boxes and delete the scratch folders of runs whose kary is gone."""
    reaped = Reaped()
    for pid, name in _box_inits().items():
        owner = owner_of(name)
        if owner is not None and not _alive(owner):
            # PID 1 of the box's namespace: the kernel takes every broker with it.
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                reaped.killed.append(pid)
    deadline = time.monotonic() + _KILL_WAIT_S
    while any(_alive(pid) for pid in reaped.killed) and time.monotonic() < deadline:
        time.sleep(0.05)
    for folder in _scratch_bases(base):
        with contextlib.suppress(OSError):
            for entry in folder.iterdir():
                owner = owner_of(entry.name)
                if owner is not None and entry.is_dir() and not _alive(owner):
                    shutil.rmtree(entry, ignore_errors=True)
                    reaped.removed.append(entry)
    return reaped
