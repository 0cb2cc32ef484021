"""What kary reads back from the cluster: its facts, and per cell the result run.json keeps.

At up(): the Flux Operator's image and digest (`operator_facts`) and each
node's instance type and zone (`NodeCatalog`).  Per finished (or timed-out)
cell: rank 0's log, redacted; its exit status; the pods' nodes, image and
Flux version; and, when the cell did not succeed, every pod's phase and
container states and the recent events about it, so a failure explains itself.
Facts that only fill a provenance field are read with `call_or_none`: a
cluster that will not tell (no RBAC to list nodes) still runs cells.
"""

from __future__ import annotations

from typing import Any

from kubernetes.client.exceptions import ApiException

from experiments.backends.base import RunResult
from experiments.backends.k8s_api import (
    OPERATOR_DEPLOYMENT,
    OPERATOR_NAMESPACE,
    ApiUnavailable,
    KubeApi,
    api_message,
)
from experiments.backends.k8s_minicluster import job_pods
from experiments.backends.k8s_report import (
    DEPLOYMENT,
    EVENT_LIST,
    NODE_LIST,
    POD_LIST,
    describe_pods,
    dig,
    event_lines,
    flux_version_from_log,
    image_digest,
    rank_zero,
)
from experiments.redact import redact

__all__ = ["NodeCatalog", "collect_result", "operator_facts"]

Obj = dict[str, Any]


def operator_facts(api: KubeApi) -> dict[str, Any]:
    """The operator's image and, once its pod has pulled it, the image's digest."""
    deployment = api.call_or_none(
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
    pods = api.call_or_none(
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


class NodeCatalog:
    """Instance type and zone per node name, listed at up() and again for a node not seen."""

    def __init__(self) -> None:
        self._nodes: dict[str, tuple[str | None, str | None]] = {}

    def refresh(self, api: KubeApi) -> None:
        nodes = api.call_or_none("list nodes", api.core.list_node, expect=NODE_LIST)
        for node in dig(nodes, "items") or []:
            labels = dig(node, "metadata", "labels") or {}
            self._nodes[dig(node, "metadata", "name")] = (
                labels.get("node.kubernetes.io/instance-type"),
                labels.get("topology.kubernetes.io/zone"),
            )

    def describe(self, api: KubeApi, pods: list[Obj]) -> dict[str, Any]:
        """instance_type, zones and nodes_used of the nodes the pods ran on."""
        facts: dict[str, Any] = {}
        nodes = {n for p in pods if (n := dig(p, "spec", "nodeName"))}
        if nodes - set(self._nodes):
            self.refresh(api)
        types = sorted({t for n in nodes if (t := self._nodes.get(n, (None, None))[0])})
        zones = sorted({z for n in nodes if (z := self._nodes.get(n, (None, None))[1])})
        if types:
            facts["instance_type"] = ",".join(types)
        if zones:
            facts["zones"] = zones
        facts["nodes_used"] = len(nodes)
        return facts


def collect_result(
    api: KubeApi,
    ns: str,
    name: str,
    outcome: tuple[str, str] | None,
    limit: float,
    provenance: dict[str, Any],
    nodes: NodeCatalog,
) -> RunResult:
    """The cell's RunResult once its Job finished (`outcome`) or ran out of `limit` s (None).

    `provenance` (the cell's and cluster's facts so far) is extended and kept.
    """
    pods = job_pods(api, ns, name)
    pod0 = rank_zero(pods, name)
    log, log_error = _rank_zero_log(api, ns, name, pod0)
    provenance.update(nodes.describe(api, pods))
    provenance.update(_image_facts(pod0, log))
    timed_out, error, rc = False, None, _exit_code(pod0)
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
            "events": _recent_events(api, ns, name),
        }
    return RunResult(log, rc, timed_out, error, provenance)


def _rank_zero_log(api: KubeApi, ns: str, name: str, pod0: Obj | None) -> tuple[str, str | None]:
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
        reason = api_message(err) if isinstance(err, ApiException) else str(err)
        return "", f"could not read the log of {pod_name}: {reason}"
    return redact(text), None


def _exit_code(pod0: Obj | None) -> int | None:
    """The rank-0 container's exit status, once it has one."""
    for status in dig(pod0, "status", "containerStatuses") or []:
        code = dig(status, "state", "terminated", "exitCode")
        if code is not None:
            return int(code)
    return None


def _image_facts(pod0: Obj | None, log: str) -> dict[str, Any]:
    """The image rank 0 ran (and its digest), and the Flux version its log reports."""
    facts: dict[str, Any] = {}
    for status in (dig(pod0, "status", "containerStatuses") or [])[:1]:
        facts["image"] = status.get("image")
        if image_digest(status.get("imageID")):
            facts["image_digest"] = image_digest(status.get("imageID"))
    version = flux_version_from_log(log)
    if version:
        facts["flux_version"] = version
    return facts


def _recent_events(api: KubeApi, ns: str, name: str) -> list[str]:
    events = api.call_or_none("list events", api.core.list_namespaced_event, ns, expect=EVENT_LIST)
    return event_lines(list(dig(events, "items") or []), name)
