"""Wait for the process that runs a cell, and stop what it started if the wait ends badly."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

__all__ = ["communicate_or_stop"]


def communicate_or_stop(
    proc: subprocess.Popen[bytes], timeout: float | None, stop: Callable[[], object]
) -> tuple[bytes, bytes, bool]:
    """(stdout, stderr, timed_out) of `proc`, waiting at most `timeout` seconds.

    On a timeout `stop()` runs and whatever was printed so far is collected; on
    any other way out (Ctrl-C, SIGTERM raised as KeyboardInterrupt) `stop()`
    runs and the exception goes on.
    """
    try:
        out, err = proc.communicate(timeout=timeout)
        return out, err, False
    except subprocess.TimeoutExpired:
        stop()
        out, err = proc.communicate()
        return out, err, True
    except BaseException:
        stop()
        proc.communicate()
        raise
