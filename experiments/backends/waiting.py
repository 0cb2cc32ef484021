"""Wait for the process that runs a cell, and stop what it started if the wait ends badly."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable

__all__ = ["communicate_or_stop"]

# How often `over` is asked while the process runs: a file's existence, a few µs.
_POLL_S = 0.05


def communicate_or_stop(
    proc: subprocess.Popen[bytes],
    timeout: float | None,
    stop: Callable[[], object],
    over: Callable[[], bool] | None = None,
    end: Callable[[], object] | None = None,
) -> tuple[bytes, bytes, bool]:
    """(stdout, stderr, timed_out) of `proc`, waiting at most `timeout` seconds.

    On a timeout `stop()` runs and whatever was printed so far is collected; on
    any other way out (Ctrl-C, SIGTERM raised as KeyboardInterrupt) `stop()`
    runs and the exception goes on.  With `over` (and `end`): `over()` is asked
    every _POLL_S, and once it is true the cell's work is done though `proc`
    still runs (its instance's own stop), so `end()` ends it and the output is
    collected, not timed out.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            wait = left if over is None else (_POLL_S if left is None else min(_POLL_S, left))
            try:
                out, err = proc.communicate(timeout=wait)
                return out, err, False
            except subprocess.TimeoutExpired:
                # Retrying communicate() loses no output (subprocess's own promise).
                if over is not None and end is not None and over():
                    end()
                    out, err = proc.communicate()
                    return out, err, False
                if left is not None and wait is not None and left <= wait:
                    raise
    except subprocess.TimeoutExpired:
        stop()
        out, err = proc.communicate()
        return out, err, True
    except BaseException:
        stop()
        proc.communicate()
        raise
