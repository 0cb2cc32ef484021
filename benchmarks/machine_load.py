"""How busy this machine was while a benchmark ran: every figure it prints says so."""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

__all__ = ["CpuMeter", "settle"]


def _children_cpu() -> float:
    """CPU seconds of this process's waited-for children (and theirs), and its own."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    me = resource.getrusage(resource.RUSAGE_SELF)
    return children.ru_utime + children.ru_stime + me.ru_utime + me.ru_stime


def _jiffies() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


class CpuMeter:
    """The share of all cores busy since it was made (the benchmark's own work included)."""

    def __init__(self) -> None:
        self.start = _jiffies()
        self.own_start = _children_cpu()

    def busy(self) -> float:
        busy, total = _jiffies()
        spent = total - self.start[1]
        return (busy - self.start[0]) / spent if spent > 0 else 0.0

    def others(self) -> float:
        """The share of all cores busy with work other than this process and the children
        it waited for: how much else ran while a benchmark did."""
        busy, total = _jiffies()
        spent = total - self.start[1]
        if spent <= 0:
            return 0.0
        hertz = os.sysconf("SC_CLK_TCK")
        own = (_children_cpu() - self.own_start) * hertz
        return max(0.0, (busy - self.start[0] - own) / spent)


def settle(busy_below: float = 0.15, window_s: float = 0.5, at_most_s: float = 30.0) -> float:
    """Wait until the cores were under `busy_below` busy over a `window_s` window (any
    work an earlier run left behind has ended), or `at_most_s` passed; the seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < at_most_s:
        before = _jiffies()
        time.sleep(window_s)
        after = _jiffies()
        total = after[1] - before[1]
        if total > 0 and (after[0] - before[0]) / total < busy_below:
            break
    return time.monotonic() - started
