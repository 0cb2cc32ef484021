"""Which processes are still alive in a process group or a session (Linux /proc).

The emulator's launcher and the real-Flux session guard both must prove that
nothing they started outlives them; this is how they look.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["live_members"]

# Fields of /proc/PID/stat after "pid (comm) ": state ppid pgrp session ...
_FIELD = {"pgrp": 2, "session": 3}


def live_members(kind: str, ident: int) -> list[int]:
    """Live (non-zombie) pids whose `kind` ("pgrp" or "session") is `ident`."""
    index = _FIELD[kind]
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # comm may hold spaces and parentheses: split after its last ')'.
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[index]) == ident and fields[0] != "Z":
            members.append(int(entry))
    return members
