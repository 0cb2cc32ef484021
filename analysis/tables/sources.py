"""Where a table's timings come from, as one label per (backend, cluster)."""

from __future__ import annotations

__all__ = ["source_label"]


def source_label(backend: object, cluster: object) -> str:
    """Where timings come from: `local:vm`, `kubernetes/gke-30`, or `seed logs`."""
    backend = backend if isinstance(backend, str) else ""
    cluster = cluster if isinstance(cluster, str) else ""
    if not backend and not cluster:
        return "seed logs"
    if not cluster or cluster.startswith(f"{backend}:"):  # local:HOST names itself
        return cluster or backend
    return f"{backend}/{cluster}"
