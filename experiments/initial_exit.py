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

The other half of not waiting for what a cell does not need is here too: the
switch (NO_JOB_CLEANUP) that spares a cell's own instance flux-core's job
cleanup where it does stop by itself.

The file is a number and a newline, written in one write(2).  Its other writer
is the entrypoint's EXIT trap where KARY_EXIT_FILE is set (templates/entrypoint.sh.j2,
the same printf, for a Kubernetes nested cell), and its other reader the nested
driver in bash (templates/nested_driver.sh.j2's kary_follow_job, given EXIT_NAME by
experiments/model/render_nested.py): a change here changes both.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

__all__ = [
    "EXIT_NAME",
    "KILL_NOISE",
    "NO_JOB_CLEANUP",
    "NO_JOB_CLEANUP_ENV",
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
# Where a cell's instance does stop by itself (a nested cell in a user's allocation,
# a per-cell MiniCluster, a nested cell whose status file is not on the driver's
# node), rank 0 first runs the four Python commands flux-core's rc1 pushes for the
# instance's end (flux-core 0.88 etc/modprobe/rc1.py, push_cleanup: queue stop,
# resource acquire-mute, cancel, queue idle): they stop the queue and cancel jobs
# still running.  A cell's instance runs no job (its initial program is the
# entrypoint: flux exec, flux archive), so they cost every node of the cell
# 0.4-0.6 s of nothing (benchmarks/job_cleanup.py).
# This is rc1's own switch, in the environment of a cell's `flux batch` and of a
# per-cell MiniCluster's container; a Flux without it cleans up as before.  Never
# for an instance whose jobs are cells (the nested layout's outer one, whose
# MiniCluster render_nested makes from a cell's): its stop must cancel them.
_CLEANUP_SWITCH, _ON = "FLUX_DISABLE_JOB_CLEANUP", "1"
NO_JOB_CLEANUP = f"{_CLEANUP_SWITCH}={_ON}"  # as `flux batch --env=` takes it
# As a MiniCluster container's `environment` takes it: the operator makes it the
# container's, so every broker's and rc1's (flux-operator controllers/flux/containers.go).
NO_JOB_CLEANUP_ENV: Mapping[str, str] = MappingProxyType({_CLEANUP_SWITCH: _ON})


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
