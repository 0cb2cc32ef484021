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
    end_if_over: Callable[[], bool] | None = None,
) -> tuple[bytes, bytes, bool]:
    """(stdout, stderr, timed_out) of `proc`, waiting at most `timeout` seconds.

    On a timeout `stop()` runs and whatever was printed so far is collected; on
    any other way out (Ctrl-C, SIGTERM raised as KeyboardInterrupt) `stop()`
    runs and the exception goes on.  With `end_if_over`, it is called every
    _POLL_S while `proc` runs: once the cell's work is done though `proc` still
    runs (its instance's own stop) it ends `proc` and returns True, and the
    output is collected, not timed out.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            polled = end_if_over is not None and (left is None or left > _POLL_S)
            try:
                out, err = proc.communicate(timeout=_POLL_S if polled else left)
                return out, err, False
            except subprocess.TimeoutExpired:
                # Retrying communicate() loses no output (subprocess's own promise).
                if end_if_over is not None and end_if_over():
                    out, err = proc.communicate()
                    return out, err, False
                if not polled:
                    raise
    except subprocess.TimeoutExpired:
        stop()
        out, err = proc.communicate()
        return out, err, True
    except BaseException:
        stop()
        proc.communicate()
        raise
