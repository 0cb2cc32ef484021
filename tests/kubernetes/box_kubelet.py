"""The box's fake kubelet: a pod whose disk runs low is evicted (issue 44, item 2).

A real kubelet evicts pods once its disk's free share falls under its hard
thresholds (Kubernetes docs, "Node-pressure Eviction": nodefs.available<10% and
imagefs.available<15% by default; on a node of one file system the 15% binds
first).  A pod in a box has its /tmp for its whole disk, so
`PodSettings.eviction_free_percent` is that threshold on /tmp (None: no
eviction, a disk fills up to ENOSPC).

Inside the pod, its holder (pod_box_init.py) looks at /tmp each turn
(`disk_pressure`); under the threshold it writes EVICTED_FILE with what it saw,
then kills the pod's processes, as the kubelet does.  The fake API then shows
the pod as the real API shows an evicted one (`evicted_status`): phase Failed,
reason Evicted, the kubelet's message (pkg/kubelet/eviction/helpers.go:
"The node was low on resource: %v. Threshold quantity: %v, available: %v. "),
and the condition DisruptionTarget with reason TerminationByKubelet ("Pod
disruption conditions", Kubernetes 1.26+).  The box makes no replacement pod:
kary must fail the cell on the evicted pod alone, before a Job would make one.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

__all__ = ["EVICTED_FILE", "disk_pressure", "evicted_status", "read_eviction", "write_eviction"]

EVICTED_FILE = "evicted.json"


def disk_pressure(path: str, percent: float) -> dict[str, int] | None:
    """{"available", "threshold"} in bytes when `path`'s file system has less than
    `percent` of its size free (the kubelet's `available` is statfs's f_bavail), else None."""
    stat = os.statvfs(path)
    size, available = stat.f_blocks * stat.f_frsize, stat.f_bavail * stat.f_frsize
    threshold = math.ceil(size * percent / 100)
    return {"available": available, "threshold": threshold} if available < threshold else None


def write_eviction(pod_dir: Path, seen: dict[str, int]) -> None:
    """Leave what the kubelet saw for the fake API, whole (temp + rename)."""
    temp = pod_dir / f".{EVICTED_FILE}"
    temp.write_text(json.dumps(seen))
    temp.rename(pod_dir / EVICTED_FILE)


def read_eviction(pod_dir: Path) -> dict[str, int] | None:
    """What write_eviction left, or None when the pod was not evicted."""
    try:
        seen: dict[str, int] = json.loads((pod_dir / EVICTED_FILE).read_text())
    except (OSError, ValueError):
        return None
    return seen


def evicted_status(seen: dict[str, int]) -> dict[str, Any]:
    """The fields the API shows of a pod the kubelet evicted for its disk."""
    message = (
        "The node was low on resource: ephemeral-storage. "
        f"Threshold quantity: {seen['threshold'] // 1024}Ki, "
        f"available: {seen['available'] // 1024}Ki. "
    )
    return {
        "phase": "Failed",
        "reason": "Evicted",
        "message": message,
        "conditions": [
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "TerminationByKubelet",
                "message": message,
            }
        ],
    }
