"""How busy this machine was while a benchmark ran: every figure it prints says so."""

from __future__ import annotations

from pathlib import Path

__all__ = ["CpuMeter"]


def _jiffies() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


class CpuMeter:
    """The share of all cores busy since it was made (the benchmark's own work included)."""

    def __init__(self) -> None:
        self.start = _jiffies()

    def busy(self) -> float:
        busy, total = _jiffies()
        spent = total - self.start[1]
        return (busy - self.start[0]) / spent if spent > 0 else 0.0
