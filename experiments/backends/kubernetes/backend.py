"""The kubernetes backend: cells as Flux Operator MiniClusters on the current context.

By default (`layout` nested) one MiniCluster per node count runs every cell of
that node count as a nested Flux instance: nested has that flow. With
`--layout per-cell`, as the seed's sweeps ran, per cell: create the
MiniCluster (a name of its own, labelled with owner, sweep and cell), wait for
the indexed Job the operator makes under the same name to turn Complete or
Failed (a watch, re-listed with bounded retries and backoff when the API
fails) while watching its pods fail fast on what never heals (pod_watch:
Pending past a deadline, image pull back-off, crash loops, brokers that never
join, ranks sharing a node), read the index-0 pod's log, then delete the
MiniCluster and wait, for a bounded time, for its pods to go. A Job that
fails, times out or cannot start leaves its pod phases, container states and
recent events in the result for run.json.

This module is the Backend: connecting, checking the cluster, and one cell's
order of steps, with the guarantee that nothing of a cell outlives run().  The
steps live beside it: api (the client and its retries), minicluster
(manifest, create, delete), job_watch (waiting for the Job), pod_watch
(its pods), collect (log, provenance, diagnostics) and objects
(reading the API's JSON).
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
    CRD_GROUP,
    CRD_PLURAL,
    CRD_VERSION,
    INSTALL_OPERATOR,
    ApiUnavailable,
    KubeApi,
    RetryPolicy,
    api_message,
    connect,
)
from experiments.backends.kubernetes.collect import (
    CellCheck,
    NodeCatalog,
    collect_result,
    operator_facts,
)
from experiments.backends.kubernetes.job_watch import wait_for_job
from experiments.backends.kubernetes.minicluster import (
    NotOurs,
    Teardown,
    build_manifest,
    create_minicluster,
    delete_minicluster,
    reap_leftovers,
    unique_name,
)
from experiments.backends.kubernetes.nested import NestedLayout
from experiments.backends.kubernetes.objects import CRD_RESOURCES, VERSION
from experiments.backends.kubernetes.pod_watch import PodWatch, StartFailure, StartLimits
from experiments.errors import UserError
from experiments.formats.run_record import NESTED, PER_CELL
from experiments.model.layout import effective_layout

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
    ) -> None:
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
        self._nodes = NodeCatalog()
        self._reaped: list[str] = []

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
            start_limits=StartLimits(allow_shared_nodes=bool(options.get("allow_shared_nodes"))),
            layout=effective_layout(settings.layout, "kubernetes"),
        )

    # -- up / down ---------------------------------------------------------------

    def up(self) -> None:
        """Connect, check the API answers and the MiniCluster CRD exists, note cluster facts."""
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
        self._facts.update(operator_facts(api))
        self._nodes.refresh(api)
        try:
            self._reaped = reap_leftovers(api, self.namespace, self._teardown())
        except (ApiException, ApiUnavailable) as err:
            reason = api_message(err) if isinstance(err, ApiException) else str(err)
            raise BackendError(f"listing leftover MiniClusters: {reason}") from None

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

    def _nested_layout(self, api: KubeApi) -> NestedLayout:
        if self._nested is None:
            self._nested = NestedLayout(
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
                log_every_s=self.log_every_s,
                grace_s=self.nested_grace_s,
                default_timeout_s=self.default_timeout_s,
                sleep=self.sleep,
            )
        self._nested.queued = self._queued
        return self._nested

    # -- one cell ----------------------------------------------------------------

    def _require(self) -> KubeApi:
        if self._api is None:
            self.up()
        assert self._api is not None
        return self._api

    def _manifest(self, cell: Cell, rendered: Rendered) -> dict[str, Any]:
        body = build_manifest(rendered.minicluster_yaml, cell.id, self.namespace, self.labels)
        body["metadata"]["name"] = self.name_cell(body["metadata"]["name"])
        return body

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
        body = self._manifest(cell, rendered)
        name, ns = body["metadata"]["name"], body["metadata"]["namespace"]
        limit = timeout if timeout is not None else self.default_timeout_s
        provenance = self._provenance()
        provenance.update({"namespace": ns, "minicluster": name})
        ours = True  # from the create request on, a MiniCluster of ours may exist
        leftover = None
        try:
            create_minicluster(api, ns, name, body, self._teardown())
            pods = PodWatch(api, ns, name, int(body["spec"]["size"]), self.start_limits)
            outcome: tuple[str, str] | StartFailure | None
            try:
                outcome = wait_for_job(
                    api,
                    ns,
                    name,
                    time.monotonic() + limit,
                    start_timeout_s=self.job_start_timeout_s,
                    window_s=self.watch_window_s,
                    policy=self.policy,
                    sleep=self.sleep,
                    check=pods.check,
                    check_every_s=self.start_limits.check_every_s,
                )
            except StartFailure as failure:
                outcome = failure
            check = CellCheck(cell.id, self.start_limits.allow_shared_nodes)
            result = collect_result(api, ns, name, outcome, limit, provenance, self._nodes, check)
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
                leftover = delete_minicluster(api, ns, name, self._teardown())
        if leftover:
            result.provenance["cleanup"] = leftover
        return result
