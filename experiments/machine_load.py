"""How busy this machine is with other work: a benchmark's figures and an emulator cell's
times stretch with it, so each says the share of the cores others kept busy."""

from __future__ import annotations

import os
import resource
from pathlib import Path

__all__ = ["CpuMeter", "jiffies"]


def _children_cpu() -> float:
    """CPU seconds of this process's waited-for children (and theirs), and its own."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    me = resource.getrusage(resource.RUSAGE_SELF)
    return children.ru_utime + children.ru_stime + me.ru_utime + me.ru_stime


def jiffies() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


class CpuMeter:
    """The share of all cores busy since it was made (the benchmark's own work included)."""

    def __init__(self) -> None:
        self.start = jiffies()
        self.own_start = _children_cpu()

    def busy(self) -> float:
        busy, total = jiffies()
        spent = total - self.start[1]
        return (busy - self.start[0]) / spent if spent > 0 else 0.0

    def others(self) -> float:
        """The share of all cores busy with work other than this process and the children
        it waited for: how much else ran while a benchmark did."""
        busy, total = jiffies()
        spent = total - self.start[1]
        if spent <= 0:
            return 0.0
        hertz = os.sysconf("SC_CLK_TCK")
        own = (_children_cpu() - self.own_start) * hertz
        return max(0.0, (busy - self.start[0] - own) / spent)
