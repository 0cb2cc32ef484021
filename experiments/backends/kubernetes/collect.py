"""What kary reads back from the cluster: its facts, and per cell the result run.json keeps.

At up(): the Flux Operator's image and digest (`operator_facts`) and each
node's instance type, zone and capacity type (nodes.NodeCatalog).  Per finished
(or timed-out, or unstartable, or preempted) cell: rank 0's log, redacted; the
entrypoint's exit status, read from the log (the operator's launcher container
always exits 0); each rank's node (name, capacity type, instance type and id,
zone) and the set of worker nodes then, the image and Flux version; checks that
the log is this cell's and that no two ranks shared a node; and, when the cell
did not succeed, every pod's phase and container states and the recent events
about it, so a failure explains itself; a cell that did not succeed is looked at
once more for a rank that lost its node to preemption (preemption.py).
Facts that only fill a provenance field are read with `call_or_none`: a
cluster that will not tell (no RBAC to list nodes) still runs cells.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException

from experiments.backends.base import RunResult
from experiments.backends.kubernetes.api import (
    ApiUnavailable,
    KubeApi,
    api_message,
)
from experiments.backends.kubernetes.minicluster import job_pods
from experiments.backends.kubernetes.nodes import NodeCatalog, cell_capacity
from experiments.backends.kubernetes.objects import (
    DEPLOYMENT,
    EVENT_LIST,
    POD_LIST,
    describe_pods,
    dig,
    event_lines,
    flux_version_from_log,
    image_digest,
    log_container,
    rank_zero,
    tools_from_log,
)
from experiments.backends.kubernetes.pod_watch import (
    PodWatch,
    StartFailure,
    shared_nodes,
    shared_nodes_problem,
)
from experiments.backends.kubernetes.preemption import Preempted, preempted_result
from experiments.formats.kary_line import meta_record
from experiments.model.operator import (
    OPERATOR_COMMIT,
    OPERATOR_CONTAINER,
    OPERATOR_DEPLOYMENT,
    OPERATOR_NAMESPACE,
)
from experiments.model.pins import (
    OPERATOR_PIN_KEY,
    OPERATOR_SOURCE_UNKNOWN,
    is_pinned,
    require_pinned,
)
from experiments.redact import redact

__all__ = [
    "CellCheck",
    "cell_problems",
    "check_operator_pinned",
    "collect_result",
    "diagnostics",
    "operator_facts",
    "pod_facts",
    "rank_zero_log",
    "rc_from_log",
]

Obj = dict[str, Any]


def check_operator_pinned(image: str | None) -> None:
    """A UserError when the operator's controller runs a tag (the manifest's `:latest`,
    pulled Always: any restart may run another build) rather than a digest."""
    if image is None or is_pinned(image):
        return
    repo = image.rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image
    require_pinned(
        image,
        "the Flux Operator's controller image",
        f"pin it with `kubectl -n {OPERATOR_NAMESPACE} set image deployment/{OPERATOR_DEPLOYMENT} "
        f"{OPERATOR_CONTAINER}={repo}@sha256:DIGEST` (or name it in the cluster file as "
        f"metadata.annotations {OPERATOR_PIN_KEY} before `kary cluster up`)",
    )


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
    manager = next((c for c in containers if c.get("name") == OPERATOR_CONTAINER), containers[-1])
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
                facts["operator_source"] = OPERATOR_SOURCE_UNKNOWN.format(
                    commit=OPERATOR_COMMIT[:8]
                )
    return facts


@dataclass(frozen=True)
class CellCheck:
    """What the collected cell must match: its id, and whether ranks may share a node."""

    cell_id: str
    allow_shared_nodes: bool = False


def collect_result(
    api: KubeApi,
    ns: str,
    name: str,
    outcome: tuple[str, str] | StartFailure | Preempted | None,
    limit: float,
    provenance: dict[str, Any],
    watch: PodWatch,
    check: CellCheck,
) -> RunResult:
    """The cell's RunResult once its Job finished (`outcome`), its pods could not start it
    (a StartFailure), a rank lost its node (Preempted), or it ran out of `limit` s (None).

    `provenance` (the cell's and cluster's facts so far) is extended and kept.  The
    exit status is the entrypoint's as its log's KARY done line tells it: under the
    operator, rank 0's container exits 0 whatever the entrypoint did.  A cell that
    did not succeed is looked at once more for a preemption (`watch`'s ranks and
    nodes): a broker on a node that went fails the cell, or hangs it until its limit.
    """
    pods = job_pods(api, ns, name)
    pod0 = rank_zero(pods, name)
    log, log_error = rank_zero_log(api, ns, name, pod0)
    nodes = watch.nodes if watch.nodes is not None else NodeCatalog()
    provenance.update(pod_facts(api, pods, pod0, log, nodes, name, watch.loss.seen))
    container_rc = provenance.get("container_exit_code")
    timed_out, rc, start_failure = False, rc_from_log(log), None
    if isinstance(outcome, Preempted) and rc == 0:
        outcome = ("Complete", "")  # the benchmark had finished before its node went
    errors: list[str] = []
    if isinstance(outcome, Preempted):
        rc = None
        errors.append(str(outcome))
    elif isinstance(outcome, StartFailure):
        rc, start_failure = None, outcome.kind
        provenance["start_failure"] = outcome.kind
        errors.append(str(outcome))
    elif outcome is None:
        timed_out, rc = True, None
        errors.append(f"MiniCluster {name} did not finish within {limit:g} s and was deleted")
    elif outcome[0] == "Failed":
        errors.append(f"Job {name} failed" + (f": {outcome[1]}" if outcome[1] else ""))
    if container_rc:
        errors.append(f"rank 0's container exited with {container_rc}")
    if log_error:
        errors.append(log_error)
    if start_failure is None and not isinstance(outcome, Preempted):
        # else the cell never ran, or lost a node: its own reason says enough
        errors += cell_problems(log, pods, name, check, provenance)
    error = "; ".join(errors) or None
    if timed_out or error or rc:
        provenance["diagnostics"] = diagnostics(api, ns, name, pods)
    result = RunResult(log, rc, timed_out, error, provenance, start_failure=start_failure)
    lost = outcome if isinstance(outcome, Preempted) else None
    if lost is None and (timed_out or error or rc):
        lost = watch.loss.find(pods, nodes)  # the nodes as pod_facts just listed them
    return preempted_result(result, lost) if lost is not None else result


def rc_from_log(log: str) -> int | None:
    """The entrypoint's exit status from its KARY done line: 0 when it counted no failed
    step and no failed precondition, 1 otherwise; None without a done line."""
    done = meta_record(log, "done")
    if done is None:
        return None
    clean = done.get("failed_steps") == 0 and done.get("failed_preconditions") in (0, None)
    return 0 if clean else 1


def cell_problems(
    log: str, pods: list[Obj], name: str, check: CellCheck, provenance: dict[str, Any]
) -> list[str]:
    """The log is another cell's; ranks shared a node (unless allowed, then recorded)."""
    problems = []
    meta = meta_record(log, "cell")
    if meta is not None and meta.get("cell") != check.cell_id:
        problems.append(
            f"rank 0's log is of cell {meta.get('cell')}, not {check.cell_id}: "
            f"MiniCluster {name} ran another cell's script"
        )
    shared = shared_nodes(pods, name)
    if shared and check.allow_shared_nodes:
        provenance["shared_nodes_allowed"] = True
        provenance["shared_nodes"] = shared
    elif shared:
        problems.append(shared_nodes_problem(shared, name))
    return problems


def rank_zero_log(api: KubeApi, ns: str, name: str, pod0: Obj | None) -> tuple[str, str | None]:
    """Rank 0's log, redacted, and why it could not be read (None when it could)."""
    if pod0 is None:
        return "", f"no rank-0 pod of MiniCluster {name} was found"
    pod_name = dig(pod0, "metadata", "name")
    container = log_container(pod0, name)
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


def pod_facts(
    api: KubeApi,
    pods: list[Obj],
    pod0: Obj | None,
    log: str,
    nodes: NodeCatalog,
    name: str,
    seen: dict[int, str] | None = None,
) -> dict[str, Any]:
    """For run.json: the nodes the pods ran on (each rank's in `rank_nodes`, with their
    capacity type and instance, and the cell's `capacity`: theirs, or `mixed`), the
    worker nodes there were then (`node_set`), rank 0's image and Flux version, and
    rank 0's container exit status once it has one (`container_exit_code`).
    `seen`: each rank's node as first seen (a preempted rank's pod may be gone)."""
    nodes.refresh(api)
    facts = nodes.describe(api, pods)
    ranks = nodes.rank_nodes(pods, name, seen or {})
    if ranks:
        facts["rank_nodes"] = ranks
        capacity = cell_capacity([r["capacity"] for r in ranks])
        if capacity:
            facts["capacity"] = capacity
    node_set = nodes.node_set()
    if node_set is not None:
        facts["node_set"] = node_set
    facts.update(_image_facts(pod0, log))
    container_rc = _exit_code(pod0)
    if container_rc is not None:
        facts["container_exit_code"] = container_rc
    return facts


def diagnostics(api: KubeApi, ns: str, name: str, pods: list[Obj]) -> dict[str, Any]:
    """Every pod's phase and container states, and the recent events about them."""
    return {"pods": describe_pods(pods, name), "events": _recent_events(api, ns, name)}


def _exit_code(pod0: Obj | None) -> int | None:
    """The rank-0 container's exit status, once it has one."""
    for status in dig(pod0, "status", "containerStatuses") or []:
        code = dig(status, "state", "terminated", "exitCode")
        if code is not None:
            return int(code)
    return None


def _image_facts(pod0: Obj | None, log: str) -> dict[str, Any]:
    """The image rank 0 ran (and its digest), and the Flux version, scheduler and
    tools its log reports."""
    facts: dict[str, Any] = {}
    for status in (dig(pod0, "status", "containerStatuses") or [])[:1]:
        facts["image"] = status.get("image")
        if image_digest(status.get("imageID")):
            facts["image_digest"] = image_digest(status.get("imageID"))
    version = flux_version_from_log(log)
    if version:
        facts["flux_version"] = version
    facts.update(tools_from_log(log))
    return facts


def _recent_events(api: KubeApi, ns: str, name: str) -> list[str]:
    events = api.call_or_none("list events", api.core.list_namespaced_event, ns, expect=EVENT_LIST)
    return event_lines(list(dig(events, "items") or []), name)
