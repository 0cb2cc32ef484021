"""Rank 0's log rotations in pods in a box, timed against what kary has read.

The kubelet rotates a container's log when it passes `containerLogMaxSize`
(10 MiB by default, `PodSettings.rotate_bytes` in the box) and the API then
serves the new file only (kubelet docs, "Log rotation"; pkg/kubelet/logs).
Whether a rotation loses anything depends on what kary read before it: lines
written after kary's last read and before the rotation are gone.  Each helper
here makes one of the two cases happen for sure, without megabytes of output:

- `rotate_once_read`: rotate as soon as the API has served `text` (the cell
  prints nothing meanwhile): a rotation that lost nothing;
- `rotate_unread`: the API serves what it had while the driver goes on until
  `until` appears, then the log rotates: the frames between are lost.

Both wrap the box's `log_lines` (which the fake API server calls to serve the
log) on that box only; they read `box.lines` themselves, not through it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

__all__ = ["rotate_once_read", "rotate_unread"]


def rotate_once_read(box: Any, text: str, timeout: float = 60) -> None:
    """Rotate rank 0's log right after the API served a log holding `text`."""
    served = threading.Event()
    original = box.log_lines

    def log_lines() -> list[tuple[float, str]]:
        lines: list[tuple[float, str]] = original()
        if any(text in line for _, line in lines):
            served.set()
        return lines

    box.log_lines = log_lines
    try:
        assert served.wait(timeout), f"the API never served {text!r}"
        box.rotate_log()
    finally:
        box.log_lines = original


def rotate_unread(box: Any, until: str, timeout: float = 60) -> None:
    """Serve the log as it is now until `until` is in it, then rotate: kary never reads
    the lines between, frames among them."""
    with box.lock:
        frozen = list(box.lines)
    original = box.log_lines
    box.log_lines = lambda: list(frozen)
    try:
        deadline = time.monotonic() + timeout
        while True:
            with box.lock:
                if any(until in line for _, line in box.lines):
                    box.rotate_log()
                    return
            assert time.monotonic() < deadline, f"{until!r} never came"
            time.sleep(0.05)
    finally:
        box.log_lines = original
