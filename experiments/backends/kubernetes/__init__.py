"""The kubernetes backend: cells as Flux Operator MiniClusters on a cluster.

- `backend`: KubernetesBackend: connect, check the CRD, hand each cell to its layout;
- the layouts: `nested` (a MiniCluster per node count, the default; its groups
  made and fed in `nested_making`, read in `nested_group`; a race's blocks fed to
  one through `feed`'s ConfigMap) and `per_cell` (a MiniCluster per cell), over
  one `context`;
- their steps: `api` (the client and its retries), `minicluster` (the manifest,
  create, delete, reap), `job_watch` (the operator's Job), `pod_watch` (pods that
  cannot start), `collect` (rank 0's log, provenance, diagnostics),
  `permissions` (the RBAC verbs checked before anything is made) and
  `objects` (the API's JSON read into facts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from experiments.lazy import lazy_exports

if TYPE_CHECKING:
    from experiments.backends.kubernetes.backend import KubernetesBackend

__all__ = ["KubernetesBackend"]

# Lazily: the kubernetes client costs a third of a second to import.
__getattr__ = lazy_exports(
    __name__, {"KubernetesBackend": "experiments.backends.kubernetes.backend"}
)
