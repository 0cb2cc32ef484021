"""Which processes are still alive in a process group or a session (Linux /proc).

The emulator's launcher and the real-Flux session guard both must prove that
nothing they started outlives them; this is how they look.  `descendants` is
how the tests' pods in a box find every process of a pod.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["descendants", "live_members"]

# Fields of /proc/PID/stat after "pid (comm) ": state ppid pgrp session ...
_FIELD = {"ppid": 1, "pgrp": 2, "session": 3}


def _processes() -> Iterator[tuple[int, list[str]]]:
    """(pid, the stat fields after comm) of every process still in /proc."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # comm may hold spaces and parentheses: split after its last ')'.
        yield int(entry), stat[stat.rindex(")") + 2 :].split()


def live_members(kind: str, ident: int) -> list[int]:
    """Live (non-zombie) pids whose `kind` ("pgrp" or "session") is `ident`."""
    index = _FIELD[kind]
    return [pid for pid, fields in _processes() if int(fields[index]) == ident and fields[0] != "Z"]


def descendants(root: int) -> list[int]:
    """Every process below `root` (children, theirs, ...), zombies included."""
    children: dict[int, list[int]] = {}
    for pid, fields in _processes():
        children.setdefault(int(fields[_FIELD["ppid"]]), []).append(pid)
    found, stack = [], list(children.get(root, []))
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found
