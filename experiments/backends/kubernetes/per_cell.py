"""The per-cell layout on Kubernetes: a MiniCluster of its own for each cell, as
flux-distribute ran it.

Per cell: create the MiniCluster (a name of its own, labelled with owner,
sweep and cell), wait for the indexed Job the operator makes under the same
name to turn Complete or Failed (job_watch) while watching its pods fail fast
on what never heals and on a rank that lost its node to preemption
(pod_watch, preemption), read back the result (collect), then delete
the MiniCluster and wait, for a bounded time, for its pods to go: also on
Ctrl-C, SIGTERM or an API that broke, so nothing of a cell outlives `run()`.
A MiniCluster of the cell's name that kary did not make is never deleted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubernetes.client.exceptions import ApiException

from experiments.backends.base import BackendError, RunResult
from experiments.backends.kubernetes.api import ApiUnavailable, api_message
from experiments.backends.kubernetes.collect import CellCheck, collect_result
from experiments.backends.kubernetes.context import ClusterContext
from experiments.backends.kubernetes.job_watch import wait_for_job
from experiments.backends.kubernetes.minicluster import (
    NotOurs,
    build_manifest,
    create_minicluster,
    delete_minicluster,
)
from experiments.backends.kubernetes.pod_watch import PodEvicted, PodWatch, StartFailure
from experiments.backends.kubernetes.preemption import Preempted

if TYPE_CHECKING:
    from experiments.model.plan import Cell
    from experiments.model.render import Rendered

__all__ = ["PerCellLayout"]


class _Overdue(Exception):
    """The cell ran past its limit, counted from when its pods all ran."""


@dataclass
class PerCellLayout:
    """Runs each cell in a MiniCluster of its own (module doc)."""

    cluster: ClusterContext

    def run(
        self, cell: Cell, rendered: Rendered, timeout: float | None, facts: dict[str, Any]
    ) -> RunResult:
        """Run the cell in a new MiniCluster and delete it; `facts` go into run.json."""
        cluster = self.cluster
        api = cluster.api
        body = build_manifest(rendered.minicluster_yaml, cell.id, cluster.namespace, cluster.labels)
        body["metadata"]["name"] = cluster.name_cell(body["metadata"]["name"])
        name, ns = body["metadata"]["name"], body["metadata"]["namespace"]
        limit = timeout if timeout is not None else cluster.default_timeout_s
        provenance = dict(facts)
        provenance.update({"namespace": ns, "minicluster": name})
        ours = True  # from the create request on, a MiniCluster of ours may exist
        leftover = None
        try:
            create_minicluster(api, ns, name, body, cluster.teardown)
            pods = PodWatch(
                api, ns, name, int(body["spec"]["size"]), cluster.limits, nodes=cluster.nodes
            )
            outcome: tuple[str, str] | StartFailure | Preempted | None

            def look() -> None:
                pods.check()
                if pods.overdue(limit):
                    raise _Overdue

            try:
                # The cell's time starts once its pods all run: until then the pod watch
                # bounds it (an image pull may take most of pending_s, and is no hang).
                outcome = wait_for_job(
                    api,
                    ns,
                    name,
                    time.monotonic() + cluster.limits.pending_s + limit,
                    start_timeout_s=cluster.job_start_timeout_s,
                    window_s=cluster.window_s,
                    policy=cluster.policy,
                    sleep=cluster.sleep,
                    check=look,
                    check_every_s=cluster.limits.check_every_s,
                )
            except (StartFailure, Preempted) as failure:
                outcome = failure
            except PodEvicted as evicted:
                outcome = ("Failed", str(evicted))
            except _Overdue:
                outcome = None
            check = CellCheck(cell.id, cluster.limits.allow_shared_nodes)
            result = collect_result(api, ns, name, outcome, limit, provenance, pods, check)
        except NotOurs as err:
            ours = False
            raise BackendError(str(err)) from None
        except ApiUnavailable as err:
            raise BackendError(str(err)) from None
        except ApiException as err:
            raise BackendError(f"MiniCluster {name}: {api_message(err)}") from None
        finally:
            # Also on Ctrl-C / SIGTERM: nothing of the cell may outlive run().
            if ours:
                leftover = delete_minicluster(api, ns, name, cluster.teardown)
        if leftover:
            result.provenance["cleanup"] = leftover
        return result
