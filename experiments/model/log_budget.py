"""What a nested group prints into rank 0's log, against the size at which the kubelet rotates it.

The kubelet rotates a container's log when its file passes
`containerLogMaxSize`, 10 MiB by default (kubelet configuration reference,
KubeletConfiguration.containerLogMaxSize), and the API then serves the new
file only.  A rotation that lost nothing is routine (backends/kubernetes/
log_follow), but one that comes while kary has not read the last lines loses
them: the nested layout keeps each group's log under the rotation size, so
rotations stay rare.  The file is CRI's format, a line each with its
timestamp, stream and tag (`2026-11-28T12:00:00.123456789Z stdout F `, 40
bytes) before the text.  The operator runs the application container with a
TTY (flux-operator 0d75cef8, controllers/flux/containers.go: `TTY: true`), whose
line discipline ends every line `\r\n`: one byte a line more than the text
printed (TTY_LINE_BYTES).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = [
    "CRI_LINE_BYTES",
    "DEFAULT_ROTATE_BYTES",
    "GROUP_SHARE",
    "TTY_LINE_BYTES",
    "cell_log_bytes",
    "group_budget",
    "split_by_budget",
]

DEFAULT_ROTATE_BYTES = 10 * 2**20
CRI_LINE_BYTES = len("2026-11-28T12:00:00.123456789Z stdout F ")
# The `\r` a TTY's line discipline puts before each `\n` (module doc).
TTY_LINE_BYTES = 1

# The share of the rotation size a group's log may fill: kary's fit below is the
# emulator's output, and a cluster's host names and Flux's messages run longer.
GROUP_SHARE = 0.5

# Bytes a cell adds to the log file (CRI format, with the driver's frames), fitted
# on the emulator's output by benchmarks/cell_log_bytes.py
# (benchmarks/results/cell-log-bytes-emulator.txt, verify off as on a cluster; a
# sample left out of the fit came within 0.2%), each line with its CRI prefix and
# the TTY's `\r`: distribute a + b N + S (c + T (d + e N)) for N nodes, S sizes,
# T strategies; ping a + b N + S (c + e N).  flux-distribute's 30-node cell (10 sizes,
# all) is 27.5 KiB, a 256-node one 62 KiB (146 KiB with three strategies); ping
# prints per rank and size, 2.5 MiB a 256-node cell of 10 sizes.
_DISTRIBUTE = (2151.0, 75.25, -105.0, 2244.0, 8.0)
_PING = (2057.0, 948.75, -94.0, 910.5)


def cell_log_bytes(experiment: str, nodes: int, sizes: int, strategies: int) -> int:
    """What one cell adds to rank 0's log file in the nested layout (the fit above)."""
    if experiment == "ping":
        a, b, c, e = _PING
        value = a + b * nodes + sizes * (c + e * nodes)
    else:
        a, b, c, d, e = _DISTRIBUTE
        value = a + b * nodes + sizes * (c + strategies * (d + e * nodes))
    return math.ceil(value)


def split_by_budget(cell_bytes: Sequence[int], budget: int) -> list[int]:
    """How many cells each group takes, in order, so no group's log passes `budget`
    (a cell larger than the budget alone still makes a group of one)."""
    groups: list[int] = []
    total = 0
    for size in cell_bytes:
        if groups and total + size <= budget:
            groups[-1] += 1
            total += size
        else:
            groups.append(1)
            total = size
    return groups


def group_budget(rotate_bytes: int = DEFAULT_ROTATE_BYTES) -> int:
    """The bytes a nested group's log may take before the kubelet would rotate it."""
    return int(rotate_bytes * GROUP_SHARE)
