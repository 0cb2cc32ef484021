"""Read Kubernetes objects (plain JSON) into the facts run.json keeps.

Outcome of a Job, which pod is rank 0, what each pod and container was doing,
the recent events about a MiniCluster, image digests and Flux's version.
"""

from __future__ import annotations

import re
from typing import Any

from experiments.formats.kary_line import meta_record

__all__ = [
    "CONFIGMAP_LIST",
    "CRD_RESOURCES",
    "DEPLOYMENT",
    "EVENT_LIST",
    "JOB_LIST",
    "MINICLUSTER",
    "MINICLUSTER_LIST",
    "NODE_LIST",
    "POD_LIST",
    "VERSION",
    "WATCH_EVENT",
    "container_state",
    "describe_pods",
    "dig",
    "event_lines",
    "eviction",
    "flux_version_from_log",
    "image_digest",
    "job_outcome",
    "log_container",
    "pod_index",
    "rank_zero",
    "tools_from_log",
]

Obj = dict[str, Any]

_INDEX_KEYS = ("batch.kubernetes.io/job-completion-index", "job-index")
_FLUX_VERSION = re.compile(r"(?:flux-core|commands:)\s+v?(\d+\.\d+\.\d+\S*)")
_EVENTS_KEPT = 20


# The fields kary reads of each answer, as experiments.tool_output shapes: all optional
# (servers leave fields out), but where present of the type the code below expects.
_CONTAINER_STATUS = {
    "name?": str,
    "image?": str,
    "imageID?": str,
    "state?": {"terminated?": {"exitCode?": int}, "waiting?": dict, "running?": dict},
}
_POD = {
    "metadata?": {"name?": str, "labels?": dict, "annotations?": dict},
    "spec?": {"nodeName?": str, "containers?": [{"name?": str}]},
    "status?": {"phase?": str, "containerStatuses?": [_CONTAINER_STATUS]},
}
_JOB = {
    "metadata?": {"resourceVersion?": str},
    "status?": {"conditions?": [{"type?": str, "status?": str}]},
}
_NODE = {
    "metadata?": {"name?": str, "labels?": dict},
    "spec?": {"providerID?": str, "unschedulable?": bool, "taints?": [dict]},
    "status?": {"conditions?": [{"type?": str, "status?": str}]},
}
_EVENT = {"involvedObject?": dict, "count?": int}


def _list_of(item: Any) -> dict[str, Any]:
    return {"items?": [item], "metadata?": {"resourceVersion?": str}}


VERSION = {"gitVersion?": str}
CRD_RESOURCES = {"resources?": [{"name": str}]}
DEPLOYMENT = {"spec?": {"template?": {"spec?": {"containers?": [{"name?": str, "image?": str}]}}}}
MINICLUSTER = {"metadata?": {"labels?": dict}}
CONFIGMAP_LIST = _list_of({"metadata?": {"name?": str}})
MINICLUSTER_LIST = _list_of({"metadata?": {"name?": str, "labels?": dict}})
JOB_LIST = _list_of(_JOB)
POD_LIST = _list_of(_POD)
NODE_LIST = _list_of(_NODE)
EVENT_LIST = _list_of(_EVENT)
# One line of a watch: ERROR events carry a Status ({"code": 410, ...}) as their object.
WATCH_EVENT = {"type": str, "object?": {**_JOB, "code?": int, "reason?": str, "message?": str}}


def dig(obj: Any, *path: str) -> Any:
    """obj[path[0]][path[1]]..., or None where a step is missing."""
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def job_outcome(job: Obj) -> tuple[str, str] | None:
    """("Complete" | "Failed", reason) once the Job has finished, else None."""
    for condition in dig(job, "status", "conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            reason = ": ".join(
                str(x) for x in (condition.get("reason"), condition.get("message")) if x
            )
            return condition["type"], reason
    return None


def pod_index(pod: Obj, name: str) -> int | None:
    """The pod's completion index (its Flux rank): label, annotation, or NAME-INDEX-RAND."""
    for where in ("labels", "annotations"):
        source = dig(pod, "metadata", where) or {}
        for key in _INDEX_KEYS:
            if str(source.get(key, "")).isdigit():
                return int(source[key])
    pod_name = dig(pod, "metadata", "name") or ""
    match = re.fullmatch(rf"{re.escape(name)}-(\d+)-[a-z0-9]+", pod_name)
    return int(match.group(1)) if match else None


def rank_zero(pods: list[Obj], name: str) -> Obj | None:
    """The index-0 pod: the newest if a retry or a replacement made several (a list is
    ordered by name, and a replacement's random suffix may sort before the old one's);
    of pods created in the same second, the last listed."""
    zeros = [p for p in pods if pod_index(p, name) == 0]
    if not zeros:
        return None
    return max(
        reversed(zeros),
        key=lambda pod: str(dig(pod, "metadata", "creationTimestamp") or ""),
    )


def log_container(pod: Obj, name: str) -> str | None:
    """The container whose log is rank 0's output: the one the operator names like the
    MiniCluster, else the first."""
    names = [c.get("name") for c in dig(pod, "spec", "containers") or []]
    return name if name in names else (names[0] if names else None)


def container_state(status: Obj) -> str:
    """`terminated (exit 1, Error)`, `waiting (ImagePullBackOff: ...)`, `running`."""
    state = status.get("state") or {}
    if "terminated" in state and state["terminated"] is not None:
        t = state["terminated"]
        detail = ", ".join(str(x) for x in (t.get("reason"), t.get("message")) if x)
        return f"terminated (exit {t.get('exitCode')}{', ' + detail if detail else ''})"
    if "waiting" in state and state["waiting"] is not None:
        w = state["waiting"]
        detail = ": ".join(str(x) for x in (w.get("reason"), w.get("message")) if x)
        return f"waiting ({detail or 'no reason given'})"
    if "running" in state and state["running"] is not None:
        return "running"
    return "unknown"


def eviction(pods: list[Obj], name: str) -> str | None:
    """`rank 2's pod P was evicted by its node's kubelet: The node was low on ...` for the
    first pod of MiniCluster `name` the kubelet evicted, else None.  An evicted pod is
    Failed with reason Evicted and the kubelet's message (Kubernetes docs, "Node-pressure
    Eviction"): its node ran low on disk or memory, mostly of the cell's own doing."""
    for pod in pods:
        if dig(pod, "status", "reason") != "Evicted":
            continue
        message = str(dig(pod, "status", "message") or "").strip() or "no message"
        return (
            f"rank {pod_index(pod, name)}'s pod {dig(pod, 'metadata', 'name')} was evicted "
            f"by its node's kubelet: {message}"
        )
    return None


def describe_pods(pods: list[Obj], name: str) -> list[Obj]:
    """Phase, node and container states of each pod, by rank."""

    def order(pod: Obj) -> tuple[int, str]:
        index = pod_index(pod, name)
        return (index if index is not None else -1, dig(pod, "metadata", "name") or "")

    return [
        {
            "pod": dig(pod, "metadata", "name"),
            "rank": pod_index(pod, name),
            "phase": dig(pod, "status", "phase"),
            "node": dig(pod, "spec", "nodeName"),
            "containers": {
                str(c.get("name")): container_state(c)
                for c in (dig(pod, "status", "containerStatuses") or [])
            },
        }
        for pod in sorted(pods, key=order)
    ]


def event_lines(events: list[Obj], name: str) -> list[str]:
    """The most recent events about the MiniCluster, its Job or its pods, oldest first."""

    def about_us(event: Obj) -> bool:
        involved = str(dig(event, "involvedObject", "name") or "")
        return involved == name or involved.startswith(f"{name}-")

    def when(event: Obj) -> str:
        return str(
            event.get("lastTimestamp")
            or event.get("eventTime")
            or event.get("firstTimestamp")
            or ""
        )

    ours = sorted((e for e in events if about_us(e)), key=when)
    lines = []
    for event in ours[-_EVENTS_KEPT:]:
        involved = event.get("involvedObject") or {}
        count = event.get("count") or 0
        lines.append(
            f"{when(event)} {event.get('type')} {event.get('reason')} "
            f"{involved.get('kind')}/{involved.get('name')}: {(event.get('message') or '').strip()}"
            + (f" (x{count})" if count > 1 else "")
        )
    return lines


def image_digest(image_id: str | None) -> str | None:
    """`repo@sha256:...` or `docker-pullable://repo@sha256:...` -> `sha256:...`."""
    if not image_id or "@" not in image_id:
        return None
    return image_id.rsplit("@", 1)[1]


def flux_version_from_log(log: str) -> str | None:
    """Flux's version as the entrypoint reports it (its KARY meta line), else `flux version`."""
    meta = meta_record(log, "cell")
    if meta is not None and meta.get("flux_version"):
        return str(meta["flux_version"])
    found = _FLUX_VERSION.search(log)
    return found.group(1) if found else None


def tools_from_log(log: str) -> dict[str, Any]:
    """For run.json, from the entrypoint's `KARY {"meta": "tools"}` line: `scheduler`
    (the instance's loaded sched-* modules, e.g. `sched-simple`) and `tools` (each
    timed tool's version line: the hasher, the direct strategy's client)."""
    meta = meta_record(log, "tools")
    if meta is None:
        return {}
    facts: dict[str, Any] = {}
    if meta.get("scheduler"):
        facts["scheduler"] = str(meta["scheduler"])
    tools = {
        str(key): str(value)
        for key, value in meta.items()
        if key not in ("meta", "scheduler") and value
    }
    if tools:
        facts["tools"] = tools
    return facts
