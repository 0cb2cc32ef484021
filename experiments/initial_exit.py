"""The exit status a cell's initial program leaves in a file, so its instance can end at once.

The stamping wrapper (backends/entry_stamps.py) writes the entrypoint's exit
status to ``entry.exit`` as its last act.  Once it is there the cell is over:
Flux's own stop (rc3 on every broker: a Python `flux modprobe` that unloads
each module and flushes a content store the cell throws away) only adds
seconds to every cell on this machine (docs/speed.md).  So the session guard
and the box's init watch for the file and, when it appears, kill the brokers
and end with that status instead of waiting for the brokers' own shutdown.
Everything the cell reports is written before the file: its output went to
the log as it ran, and the stamps precede the status.

The file is a number and a newline, written in one write(2).  Its other writer
is the entrypoint's EXIT trap where KARY_EXIT_FILE is set (templates/entrypoint.sh.j2,
the same printf, for a Kubernetes nested cell), and its other reader the nested
driver in bash (templates/nested_driver.sh.j2's kary_follow_job, given EXIT_NAME by
experiments/model/render_nested.py): a change here changes both.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

__all__ = [
    "EXIT_NAME",
    "KILL_NOISE",
    "read_exit_status",
    "without_kill_noise",
    "write_exit_status_line",
]

EXIT_NAME = "entry.exit"
# What a nested instance killed at its exit status prints on the way down (seen with
# flux-core 0.88): `flux job attach`'s word on the signal, and a Python broker module
# of the instance losing its broker.  kary's doing, after the cell's last line: not
# the cell's output or messages.
KILL_NOISE = re.compile(r"^flux-job: task\(s\) Killed$|flux_module_finalize: ")


def write_exit_status_line(folder: Path) -> str:
    """The bash line that leaves the exit status in `$rc` in `folder`'s file, as one
    write(2) of the number and its newline."""
    return f'printf "%s\\n" "$rc" >{shlex.quote(str(folder / EXIT_NAME))}\n'


def read_exit_status(path: Path) -> int | None:
    """The status in `path` once it is whole (a number and a newline); None before."""
    try:
        text = path.read_text()
    except OSError:
        return None
    # bash's printf writes the line in one write(2), but a reader may open the file
    # between its truncation and that write: no newline yet means not yet written.
    if not text.endswith("\n") or not text.strip().isdigit():
        return None
    return int(text)


def without_kill_noise(text: str) -> str:
    """`text` without the lines a kill at the exit status adds (KILL_NOISE)."""
    return "".join(line for line in text.splitlines(keepends=True) if not KILL_NOISE.search(line))
