"""The kubernetes backend: each cell is a Flux Operator MiniCluster on the current context.

Per cell: create the MiniCluster (labelled with owner, sweep and cell), wait for
the indexed Job the operator makes under the same name to turn Complete or
Failed (a watch, re-listed with bounded retries and backoff when the API
fails), read the index-0 pod's log, then delete the MiniCluster and wait, for a
bounded time, for its pods to go.  A Job that fails or times out leaves its pod
phases, container states and recent events in the result for run.json.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import urllib3
import yaml
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from experiments.backends.base import Backend, BackendError, BackendSettings, RunResult
from experiments.backends.k8s_api import (
    CRD_GROUP,
    CRD_PLURAL,
    CRD_VERSION,
    INSTALL_OPERATOR,
    ApiUnavailable,
    KubeApi,
    RetryPolicy,
    connect,
    is_transient,
)
from experiments.backends.k8s_report import (
    CRD_RESOURCES,
    DEPLOYMENT,
    EVENT_LIST,
    JOB_LIST,
    MINICLUSTER,
    NODE_LIST,
    POD_LIST,
    VERSION,
    WATCH_EVENT,
    describe_pods,
    dig,
    event_lines,
    flux_version_from_log,
    image_digest,
    job_outcome,
    rank_zero,
)
from experiments.errors import UserError
from experiments.formats.labels import current_owner
from experiments.redact import redact
from experiments.tool_output import ToolOutputError, read_json

if TYPE_CHECKING:
    from collections.abc import Callable

    from experiments.model.plan import Cell
    from experiments.model.render import Rendered

__all__ = ["KubernetesBackend"]

OPERATOR_NAMESPACE = "operator-system"
OPERATOR_DEPLOYMENT = "operator-controller-manager"


def _api_message(err: ApiException) -> str:
    """The API server's own one-line message from an error body, else the status line."""
    try:
        body = yaml.safe_load(err.body) if err.body else None
    except yaml.YAMLError:
        body = None
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return f"{err.status} {err.reason}"


class _NotOurs(Exception):
    """A MiniCluster of the cell's name exists and kary did not make it: never delete it."""


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
        self.connect_api = connect_api
        self.sleep = sleep
        self._api: KubeApi | None = None
        self._facts: dict[str, Any] = {}
        self._nodes: dict[str, tuple[str | None, str | None]] = {}

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
        self._facts.update(self._operator_facts(api))
        self._refresh_nodes(api)

    def down(self) -> None:
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
            raise BackendError(f"checking for the MiniCluster CRD: {_api_message(err)}") from None
        if CRD_PLURAL not in [r.get("name") for r in (found.get("resources") or [])]:
            raise missing

    def _optional(self, api: KubeApi, doing: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """A call whose failure only costs a provenance field (e.g. no RBAC to list nodes)."""
        try:
            return api.call(doing, fn, *args, **kwargs)
        except (ApiException, ApiUnavailable, UserError):
            return None

    def _operator_facts(self, api: KubeApi) -> dict[str, Any]:
        deployment = self._optional(
            api,
            "read the operator deployment",
            api.apps.read_namespaced_deployment,
            OPERATOR_DEPLOYMENT,
            OPERATOR_NAMESPACE,
            expect=DEPLOYMENT,
        )
        containers = dig(deployment, "spec", "template", "spec", "containers") or []
        if not containers:
            return {}
        manager = next((c for c in containers if c.get("name") == "manager"), containers[-1])
        facts: dict[str, Any] = {"operator_image": manager.get("image")}
        pods = self._optional(
            api,
            "list the operator pods",
            api.core.list_namespaced_pod,
            OPERATOR_NAMESPACE,
            label_selector="control-plane=controller-manager",
            expect=POD_LIST,
        )
        for pod in dig(pods, "items") or []:
            for status in dig(pod, "status", "containerStatuses") or []:
                digest = image_digest(status.get("imageID"))
                if status.get("name") == manager.get("name") and digest:
                    facts["operator_digest"] = digest
        return facts

    def _refresh_nodes(self, api: KubeApi) -> None:
        nodes = self._optional(api, "list nodes", api.core.list_node, expect=NODE_LIST)
        for node in dig(nodes, "items") or []:
            labels = dig(node, "metadata", "labels") or {}
            self._nodes[dig(node, "metadata", "name")] = (
                labels.get("node.kubernetes.io/instance-type"),
                labels.get("topology.kubernetes.io/zone"),
            )

    # -- one cell ----------------------------------------------------------------

    def _require(self) -> KubeApi:
        if self._api is None:
            self.up()
        assert self._api is not None
        return self._api

    def _manifest(self, cell: Cell, rendered: Rendered) -> dict[str, Any]:
        body = yaml.safe_load(rendered.minicluster_yaml)
        if not isinstance(body, dict) or body.get("kind") != "MiniCluster":
            raise BackendError("the rendered minicluster.yaml is not a MiniCluster")
        meta = body.setdefault("metadata", {})
        meta.setdefault("namespace", self.namespace)
        labels = meta.setdefault("labels", {}) or {}
        labels.setdefault("app.kubernetes.io/managed-by", "kary")
        labels.setdefault("kary/owner", current_owner())
        labels.setdefault("kary/cell", cell.id.replace("/", "_"))
        for key, value in self.labels.items():
            labels.setdefault(key, value)
        meta["labels"] = labels
        return body

    def run(self, cell: Cell, rendered: Rendered, timeout: float | None) -> RunResult:
        api = self._require()
        body = self._manifest(cell, rendered)
        name, ns = body["metadata"]["name"], body["metadata"]["namespace"]
        limit = timeout if timeout is not None else self.default_timeout_s
        provenance: dict[str, Any] = {
            "cluster": self.cluster,
            "namespace": ns,
            "minicluster": name,
            **self._facts,
        }
        ours = True  # from the create request on, a MiniCluster of ours may exist
        leftover = None
        try:
            self._create(api, ns, name, body)
            result = self._await_result(api, ns, name, time.monotonic() + limit, limit, provenance)
        except _NotOurs as err:
            ours = False
            raise BackendError(str(err)) from None
        except ApiUnavailable as err:
            raise BackendError(str(err)) from None
        except ApiException as err:
            raise BackendError(f"MiniCluster {name}: {_api_message(err)}") from None
        finally:
            # Also on Ctrl-C / SIGTERM: nothing of the cell may outlive run().
            if ours:
                leftover = self._delete_and_wait(api, ns, name)
        if leftover:
            result.provenance["cleanup"] = leftover
        return result

    def _create(self, api: KubeApi, ns: str, name: str, body: dict[str, Any]) -> None:
        create = api.custom.create_namespaced_custom_object
        for attempt in (1, 2):
            try:
                api.call(
                    "create a MiniCluster", create, CRD_GROUP, CRD_VERSION, ns, CRD_PLURAL, body
                )
                return
            except ApiException as err:
                if err.status == 404:
                    raise UserError(
                        f"MiniClusters cannot be created in namespace {ns} ({_api_message(err)}): "
                        f"is the Flux Operator installed? `{INSTALL_OPERATOR}`"
                    ) from None
                if err.status != 409 or attempt == 2:
                    raise BackendError(
                        f"the API refused MiniCluster {name}: {_api_message(err)}"
                    ) from None
            # A MiniCluster of this name is left from an interrupted run: remove it if kary's.
            try:
                old = api.call(
                    "read a MiniCluster",
                    api.custom.get_namespaced_custom_object,
                    CRD_GROUP,
                    CRD_VERSION,
                    ns,
                    CRD_PLURAL,
                    name,
                    expect=MINICLUSTER,
                )
            except ApiUnavailable as err:
                # Whose it is cannot be told: it is not kary's to delete.
                raise _NotOurs(
                    f"a MiniCluster {name} exists in namespace {ns} and kary cannot tell whose "
                    f"it is ({err}): delete it or choose another --name"
                ) from None
            labels = dig(old, "metadata", "labels") or {}
            if labels.get("app.kubernetes.io/managed-by") != "kary":
                raise _NotOurs(
                    f"a MiniCluster {name} that kary did not create exists in namespace {ns}: "
                    "delete it or choose another --name"
                )
            leftover = self._delete_and_wait(api, ns, name)
            if leftover:
                raise BackendError(f"an earlier MiniCluster {name} would not go: {leftover}")

    def _await_result(
        self,
        api: KubeApi,
        ns: str,
        name: str,
        deadline: float,
        limit: float,
        provenance: dict[str, Any],
    ) -> RunResult:
        outcome = self._wait_for_job(api, ns, name, deadline)
        pods = self._pods(api, ns, name)
        pod0 = rank_zero(pods, name)
        log, log_error = self._log(api, ns, name, pod0)
        provenance.update(self._pod_provenance(api, pods, pod0, log))
        exit_code = self._exit_code(pod0)
        timed_out, error, rc = False, None, exit_code
        if outcome is None:
            timed_out, rc = True, None
            error = f"MiniCluster {name} did not finish within {limit:g} s and was deleted"
        elif outcome[0] == "Failed":
            error = f"Job {name} failed" + (f": {outcome[1]}" if outcome[1] else "")
        elif rc is None:
            rc = 0
        error = error or log_error
        if timed_out or error or rc:
            provenance["diagnostics"] = {
                "pods": describe_pods(pods, name),
                "events": self._events(api, ns, name),
            }
        return RunResult(log, rc, timed_out, error, provenance)

    def _backoff(self, api: KubeApi, failures: int, err: BaseException, doing: str) -> int:
        failures += 1
        if failures > self.policy.retries:
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ApiUnavailable(
                f"the Kubernetes API at {api.host} did not {doing} after "
                f"{self.policy.retries + 1} attempts: {reason}"
            )
        self.sleep(self.policy.delay(failures))
        return failures

    def _wait_for_job(
        self, api: KubeApi, ns: str, name: str, deadline: float
    ) -> tuple[str, str] | None:
        """Watch the Job until Complete/Failed; None when the deadline passes first."""
        selector = f"metadata.name={name}"
        resource_version: str | None = None
        failures = 0
        seen = False
        start_deadline = time.monotonic() + self.job_start_timeout_s
        while True:
            now = time.monotonic()
            if now >= deadline:
                return None
            if not seen and now >= start_deadline:
                raise BackendError(
                    f"the Flux Operator made no Job for MiniCluster {name} within "
                    f"{self.job_start_timeout_s:g} s: is it running? "
                    f"(kubectl -n {OPERATOR_NAMESPACE} get pods)"
                )
            window = max(1, int(min(self.watch_window_s, deadline - now, start_deadline - now + 1)))
            try:
                if resource_version is None:
                    jobs = api.call(
                        f"list Job {name}",
                        api.batch.list_namespaced_job,
                        ns,
                        field_selector=selector,
                        expect=JOB_LIST,
                    )
                    for job in jobs.get("items") or []:
                        seen = True
                        if (outcome := job_outcome(job)) is not None:
                            return outcome
                    resource_version = dig(jobs, "metadata", "resourceVersion")
                # With _preload_content=False the client hands back the raw HTTP response.
                response: Any = api.batch.list_namespaced_job(
                    ns,
                    field_selector=selector,
                    resource_version=resource_version,
                    watch=True,
                    timeout_seconds=window,
                    _request_timeout=window + self.policy.request_timeout_s,
                    _preload_content=False,
                )
                try:
                    # Each line is one event; read here (not by kubernetes.watch, whose
                    # json.loads would raise on an odd line) so an odd line is one message.
                    for line in iter_resp_lines(response):
                        if not line.strip():
                            continue
                        event = read_json(
                            api.asked(f"watch Job {name}"),
                            line,
                            WATCH_EVENT,
                            verb="streamed",
                            quote=False,
                        )
                        job = event.get("object") or {}
                        if event["type"] == "ERROR":
                            if job.get("code") == 410:  # too old a resourceVersion: list again
                                resource_version = None
                                break
                            raise ApiException(
                                status=job.get("code"),
                                reason=f"{job.get('reason')}: {job.get('message')}",
                            )
                        seen = True
                        resource_version = (
                            dig(job, "metadata", "resourceVersion") or resource_version
                        )
                        if event["type"] == "DELETED":
                            return "Failed", "the Job was deleted before it finished"
                        if (outcome := job_outcome(job)) is not None:
                            return outcome
                        if time.monotonic() >= deadline:
                            return None
                finally:
                    response.close()
                    response.release_conn()
                failures = 0  # a watch that ran out its window is healthy
            except ApiException as err:
                if err.status in (401, 403):
                    raise api.refused(err, f"watch Job {name}") from None
                if err.status == 410:  # too old a resourceVersion: list again
                    resource_version = None
                    continue
                if not is_transient(err):
                    raise
                failures = self._backoff(api, failures, err, f"report Job {name}")
                resource_version = None
            except (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError) as err:
                failures = self._backoff(api, failures, err, f"report Job {name}")
                resource_version = None
            except ToolOutputError as err:
                # An odd line (a proxy cut a line short, say): list again, as after a drop.
                failures = self._backoff(api, failures, err, f"report Job {name}")
                resource_version = None

    def _pods(self, api: KubeApi, ns: str, name: str) -> list[dict[str, Any]]:
        pods = api.call(
            "list pods",
            api.core.list_namespaced_pod,
            ns,
            label_selector=f"job-name={name}",
            expect=POD_LIST,
        )
        return list(pods.get("items") or [])

    def _log(self, api: KubeApi, ns: str, name: str, pod0: Any) -> tuple[str, str | None]:
        """Rank 0's log, redacted, and why it could not be read (None when it could)."""
        if pod0 is None:
            return "", f"no rank-0 pod of MiniCluster {name} was found"
        pod_name = dig(pod0, "metadata", "name")
        names = [c.get("name") for c in dig(pod0, "spec", "containers") or []]
        container = name if name in names else (names[0] if names else None)
        try:
            text = api.call_text(
                "read the rank-0 log",
                api.core.read_namespaced_pod_log,
                pod_name,
                ns,
                container=container,
            )
        except (ApiException, ApiUnavailable) as err:
            reason = _api_message(err) if isinstance(err, ApiException) else str(err)
            return "", f"could not read the log of {pod_name}: {reason}"
        return redact(text), None

    @staticmethod
    def _exit_code(pod0: Any) -> int | None:
        """The rank-0 container's exit status, once it has one."""
        for status in dig(pod0, "status", "containerStatuses") or []:
            code = dig(status, "state", "terminated", "exitCode")
            if code is not None:
                return int(code)
        return None

    def _pod_provenance(
        self, api: KubeApi, pods: list[dict[str, Any]], pod0: dict[str, Any] | None, log: str
    ) -> dict[str, Any]:
        facts: dict[str, Any] = {}
        nodes = {n for p in pods if (n := dig(p, "spec", "nodeName"))}
        if nodes - set(self._nodes):
            self._refresh_nodes(api)
        types = sorted({t for n in nodes if (t := self._nodes.get(n, (None, None))[0])})
        zones = sorted({z for n in nodes if (z := self._nodes.get(n, (None, None))[1])})
        if types:
            facts["instance_type"] = ",".join(types)
        if zones:
            facts["zones"] = zones
        facts["nodes_used"] = len(nodes)
        for status in (dig(pod0, "status", "containerStatuses") or [])[:1]:
            facts["image"] = status.get("image")
            if image_digest(status.get("imageID")):
                facts["image_digest"] = image_digest(status.get("imageID"))
        version = flux_version_from_log(log)
        if version:
            facts["flux_version"] = version
        return facts

    def _events(self, api: KubeApi, ns: str, name: str) -> list[str]:
        events = self._optional(
            api, "list events", api.core.list_namespaced_event, ns, expect=EVENT_LIST
        )
        return event_lines(list(dig(events, "items") or []), name)

    def _delete_and_wait(self, api: KubeApi, ns: str, name: str) -> str | None:
        """Delete the MiniCluster (and its Job) and wait for its pods; a note if they stay."""
        notes = []
        for doing, fn, args in (
            (
                "delete a MiniCluster",
                api.custom.delete_namespaced_custom_object,
                (CRD_GROUP, CRD_VERSION, ns, CRD_PLURAL, name),
            ),
            # The operator's Job is owned by the MiniCluster; deleting it too costs nothing.
            ("delete a Job", api.batch.delete_namespaced_job, (name, ns)),
        ):
            try:
                api.call(doing, fn, *args, propagation_policy="Background")
            except ApiException as err:
                if err.status != 404:
                    notes.append(f"could not {doing} {name}: {_api_message(err)}")
            except (ApiUnavailable, UserError) as err:
                notes.append(str(err))
        end = time.monotonic() + self.delete_timeout_s
        while True:
            try:
                pods = self._pods(api, ns, name)
            except (ApiException, ApiUnavailable, UserError) as err:
                reason = _api_message(err) if isinstance(err, ApiException) else str(err)
                notes.append(f"could not list the pods of {name}: {reason}")
                break
            if not pods:
                break
            if time.monotonic() >= end:
                notes.append(
                    f"{len(pods)} pod(s) of MiniCluster {name} still there "
                    f"{self.delete_timeout_s:g} s after it was deleted"
                )
                break
            self.sleep(self.poll_s)
        return "; ".join(notes) or None
