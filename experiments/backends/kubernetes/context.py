"""What a layout needs to run cells on the cluster: the API, where, how to name, how long.

The backend builds one `ClusterContext` after `up()` and hands it to the layout
that runs its cells (per_cell or nested), so both name, label, watch, wait
and tear down MiniClusters alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from experiments.backends.kubernetes.api import KubeApi, RetryPolicy
from experiments.backends.kubernetes.minicluster import Teardown
from experiments.backends.kubernetes.nodes import NodeCatalog
from experiments.backends.kubernetes.pod_watch import StartLimits
from experiments.model.disk import EVICTION_FREE_PERCENT

__all__ = ["ClusterContext"]


@dataclass(frozen=True)
class ClusterContext:
    """The cluster's API and the settings every MiniCluster kary makes there follows.

    `labels` go on every MiniCluster (the sweep's); `name_cell` turns the
    rendered name into a MiniCluster's own (a fresh suffix);
    `job_start_timeout_s` is how long the operator may take to make the Job,
    `window_s` a Job watch's window, `default_timeout_s` a cell's limit when the
    runner gives none.
    """

    api: KubeApi
    namespace: str
    labels: dict[str, str]
    name_cell: Callable[[str], str]
    teardown: Teardown
    policy: RetryPolicy
    limits: StartLimits
    nodes: NodeCatalog
    job_start_timeout_s: float
    window_s: float
    default_timeout_s: float = 6 * 3600.0
    sleep: Callable[[float], None] = time.sleep
    # The share of a node's disk its kubelet keeps free (model/disk.py, by provider):
    # the nested driver keeps it free before each cell.
    eviction_percent: int = EVICTION_FREE_PERCENT
