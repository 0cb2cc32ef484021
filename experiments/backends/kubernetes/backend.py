"""The kubernetes backend: cells as Flux Operator MiniClusters on the current context.

This module is the Backend: connecting (api), checking that the API answers
and the MiniCluster CRD exists, noting the cluster's facts (collect), removing
what an interrupted run of kary left (minicluster.reap_leftovers), and handing
each cell to its layout with the guarantee that nothing of a cell outlives
`run()`:

- nested (the default; nested.py): one MiniCluster per node count runs every
  cell of that node count as a nested Flux instance (split where its log would
  pass half the kubelet's rotation size);
- per-cell (`--layout per-cell`, as flux-distribute's sweeps ran; per_cell.py): a
  MiniCluster of its own per cell.

Both create and delete MiniClusters (minicluster), wait for the operator's Job
(job_watch) while watching its pods fail fast on what never heals (pod_watch),
and read back the result (collect, over the API's objects: objects).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from kubernetes.client.exceptions import ApiException

from experiments.backends.base import (
    Backend,
    BackendError,
    BackendSettings,
    QueuedCell,
    RunResult,
    by_node_count,
)
from experiments.backends.kubernetes.api import (
    ApiUnavailable,
    KubeApi,
    RetryPolicy,
    api_message,
    connect,
)
from experiments.backends.kubernetes.collect import check_operator_pinned, operator_facts
from experiments.backends.kubernetes.context import ClusterContext
from experiments.backends.kubernetes.feed import reap_feeds
from experiments.backends.kubernetes.minicluster import (
    NotOurs,
    Teardown,
    reap_leftovers,
    unique_name,
)
from experiments.backends.kubernetes.nested import NestedLayout
from experiments.backends.kubernetes.nodes import NodeCatalog
from experiments.backends.kubernetes.objects import CRD_RESOURCES, VERSION
from experiments.backends.kubernetes.per_cell import PerCellLayout
from experiments.backends.kubernetes.permissions import check_permissions
from experiments.backends.kubernetes.pod_watch import StartLimits
from experiments.backends.kubernetes.preemption import await_workers
from experiments.errors import UserError
from experiments.formats.run_record import NESTED, PER_CELL
from experiments.model.disk import EVICTION_FREE_PERCENT, eviction_threshold
from experiments.model.layout import effective_layout
from experiments.model.operator import CRD_GROUP, CRD_PLURAL, CRD_VERSION, INSTALL_OPERATOR

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from experiments.model.plan import Cell
    from experiments.model.render import Rendered

__all__ = ["KubernetesBackend"]


class KubernetesBackend(Backend):
    """Runs each cell as a MiniCluster through the kubernetes client (see the module doc)."""

    name = "kubernetes"
    uses_image = True

    def __init__(
        self,
        namespace: str = "default",
        context: str | None = None,
        cluster: str | None = None,
        policy: RetryPolicy | None = None,
        job_start_timeout_s: float = 600.0,
        default_timeout_s: float = 6 * 3600.0,
        delete_timeout_s: float = 300.0,
        poll_s: float = 2.0,
        watch_window_s: float = 60.0,
        labels: dict[str, str] | None = None,
        require_context: str | None = None,
        start_limits: StartLimits | None = None,
        name_cell: Callable[[str], str] = unique_name,
        layout: str = PER_CELL,
        log_every_s: float = 10.0,
        nested_grace_s: float = 120.0,
        connect_api: Callable[[str | None, RetryPolicy], KubeApi] = connect,
        sleep: Callable[[float], None] = time.sleep,
        workers: dict[str, str] | None = None,
        desired_nodes: int | None = None,
        node_poll_s: float = 10.0,
        eviction_percent: int = EVICTION_FREE_PERCENT,
    ) -> None:
        self.eviction_percent = eviction_percent
        self.namespace = namespace
        self.context = context
        self.cluster = cluster
        self.policy = policy or RetryPolicy()
        self.job_start_timeout_s = job_start_timeout_s
        self.default_timeout_s = default_timeout_s
        self.delete_timeout_s = delete_timeout_s
        self.poll_s = poll_s
        self.watch_window_s = watch_window_s
        self.labels = dict(labels or {})
        # With --cluster FILE: the command that points kubectl at that cluster.
        self.require_context = require_context
        self.start_limits = start_limits or StartLimits()
        # --name -> this cell's MiniCluster name (a fresh suffix per cell).
        self.name_cell = name_cell
        # nested: a MiniCluster per node count, each cell a nested instance (nested).
        self.layout = layout
        self.log_every_s = log_every_s
        self.nested_grace_s = nested_grace_s
        self._queued: list[QueuedCell] = []
        self._nested: NestedLayout | None = None
        self.connect_api = connect_api
        self.sleep = sleep
        self._api: KubeApi | None = None
        self._facts: dict[str, Any] = {}
        # The worker nodes (the cluster file's node selector; none: every node), and
        # how many the node group should have (the file's count): after a preemption,
        # kary waits for that many Ready (await_replacements).
        self._nodes = NodeCatalog(workers)
        self.desired_nodes = desired_nodes
        self.node_poll_s = node_poll_s
        self._ready_at_up: int | None = None
        self._reaped: list[str] = []
        # stay_up(): the nested layout holds its MiniCluster for the cells fed later.
        self.held = False

    @classmethod
    def from_settings(cls, settings: BackendSettings) -> Backend:
        options = dict(settings.options)
        labels = {}
        if options.get("sweep_id"):
            labels["kary/sweep"] = str(options["sweep_id"])
        spec = settings.cluster
        switch = None
        if spec is not None:
            switch = (
                f"eksctl utils write-kubeconfig --cluster {spec.name} --region {spec.region}"
                if spec.provider == "eks"
                else f"gcloud container clusters get-credentials {spec.name} --zone {spec.zone}"
            )
        return cls(
            namespace=settings.render.namespace if settings.render else "default",
            context=options.get("kube_context"),
            cluster=spec.name if spec else None,
            labels=labels,
            require_context=switch,
            start_limits=StartLimits(
                allow_shared_nodes=bool(options.get("allow_shared_nodes")),
                **(
                    {"pending_s": float(options["pending_timeout_s"])}
                    if options.get("pending_timeout_s") is not None
                    else {}
                ),
            ),
            layout=effective_layout(settings.layout, "kubernetes"),
            workers=dict(spec.node_selector) if spec else None,
            desired_nodes=spec.nodes if spec else None,
            eviction_percent=eviction_threshold(spec.provider if spec else None).percent,
        )

    # -- up / down ---------------------------------------------------------------

    def up(self) -> None:
        """Connect, check the API answers, the MiniCluster CRD exists, kary holds the
        permissions it uses (permissions.py) and the operator runs a build pinned by
        digest (collect.check_operator_pinned), note cluster facts."""
        if self._api is not None:
            return
        # A dead API should fail in seconds, not after a long backoff.
        quick = RetryPolicy(
            retries=min(self.policy.retries, 2),
            backoff_s=self.policy.backoff_s,
            request_timeout_s=min(self.policy.request_timeout_s, 15.0),
        )
        api = self.connect_api(self.context, quick)
        if self.require_context and self.cluster and self.cluster not in (api.context or ""):
            # EKS contexts end in cluster/NAME or NAME.REGION.eksctl.io, GKE's in _NAME.
            api.close()
            raise UserError(
                f"the kubeconfig context {api.context!r} is not cluster {self.cluster} from "
                f"--cluster: point kubectl at it with `{self.require_context}`"
            )
        try:
            version = api.call("answer", api.version.get_code, expect=VERSION)
            self._check_crd(api)
            # Before anything is made: a missing verb would fail a cell late, or
            # (nodes) silently turn off preemption detection.
            check_permissions(api, self.namespace, feed=self.held)
            operator = operator_facts(api)
            check_operator_pinned(operator.get("operator_image"))
        except ApiUnavailable as err:
            api.close()
            raise UserError(f"cannot reach the Kubernetes cluster: {err}") from None
        except BaseException:
            api.close()
            raise
        api.policy = self.policy
        self._api = api
        self._facts = {"kubernetes_version": version.get("gitVersion")}
        if self.cluster is None and api.context:
            self.cluster = api.context
        self._facts.update(operator)
        if self._nodes.refresh(api):
            self._ready_at_up = self._nodes.ready_workers()
        try:
            self._reaped = reap_leftovers(api, self.namespace, self._teardown())
            if self.held:
                self._reaped += reap_feeds(api, self.namespace)
        except (ApiException, ApiUnavailable) as err:
            reason = api_message(err) if isinstance(err, ApiException) else str(err)
            raise BackendError(f"listing leftover MiniClusters: {reason}") from None

    def await_replacements(self, limit_s: float) -> str | None:
        """Wait (at most `limit_s`) until the worker nodes are back at the node group's
        count: the cluster file's, or as many as were Ready at up() when that is fewer
        (or no file says); None when nothing says how many."""
        counts = [n for n in (self.desired_nodes, self._ready_at_up) if n]
        if self._api is None or not counts:
            return None
        # Some 20 looks within the bound, at most node_poll_s apart.
        poll_s = min(self.node_poll_s, max(limit_s / 20, 0.05))
        return await_workers(self._api, self._nodes, min(counts), limit_s, poll_s, self.sleep)

    def down(self) -> None:
        nested, self._nested = self._nested, None
        try:
            if nested is not None and self._api is not None:
                leftover = nested.end()
                if leftover:
                    raise BackendError(f"the nested layout's MiniCluster would not go: {leftover}")
        finally:
            if self._api is not None:
                self._api.close()
                self._api = None

    def _check_crd(self, api: KubeApi) -> None:
        missing = UserError(
            f"the Flux Operator's MiniCluster CRD ({CRD_PLURAL}.{CRD_GROUP}/{CRD_VERSION}) is not "
            f"installed on the cluster at {api.host}: install the operator with "
            f"`{INSTALL_OPERATOR}`"
        )
        try:
            found = api.call(
                f"list {CRD_GROUP}/{CRD_VERSION}",
                api.custom.get_api_resources,
                CRD_GROUP,
                CRD_VERSION,
                expect=CRD_RESOURCES,
            )
        except ApiException as err:
            if err.status == 404:
                raise missing from None
            raise BackendError(f"checking for the MiniCluster CRD: {api_message(err)}") from None
        if CRD_PLURAL not in [r.get("name") for r in (found.get("resources") or [])]:
            raise missing

    # -- the nested layout ---------------------------------------------------------

    def run_order(self, cells: Sequence[Cell]) -> list[Cell]:
        return by_node_count(cells) if self.layout == NESTED else list(cells)

    def queue(self, cells: Sequence[QueuedCell]) -> None:
        self._queued = list(cells)

    def stay_up(self) -> None:
        self.held = True

    def _cluster(self, api: KubeApi) -> ClusterContext:
        return ClusterContext(
            api,
            self.namespace,
            self.labels,
            self.name_cell,
            self._teardown(),
            self.policy,
            self.start_limits,
            self._nodes,
            self.job_start_timeout_s,
            self.watch_window_s,
            default_timeout_s=self.default_timeout_s,
            sleep=self.sleep,
            eviction_percent=self.eviction_percent,
        )

    def _nested_layout(self, api: KubeApi) -> NestedLayout:
        if self._nested is None:
            self._nested = NestedLayout(
                self._cluster(api),
                log_every_s=self.log_every_s,
                grace_s=self.nested_grace_s,
                held=self.held,
            )
        self._nested.queued = self._queued
        return self._nested

    # -- one cell ----------------------------------------------------------------

    def _require(self) -> KubeApi:
        if self._api is None:
            self.up()
        assert self._api is not None
        return self._api

    def _teardown(self) -> Teardown:
        return Teardown(self.delete_timeout_s, self.poll_s, self.sleep)

    def _provenance(self) -> dict[str, Any]:
        provenance: dict[str, Any] = {
            "cluster": self.cluster,
            "namespace": self.namespace,
            "sweep": self.labels.get("kary/sweep"),
            "layout": self.layout,
            **self._facts,
        }
        if self._reaped:  # said once, with the first cell after up()
            provenance["reaped_leftovers"], self._reaped = self._reaped, []
        return provenance

    def run(self, cell: Cell, rendered: Rendered, timeout: float | None) -> RunResult:
        api = self._require()
        if self.layout == NESTED:
            try:
                return self._nested_layout(api).run(cell, rendered, timeout, self._provenance())
            except NotOurs as err:
                raise BackendError(str(err)) from None
            except ApiUnavailable as err:
                raise BackendError(str(err)) from None
            except ApiException as err:
                raise BackendError(f"nested layout: {api_message(err)}") from None
        return PerCellLayout(self._cluster(api)).run(cell, rendered, timeout, self._provenance())
