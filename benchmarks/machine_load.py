"""How busy this machine was while a benchmark ran: every figure it prints says so.

CpuMeter is experiments/machine_load.py's (an emulator cell measures the same).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from experiments.machine_load import CpuMeter, jiffies

__all__ = ["CpuMeter", "settle"]


def settle(busy_below: float = 0.15, window_s: float = 0.5, at_most_s: float = 30.0) -> float:
    """Wait until the cores were under `busy_below` busy over a `window_s` window (any
    work an earlier run left behind has ended), or `at_most_s` passed; the seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < at_most_s:
        before = jiffies()
        time.sleep(window_s)
        after = jiffies()
        total = after[1] - before[1]
        if total > 0 and (after[0] - before[0]) / total < busy_below:
            break
    return time.monotonic() - started
