"""Run one command so that nothing it starts outlives it, kary, or a signal.

    python -m experiments.backends.flux.session_guard [--end-file PATH] -- flux start ...

`flux start --test-size` forks its brokers and, on SIGTERM, exits at once
without stopping them (flux-core 0.88: the brokers, their Python modules and the
initial program go on running, some in process groups of their own).  So the
flux backend starts this guard as a session leader instead, and the guard:

- runs the command as its child, in its own session, as a child subreaper so
  that orphaned brokers are re-parented to it rather than to init;
- asks the kernel to send it SIGTERM if kary dies (PR_SET_PDEATHSIG), so a
  crashed or SIGKILLed kary still takes the instance down;
- on SIGTERM, SIGINT or SIGHUP, and when the command exits, sends SIGTERM to
  every other process of its session, waits a moment, then SIGKILLs what is
  left and reaps it; it exits with the command's status (128 + signal when a
  signal stopped it);
- given `--end-file`, ends as soon as that file holds the cell's exit status
  (experiments/initial_exit.py): it SIGKILLs the session at once and exits with
  that status, rather than wait seconds for the brokers' own stop.

`session_members(sid)` is also what the backend uses to check afterwards.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from experiments.initial_exit import read_exit_status
from experiments.proctable import live_members

__all__ = ["kill_session", "session_members", "stop_guard"]

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_GRACE_S = 2.0
_REAP_S = 5.0
# How often the guard looks for its command's exit and the end file.
_POLL_S = 0.05


def session_members(sid: int) -> list[int]:
    """Live (non-zombie) processes of session `sid`, from Linux's /proc."""
    return live_members("session", sid)


def _signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def _reap_children() -> None:
    """Collect exited children (the subreaper inherits orphans) so they leave /proc."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_session(sid: int, *, grace: float = _GRACE_S, exclude: int | None = None) -> list[int]:
    """SIGTERM every process of session `sid`, then SIGKILL survivors; the pids still alive.

    `exclude` (the guard itself) is spared; with no `grace` there is no SIGTERM.
    Children of the caller are reaped as they exit, so a caller that is the
    subreaper sees an empty session.
    """

    def others() -> list[int]:
        _reap_children()
        return [p for p in session_members(sid) if p != exclude]

    if grace > 0:
        _signal_all(others(), signal.SIGTERM)
        deadline = time.monotonic() + grace
        while others() and time.monotonic() < deadline:
            time.sleep(0.05)
    deadline = time.monotonic() + _REAP_S
    while (left := others()) and time.monotonic() < deadline:
        _signal_all(left, signal.SIGKILL)
        time.sleep(0.05)
    return others()


def stop_guard(guard: subprocess.Popen[bytes], grace: float) -> list[int]:
    """Stop a guard kary started (it tears its command down): SIGTERM, `grace`
    seconds, SIGKILL; then the pids of its session still alive, after a last sweep."""
    if guard.poll() is None:
        try:
            guard.send_signal(signal.SIGTERM)
            guard.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            guard.kill()
            guard.wait()
    # The guard is the session leader: whatever is left in its session is ours.
    if session_members(guard.pid):
        return kill_session(guard.pid)
    return []


def _prctl(option: int, value: int) -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


class _Stopped(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum: int, _frame: object) -> None:
    raise _Stopped(signum)


def _wait_for(child: int, end_file: Path | None) -> tuple[int, bool]:
    """`child`'s exit status, or the one `end_file` holds if it comes first; and
    whether it came from the end file (the session is then still running).  Without
    an end file it simply waits; with one it looks every _POLL_S."""
    while True:
        pid, status = os.waitpid(child, 0 if end_file is None else os.WNOHANG)
        if pid:
            code = os.waitstatus_to_exitcode(status)
            return (128 - code if code < 0 else code), False
        if end_file is not None and (ended := read_exit_status(end_file)) is not None:
            return ended, True
        time.sleep(_POLL_S)


def main(argv: list[str]) -> int:
    end_file = None
    if argv[:1] == ["--end-file"] and len(argv) > 1:
        end_file, argv = Path(argv[1]), argv[2:]
    command = argv[1:] if argv[:1] == ["--"] else argv
    if not command:
        print(
            "session_guard: usage: session_guard [--end-file PATH] -- COMMAND [ARGS...]",
            file=sys.stderr,
        )
        return 2
    parent = os.getppid()
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    if os.getppid() != parent:  # kary died before the death signal was armed
        return 128 + signal.SIGTERM
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _raise_stopped)
    sid = os.getsid(0)
    code = 128 + signal.SIGTERM
    grace = _GRACE_S
    try:
        child = os.fork()
        if child == 0:  # the command: default signal handling, same session
            for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(signum, signal.SIG_DFL)
            try:
                os.execvp(command[0], command)
            except OSError as err:
                print(f"session_guard: cannot run {command[0]}: {err}", file=sys.stderr)
            os._exit(127)
        code, ended_early = _wait_for(child, end_file)
        if ended_early:
            grace = 0.0  # the cell is over: nothing the brokers do now is kept
    except _Stopped as stop:
        code = 128 + stop.signum
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)
        kill_session(sid, grace=grace, exclude=os.getpid())
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
