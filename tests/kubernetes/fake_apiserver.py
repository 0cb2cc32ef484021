"""A fake Kubernetes API server on 127.0.0.1 serving only what the kubernetes backend uses.

It plays the Flux Operator too: creating a MiniCluster makes an indexed Job of
the same name and one pod per rank (`NAME-INDEX-RAND`), each on a node of its
own unless `Scenario.pack` packs them; after `Scenario.run_s` the Job turns
Complete or Failed (or never ends).  As under the real operator, rank 0's
container exits 0 whatever the entrypoint did (its wait script touches a file
after `flux start`): the log says how the benchmark went, and `{cell}` in
`Scenario.log` becomes the cell id of the entrypoint the MiniCluster carries.
Pods can be stuck the ways real ones are: Pending unscheduled, a container
waiting (ImagePullBackOff, CrashLoopBackOff), brokers that never join (a log
without KARY lines and a Job that never ends).  Nodes are state too: each
MiniCluster's pods go to the nodes listed when it was made, and `preempt`
deletes the node of one of the next MiniCluster's ranks a while after it is made,
as a reclaimed Spot VM goes: the Node object is gone, and the pod, whose kubelet
went with it, still shows Running on that node (the API keeps it until pod GC
marks it `DisruptionTarget: DeletionByPodGC`, after `pod_gc_s`); a replacement
node may join later.  Faults are injected per
path prefix: an HTTP status, "drop" to close the connection unanswered,
`("body", bytes)` to answer 200 with those bytes, `("stream", bytes)` to
answer a watch with those lines, or "pass" to answer as usual.  Every request
is recorded as (method, path, query).

Why hand-written rather than kmock (the maintained Kubernetes mock server on
the package index), checked with kmock 0.8 in a scratch venv:
- installing it breaks pytest: its auto-loaded pytest plugin imports
  pytest_asyncio, which it does not declare ("Error while loading plugin
  'pytest11' ... No module named 'pytest_asyncio'");
- it serves from an asyncio/aiohttp loop, while the backend drives the
  synchronous `kubernetes` client from plain code: every test would need that
  loop in a thread, which kmock does not support;
- it has no way to drop a connection unanswered (grep: only the client side
  disconnecting is handled), which the retry tests need;
- it needs Python >= 3.11 (kary: >= 3.10), says of itself that it is freshly
  released with breaking changes to come, and brings about ten packages
  (aiohttp, yarl, multidict, attrs, jsonpatch, ...);
- its generic object store would not replace the part that matters here, the
  Flux Operator's behaviour (MiniCluster -> indexed Job -> ranked pods that
  finish, fail or linger), which would be hand-written as kmock reactions.
Watches, 5xx, logs and raw bodies are each a few lines below.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import re
import shutil
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml
from box_pods import BoxPods, PodSettings
from fake_operator_flux import FluxPods
from strict_schema import unknown_fields

from experiments.formats.nested_bundle import FEED_CELLS, FEED_KEY, read_feed, unbundle
from experiments.formats.nested_frame import format_frame
from experiments.model.render_nested import FEED_PATH

GROUP_PATH = "/apis/flux-framework.org/v1alpha2"
REVIEW_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
OPERATOR_DIGEST = "sha256:" + "ab" * 32
# The controller as `kary cluster up` leaves it when the cluster file pins it by digest.
OPERATOR_IMAGE = f"ghcr.io/flux-framework/flux-operator@{OPERATOR_DIGEST}"
IMAGE_DIGEST = "sha256:" + "cd" * 32
# A flux view pinned by digest, as a billed run needs one (model/pins.py): not a real build.
PINNED_VIEW = "ghcr.io/converged-computing/flux-view-ubuntu:tag-noble@sha256:" + "ef" * 32
OPERATOR_IMAGE_ID = f"ghcr.io/flux-framework/flux-operator@{OPERATOR_DIGEST}"


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Scenario:
    """How the next MiniClusters behave."""

    outcome: str = "Complete"  # Complete | Failed | never
    run_s: float = 0.1
    log: str = (
        'KARY {"meta": "cell", "cell": "{cell}", "flux_version": "0.66.0"}\n'
        "hello from rank 0\n"
        'KARY {"meta": "done", "failed_steps": 0}\n'
    )
    # Rank 0's container's exit status: 0 under the operator, unless killed (137: OOM).
    exit_code: int = 0
    delete_s: float = 0.05
    pods_stick: bool = False  # pods never go away after delete
    job_appears_s: float = 0.0  # the operator is slow to make the Job
    pack: int | None = None  # the pods share this many nodes (None: a node per pod)
    unschedulable: bool = False  # the pods stay Pending: no node fits them
    waiting: str | None = None  # every container waits for this reason (ImagePullBackOff)
    # Nested layout: the driver ends (or, with outcome "never", hangs) after this many cells.
    nested_cells_done: int | None = None
    # Nested layout: the first cell's job starts (its job frame shows) this late, as when
    # the pods took long to pull their image.
    first_job_after_s: float = 0.0
    # The pods stay Pending this long, their containers waiting ContainerCreating (as while
    # the kubelet pulls the image); the Job's run time starts after it.
    pulling_s: float = 0.0


def fake_node(
    index: int,
    capacity: str = "ON_DEMAND",
    name: str | None = None,
    group: str = "workers",
    instance: str | None = None,
) -> dict[str, Any]:
    """A Node as an EKS managed node group labels it (managed-node-groups.html)."""
    return {
        "metadata": {
            "name": name or f"node-{index}",
            "labels": {
                "node.kubernetes.io/instance-type": "c5a.4xlarge",
                "topology.kubernetes.io/zone": "us-east-2b",
                "eks.amazonaws.com/capacityType": capacity,
                "eks.amazonaws.com/nodegroup": group,
                "alpha.eksctl.io/nodegroup-name": group,
            },
        },
        "spec": {"providerID": f"aws:///us-east-2b/{instance or f'i-{index:017x}'}"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def fake_nodes(count: int = 32, spot: range | None = None) -> list[dict[str, Any]]:
    """`count` nodes, on demand but for the indexes in `spot`."""
    return [fake_node(i, "SPOT" if spot and i in spot else "ON_DEMAND") for i in range(count)]


@dataclass
class Preemption:
    """The next MiniCluster loses the node of `rank` `after_s` after it is made; a
    replacement node joins `replaced_after_s` after that (None: never)."""

    rank: int = 1
    after_s: float = 0.3
    replaced_after_s: float | None = None
    pod_gc_s: float = 30.0  # as PodGC waits before it deletes a pod of a gone node


@dataclass
class FakeCluster:
    crd: bool = True
    token: str | None = None  # when set, any other bearer token gets 401
    scenario: Scenario = field(default_factory=Scenario)
    faults: dict[str, list[Any]] = field(default_factory=dict)
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    miniclusters: dict[str, dict[str, Any]] = field(default_factory=dict)
    created: list[dict[str, Any]] = field(default_factory=list)
    # name -> {"born": t, "scenario": Scenario, "deleted": t | None}
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    resource_version: int = 100
    # The CRD's openAPIV3Schema: with it, fieldValidation=Strict rejects unknown
    # fields as a real API server does (422), and without Strict they are pruned.
    schema: dict[str, Any] | None = None
    # With a flux-core path: MiniClusters run for real on it (fake_operator_flux), and
    # with pod settings too, as pods in a box, each a node of its own (box_pods).
    flux: str | None = None
    pod_settings: PodSettings | None = None
    # Each of those MiniClusters' folder (/tmp/kfo-... or /tmp/kpb-...): every process
    # of its pods names it, so a test finds what it left, and not another test's.
    pod_folders: list[Path] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    nodes: list[dict[str, Any]] = field(default_factory=fake_nodes)
    # Node name -> when it was deleted (monotonic); what is to come: (when, what).
    lost: dict[str, float] = field(default_factory=dict)
    events: list[tuple[float, Any]] = field(default_factory=list)
    pending_preemption: Preemption | None = None
    # RBAC this kubeconfig lacks, as `VERB RESOURCE[/SUBRESOURCE]` ("list nodes",
    # "get pods/log"): a SelfSubjectAccessReview of it is denied, and listing nodes
    # when "list nodes" is here answers 403 Forbidden, as a real API server does.
    denied: set[str] = field(default_factory=set)
    # The operator's controller image as its deployment names it.
    operator_image: str = OPERATOR_IMAGE
    # ConfigMaps by (namespace, name); how long the kubelet takes to project a changed
    # one into the pods that mount it (a real one: up to its sync period, a minute).
    configmaps: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    feed_delay_s: float = 0.0

    def preempt(self, plan: Preemption) -> None:
        """The next MiniCluster made loses a node (see Preemption)."""
        self.pending_preemption = plan

    def lose_node(self, name: str, replaced_after_s: float | None = None) -> None:
        """Delete Node `name` now; a replacement joins `replaced_after_s` later."""
        now = time.monotonic()
        gone = next(n for n in self.nodes if n["metadata"]["name"] == name)
        self.nodes = [n for n in self.nodes if n is not gone]
        self.lost[name] = now
        if replaced_after_s is not None:
            index = len(self.nodes) + len(self.lost)
            capacity = gone["metadata"]["labels"]["eks.amazonaws.com/capacityType"]
            new = fake_node(index, capacity, name=f"{name}-r{len(self.lost)}")
            self.events.append((now + replaced_after_s, lambda: self.nodes.append(new)))

    def tick(self) -> None:
        """Apply what was due by now: node losses and replacements."""
        now = time.monotonic()
        with self.lock:
            due = [e for e in self.events if e[0] <= now]
            self.events = [e for e in self.events if e[0] > now]
        for _, apply in sorted(due, key=lambda e: e[0]):
            apply()

    def stop_all(self) -> list[int]:
        """Stop every MiniCluster's local instance; the pids that outlived theirs."""
        left: list[int] = []
        for run in self.runs.values():
            if run.get("pods") is not None:
                left += run["pods"].stop()
        return left

    def project(self, ns: str, name: str) -> None:
        """ConfigMap `name`'s text (the feed's key) to every live MiniCluster that mounts
        it, `feed_delay_s` from now, as the kubelet refreshes a ConfigMap volume: into
        its pods' folder when they run for real, else into the cells its scenario runs."""
        text = ((self.configmaps.get((ns, name)) or {}).get("data") or {}).get(FEED_KEY)
        if text is None:
            return
        for run_name, run in self.runs.items():
            body = self.miniclusters.get(run_name)
            if run["deleted"] is not None or body is None or _feed_mounted(body) != name:
                continue
            pods = run.get("pods")
            if pods is not None:
                deliver = functools.partial(project_feed, pods.feed_dir, text)
            else:
                deliver = functools.partial(_feed_scenario, run, text)
            if self.feed_delay_s > 0:
                threading.Timer(self.feed_delay_s, deliver).start()
            else:
                deliver()

    def fault(self, prefix: str, *actions: Any) -> None:
        """The next requests whose path starts with `prefix` get these answers, in order."""
        self.faults.setdefault(prefix, []).extend(actions)

    def take_fault(self, path: str) -> Any:
        with self.lock:
            for prefix, actions in self.faults.items():
                if path.startswith(prefix) and actions:
                    return actions.pop(0)
        return None

    def count(self, method: str, prefix: str) -> int:
        return sum(1 for m, p, _ in self.requests if m == method and p.startswith(prefix))

    # The operator's side: what exists for a MiniCluster at this moment.
    def _run(self, name: str) -> dict[str, Any] | None:
        run = self.runs.get(name)
        if run is None:
            return None
        deleted = run["deleted"]
        scenario = run["scenario"]
        gone = deleted is not None and time.monotonic() - deleted >= scenario.delete_s
        if gone and not scenario.pods_stick:
            return None
        return run

    def job(self, ns: str, name: str) -> dict[str, Any] | None:
        run = self._run(name)
        if run is None:
            return None
        scenario: Scenario = run["scenario"]
        age = time.monotonic() - run["born"]
        if age < scenario.job_appears_s:
            return None
        status: dict[str, Any] = {"active": 0, "startTime": _now()}
        if _finished(run, age):
            reason = "BackoffLimitExceeded" if scenario.outcome == "Failed" else None
            condition = {"type": scenario.outcome, "status": "True", "lastTransitionTime": _now()}
            if reason:
                condition |= {
                    "reason": reason,
                    "message": "Job has reached the specified backoff limit",
                }
            status["conditions"] = [condition]
        else:
            status["active"] = run["size"]
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": name,
                "namespace": ns,
                "resourceVersion": str(run["rv"] + (1 if "conditions" in status else 0)),
            },
            "spec": {"completionMode": "Indexed", "template": {"spec": {"containers": []}}},
            "status": status,
        }

    def pods(self, ns: str, name: str) -> list[dict[str, Any]]:
        run = self._run(name)
        if run is None:
            return []
        scenario: Scenario = run["scenario"]
        age = time.monotonic() - run["born"]
        done = _finished(run, age)
        pods = []
        for index in range(run["size"]):
            node: str | None = f"node-{index % (scenario.pack or run['size'])}"
            conditions: list[dict[str, Any]] = []
            if scenario.unschedulable:
                # Never scheduled: no kubelet has made its containers, so no statuses.
                node, phase, state = None, "Pending", None
                conditions = [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "0/2 nodes are available: 2 Insufficient cpu.",
                    }
                ]
            elif age < scenario.pulling_s:
                phase = "Pending"
                state = {"waiting": {"reason": "ContainerCreating"}}
            elif scenario.waiting:
                pulling = "Image" in scenario.waiting
                phase = "Pending" if pulling else "Running"
                state = {
                    "waiting": {
                        "reason": scenario.waiting,
                        "message": f"injected {scenario.waiting}",
                    }
                }
            elif done:
                code = scenario.exit_code if index == 0 else 0
                phase = "Succeeded" if code == 0 else "Failed"
                state = {
                    "terminated": {
                        "exitCode": code,
                        "reason": "Completed" if code == 0 else "Error",
                    }
                }
            else:
                phase, state = "Running", {"running": {"startedAt": _now()}}
            if node is not None and run.get("node_names"):
                node = run["node_names"][index % (scenario.pack or run["size"])]
            lost_at = self.lost.get(node or "")
            gc = run["preemption"].pod_gc_s if run.get("preemption") else 30.0
            if lost_at is not None and time.monotonic() - lost_at >= gc:
                # Pod GC: the pod of a node that is gone is marked, then deleted.
                phase, state = "Failed", {"terminated": {"exitCode": 137, "reason": "Error"}}
                conditions = [
                    {
                        "type": "DisruptionTarget",
                        "status": "True",
                        "reason": "DeletionByPodGC",
                        "message": "PodGC: node no longer exists",
                    }
                ]
            pod_name, uid, restarts = f"{name}-{index}-x{index}z", f"uid-{name}-{index}", 0
            evicted: dict[str, str] = {}  # an evicted pod's reason and message
            created = run["created"]
            box = run.get("pods")
            if isinstance(box, BoxPods):
                seen = box.pod_status(index)
                pod_name, uid, created = seen["name"], seen["uid"], seen["created"]
                phase, restarts = seen["phase"], seen.get("restarts", 0)
                state = seen.get("state")
                conditions = conditions + seen.get("conditions", [])
                evicted = {key: seen[key] for key in ("reason", "message") if key in seen}
            pod = {
                "metadata": {
                    "name": pod_name,
                    "uid": uid,
                    "creationTimestamp": created,
                    "namespace": ns,
                    "labels": {
                        "job-name": name,
                        "batch.kubernetes.io/job-completion-index": str(index),
                    },
                },
                "spec": {
                    **({"nodeName": node} if node else {}),
                    "containers": [{"name": name, "image": run["image"]}],
                },
                "status": {
                    "phase": phase,
                    **evicted,
                    "conditions": conditions,
                    "containerStatuses": [
                        {
                            "name": name,
                            "image": run["image"],
                            "imageID": f"{run['image'].split(':')[0]}@{IMAGE_DIGEST}",
                            "ready": not done,
                            "restartCount": restarts,
                            "state": state,
                        }
                    ]
                    if state
                    else [],
                },
            }
            if run["deleted"] is not None:
                pod["metadata"]["deletionTimestamp"] = _now()
            pods.append(pod)
        return pods


def _nested_cells(body: dict[str, Any]) -> list[str]:
    """The cell ids a nested layout's MiniCluster runs, from the driver in its bundle."""
    if (body["metadata"].get("labels") or {}).get("kary/layout") != "nested":
        return []
    pre = (body["spec"]["containers"][0].get("commands") or {}).get("pre") or ""
    driver = unbundle(pre.split("KARY_BUNDLE_EOF")[1].split("\n", 1)[1])["driver.sh"]
    return _cells_run_by(driver)


def _cells_run_by(script: str) -> list[str]:
    """The cell ids a driver (or a batch's cells.sh) runs, in order."""
    return re.findall(r"^kary_nested_cell '([^']+)'", script, re.MULTILINE)


def _feed_mounted(body: dict[str, Any]) -> str | None:
    """The ConfigMap a MiniCluster's container mounts as its feed (render_nested.Feed)."""
    volumes = body["spec"]["containers"][0].get("volumes") or {}
    for volume in volumes.values():
        if volume.get("path") == FEED_PATH and volume.get("configMapName"):
            return str(volume["configMapName"])
    return None


def project_feed(folder: Path, text: str) -> None:
    """The feed's file as the kubelet writes a ConfigMap volume's: replaced whole."""
    folder.mkdir(parents=True, exist_ok=True)
    fresh = folder / f".{FEED_KEY}.new"
    fresh.write_text(text)
    os.replace(fresh, folder / FEED_KEY)


def _feed_scenario(run: dict[str, Any], text: str) -> None:
    """Without real Flux: a batch's cells join those the scenario's driver runs."""
    number, files = read_feed(text)
    if number > run.get("feed_batch", 0):
        run["feed_batch"] = number
        run["nested_cells"] += _cells_run_by(files.get(FEED_CELLS, ""))


def _nested_log(run: dict[str, Any]) -> str:
    """Without real Flux, a nested MiniCluster's rank 0 prints the scenario's log per
    cell, framed as the driver frames it; the cells it has reached so far, when its
    scenario has a run time, are all of them once that time has passed."""
    scenario: Scenario = run["scenario"]
    if scenario.waiting or scenario.unschedulable or not _pulled(run):
        return ""  # rank 0's container never started: nothing ran, nothing printed
    cells: list[str] = run["nested_cells"]
    lines = []
    done = len(cells) if scenario.nested_cells_done is None else scenario.nested_cells_done
    for index, cell in enumerate(cells):
        lines.append(format_frame("begin", cell))
        if time.monotonic() - run["born"] < scenario.first_job_after_s:
            return "\n".join(lines) + "\n"
        lines.append(format_frame("job", cell, jobid=f"f{index + 1}", flux_version="0.66.0"))
        lines.append(scenario.log.replace("{cell}", cell).rstrip("\n"))
        if index == done:  # the driver stops (or hangs) inside this cell
            return "\n".join(lines) + "\n"
        lines.append(format_frame("end", cell, rc=0, result="COMPLETED", hosts="x", seconds=1.0))
    if not run.get("feed"):  # a fed driver waits for its next batch
        lines.append(format_frame("finished"))
    return "\n".join(lines) + "\n"


def _log_text(lines: list[tuple[float, str]], query: dict[str, str]) -> str:
    """A pod log as the API serves it: since `sinceSeconds` ago if asked, each line
    stamped (RFC 3339, nanoseconds) if `timestamps=true`."""
    since = query.get("sinceSeconds")
    if since is not None:
        oldest = time.time() - float(since)
        lines = [(at, line) for at, line in lines if at >= oldest]
    if query.get("timestamps") != "true":
        return "".join(line + "\n" for _, line in lines)
    return "".join(f"{_stamp(at)} {line}\n" for at, line in lines)


def _stamp(at: float) -> str:
    whole = int(at)
    nanos = round((at - whole) * 1e9)
    if nanos >= 1_000_000_000:
        whole, nanos = whole + 1, nanos - 1_000_000_000
    return (
        datetime.fromtimestamp(whole, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos:09d}Z"
    )


def _finished(run: dict[str, Any], age: float) -> bool:
    """Whether the MiniCluster's Job has ended: its local instance exited, or the
    scenario's run time passed (a scenario that never ends never does)."""
    if run.get("pods") is not None:
        return not run["pods"].running
    scenario: Scenario = run["scenario"]
    return scenario.outcome != "never" and age >= scenario.pulling_s + scenario.run_s


def _pulled(run: dict[str, Any]) -> bool:
    """Whether the scenario's image pull is over (its containers could start)."""
    return time.monotonic() - run["born"] >= run["scenario"].pulling_s


def _list(kind: str, items: list[dict[str, Any]], rv: int) -> dict[str, Any]:
    return {
        "kind": kind,
        "apiVersion": "v1",
        "metadata": {"resourceVersion": str(rv)},
        "items": items,
    }


# The cell id in the entrypoint's first comment line (templates/entrypoint.sh.j2).
_CELL_ID = re.compile(r"# kary benchmark entrypoint: .*, cell (\S+)\.$", re.M)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    cluster: FakeCluster

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: Any, content_type: str = "application/json") -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_raw(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream_raw(self, data: bytes) -> None:
        """A watch that sends `data` as one chunk, then ends."""
        self.protocol_version = "HTTP/1.1"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))
        self.close_connection = True

    def _status(self, code: int, reason: str, message: str) -> None:
        self._send(
            code,
            {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "message": message,
                "reason": reason,
                "code": code,
            },
        )

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def _handle(self, method: str) -> None:
        cluster = self.cluster
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        path = url.path
        cluster.requests.append((method, path, query))
        cluster.times.append(time.monotonic())
        cluster.tick()
        fault = cluster.take_fault(path)
        if fault == "drop":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if isinstance(fault, int):
            self._status(fault, "InternalError", f"injected {fault}")
            return
        if isinstance(fault, tuple) and fault[0] == "body":
            self._send_raw(200, fault[1])
            return
        if isinstance(fault, tuple) and fault[0] == "stream":
            self._stream_raw(fault[1])
            return
        if cluster.token and self.headers.get("Authorization") != f"Bearer {cluster.token}":
            self._status(401, "Unauthorized", "Unauthorized")
            return
        body = None
        if method in ("POST", "PUT"):
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
        self._route(method, path, query, body)

    def _route(self, method: str, path: str, query: dict[str, str], body: Any) -> None:
        cluster = self.cluster
        parts = path.strip("/").split("/")
        if path.rstrip("/") == "/version":
            self._send(
                200,
                {
                    "major": "1",
                    "minor": "33",
                    "gitVersion": "v1.33.1-eks-fake",
                    "platform": "linux/amd64",
                },
            )
            return
        if path == GROUP_PATH:
            if not cluster.crd:
                self._status(404, "NotFound", "the server could not find the requested resource")
                return
            self._send(
                200,
                {
                    "kind": "APIResourceList",
                    "apiVersion": "v1",
                    "groupVersion": "flux-framework.org/v1alpha2",
                    "resources": [
                        {
                            "name": "miniclusters",
                            "singularName": "minicluster",
                            "namespaced": True,
                            "kind": "MiniCluster",
                            "verbs": ["create", "delete", "get", "list"],
                        }
                    ],
                },
            )
            return
        if path.startswith(GROUP_PATH + "/namespaces/") and parts[5] == "miniclusters":
            if method == "POST" and self._unknown_fields(body, query):
                return
            self._miniclusters(method, parts[4], parts[6] if len(parts) > 6 else None, body, query)
            return
        if path == REVIEW_PATH and method == "POST":
            self._review(body)
            return
        if path == "/api/v1/nodes":
            if "list nodes" in cluster.denied:
                self._forbidden("list", "nodes")
                return
            self._send(200, _list("NodeList", list(cluster.nodes), cluster.resource_version))
            return
        if parts[:2] == ["apis", "apps"] and parts[-1] == "operator-controller-manager":
            self._send(
                200,
                {
                    "metadata": {
                        "name": "operator-controller-manager",
                        "namespace": "operator-system",
                    },
                    "spec": {
                        "selector": {"matchLabels": {"control-plane": "controller-manager"}},
                        "template": {
                            "spec": {
                                "containers": [
                                    {
                                        "name": "kube-rbac-proxy",
                                        "image": "gcr.io/kubebuilder/kube-rbac-proxy:v0.11.0",
                                    },
                                    {"name": "manager", "image": cluster.operator_image},
                                ]
                            }
                        },
                    },
                },
            )
            return
        if parts[:3] == ["api", "v1", "namespaces"] and len(parts) >= 5:
            ns, kind = parts[3], parts[4]
            if kind == "pods" and len(parts) == 5:
                selector = query.get("labelSelector", "")
                if ns == "operator-system":
                    pods = [
                        {
                            "metadata": {
                                "name": "operator-controller-manager-abc",
                                "namespace": ns,
                            },
                            "spec": {"containers": [{"name": "manager", "image": OPERATOR_IMAGE}]},
                            "status": {
                                "phase": "Running",
                                "containerStatuses": [
                                    {
                                        "name": "manager",
                                        "image": OPERATOR_IMAGE,
                                        "ready": True,
                                        "restartCount": 0,
                                        "imageID": OPERATOR_IMAGE_ID,
                                    }
                                ],
                            },
                        }
                    ]
                else:
                    name = selector.split("=", 1)[1] if selector.startswith("job-name=") else ""
                    pods = cluster.pods(ns, name)
                self._send(200, _list("PodList", pods, cluster.resource_version))
                return
            if kind == "pods" and len(parts) == 7 and parts[6] == "log":
                pod = parts[5]
                name = pod.rsplit("-", 2)[0]
                run = cluster._run(name)
                if run is None:
                    self._status(404, "NotFound", f'pods "{pod}" not found')
                    return
                if run.get("pods") is not None:
                    lines = run["pods"].log_lines()
                else:
                    # A scenario's log: every line as old as the MiniCluster.
                    text = (
                        _nested_log(run)
                        if run.get("nested_cells")
                        else run["scenario"].log.replace("{cell}", run["cell"])
                        if _pulled(run)
                        else ""
                    )
                    lines = [(run["born_wall"], line) for line in text.splitlines()]
                self._send(200, _log_text(lines, query), "text/plain")
                return
            if kind == "configmaps":
                self._configmaps(method, ns, parts[5] if len(parts) > 5 else None, body, query)
                return
            if kind == "events":
                events = [
                    {
                        "metadata": {"name": f"{n}.1", "namespace": ns},
                        "involvedObject": {"kind": "Pod", "name": f"{n}-1-x1z", "namespace": ns},
                        "reason": "BackOff",
                        "message": "Back-off restarting failed container",
                        "type": "Warning",
                        "lastTimestamp": _now(),
                        "count": 3,
                    }
                    for n, r in cluster.runs.items()
                    if r["scenario"].outcome == "Failed"
                ] + [
                    {
                        "metadata": {"name": "other.1", "namespace": ns},
                        "involvedObject": {"kind": "Pod", "name": "unrelated-pod", "namespace": ns},
                        "reason": "Pulled",
                        "message": "not ours",
                        "type": "Normal",
                        "lastTimestamp": _now(),
                    }
                ]
                self._send(200, _list("EventList", events, cluster.resource_version))
                return
        if parts[:4] == ["apis", "batch", "v1", "namespaces"] and parts[5] == "jobs":
            if method == "DELETE":
                job = cluster.job(parts[4], parts[6])
                if job is None:
                    self._status(404, "NotFound", f'jobs.batch "{parts[6]}" not found')
                    return
                self._send(200, {"kind": "Status", "status": "Success"})
                return
            self._jobs(parts[4], query)
            return
        self._status(404, "NotFound", f"fake apiserver: no route for {method} {path}")

    def _review(self, body: Any) -> None:
        """A SelfSubjectAccessReview: allowed unless the cluster denies it."""
        asked = ((body or {}).get("spec") or {}).get("resourceAttributes") or {}
        what = asked.get("resource", "") + (
            f"/{asked['subresource']}" if asked.get("subresource") else ""
        )
        allowed = f"{asked.get('verb')} {what}" not in self.cluster.denied
        review = {**body, "status": {"allowed": allowed}}
        if not allowed:
            review["status"]["reason"] = "no RBAC policy matched"
        self._send(201, review)

    def _forbidden(self, verb: str, resource: str) -> None:
        self._status(
            403,
            "Forbidden",
            f'{resource} is forbidden: User "kary-test" cannot {verb} resource "{resource}" '
            'in API group "" at the cluster scope',
        )

    def _unknown_fields(self, body: Any, query: dict[str, str]) -> bool:
        """Answer 422 for unknown fields under Strict (True); prune them otherwise."""
        schema = self.cluster.schema
        unknown = unknown_fields(schema, body) if schema and isinstance(body, dict) else []
        if unknown and query.get("fieldValidation") == "Strict":
            fields = ", ".join(f'unknown field "{path}"' for path in unknown)
            self._status(422, "Invalid", f"strict decoding error: {fields}")
            return True
        for path in unknown:  # what the server does without Strict: drop them
            _prune(body, path)
        return False

    def _selected(self, ns: str, query: dict[str, str]) -> dict[str, Any]:
        """The MiniClusters in `ns` whose labels match labelSelector's k=v,k=v."""
        wanted = dict(
            pair.split("=", 1) for pair in query.get("labelSelector", "").split(",") if pair
        )
        items = [
            body
            for body in self.cluster.miniclusters.values()
            if body["metadata"].get("namespace", ns) == ns
            and all((body["metadata"].get("labels") or {}).get(k) == v for k, v in wanted.items())
        ]
        return _list("MiniClusterList", items, self.cluster.resource_version)

    def _miniclusters(
        self, method: str, ns: str, name: str | None, body: Any, query: dict[str, str]
    ) -> None:
        cluster = self.cluster
        with cluster.lock:
            if method == "POST":
                name = body["metadata"]["name"]
                if name in cluster.miniclusters:
                    self._status(
                        409,
                        "AlreadyExists",
                        f'miniclusters.flux-framework.org "{name}" already exists',
                    )
                    return
                if cluster._run(name) is not None:
                    # Pods of a deleted one still terminating: the Job name is taken.
                    pass
                cluster.resource_version += 10
                body["metadata"]["namespace"] = ns
                body["metadata"]["resourceVersion"] = str(cluster.resource_version)
                cluster.miniclusters[name] = body
                cluster.created.append(body)
                commands = body["spec"]["containers"][0].get("commands") or {}
                cell_line = _CELL_ID.search(commands.get("pre") or "")
                if cluster.flux and cluster.pod_settings is not None:
                    pods: Any = BoxPods(cluster.flux, body, cluster.pod_settings)
                    cluster.pod_folders.append(pods.folder)
                elif cluster.flux:
                    pods = FluxPods(cluster.flux, body)
                    cluster.pod_folders.append(pods.root)
                else:
                    pods = None
                cluster.runs[name] = {
                    "cell": cell_line.group(1) if cell_line else "",
                    "born": time.monotonic(),
                    "born_wall": time.time(),
                    "created": _now(),
                    "scenario": cluster.scenario,
                    "deleted": None,
                    "size": int(body["spec"]["size"]),
                    "rv": cluster.resource_version,
                    "image": body["spec"]["containers"][0]["image"],
                    "pods": pods,
                    "nested_cells": _nested_cells(body),
                    "feed": _feed_mounted(body),
                    # Its pods go to the nodes there are now, in list order.
                    "node_names": [n["metadata"]["name"] for n in cluster.nodes],
                    "preemption": cluster.pending_preemption,
                }
                mounted = cluster.runs[name]["feed"]
                if mounted is not None and (ns, mounted) in cluster.configmaps:
                    cluster.project(ns, mounted)
                plan, cluster.pending_preemption = cluster.pending_preemption, None
                if plan is not None:
                    victim = cluster.runs[name]["node_names"][plan.rank]
                    cluster.events.append(
                        (
                            time.monotonic() + plan.after_s,
                            lambda: cluster.lose_node(victim, plan.replaced_after_s),
                        )
                    )
                self._send(201, body)
                return
            if method == "GET" and name is None:
                self._send(200, self._selected(ns, query))
                return
            found = cluster.miniclusters.get(name or "")
            if found is None:
                self._status(404, "NotFound", f'miniclusters.flux-framework.org "{name}" not found')
                return
            if method == "GET":
                self._send(200, found)
                return
            if method == "DELETE":
                del cluster.miniclusters[name or ""]
                if name in cluster.runs:
                    cluster.runs[name]["deleted"] = time.monotonic()
                    if cluster.runs[name].get("pods") is not None:
                        cluster.runs[name]["left"] = cluster.runs[name]["pods"].stop()
                self._send(200, {"kind": "Status", "status": "Success"})
                return
        self._status(405, "MethodNotAllowed", method)

    def _configmaps(
        self, method: str, ns: str, name: str | None, body: Any, query: dict[str, str]
    ) -> None:
        """ConfigMaps as the API serves them: create (409 if there), replace, delete and
        read one; list by label selector.  A change reaches the pods that mount it."""
        cluster = self.cluster
        with cluster.lock:
            key = (ns, name or (body or {}).get("metadata", {}).get("name", ""))
            if method == "GET" and name is None:
                wanted = dict(
                    pair.split("=", 1)
                    for pair in query.get("labelSelector", "").split(",")
                    if "=" in pair
                )
                items = [
                    found
                    for (space, _), found in cluster.configmaps.items()
                    if space == ns
                    and wanted.items() <= (found["metadata"].get("labels") or {}).items()
                ]
                self._send(200, _list("ConfigMapList", items, cluster.resource_version))
                return
            if method == "POST":
                if key in cluster.configmaps:
                    self._status(409, "AlreadyExists", f'configmaps "{key[1]}" already exists')
                    return
            elif key not in cluster.configmaps:
                self._status(404, "NotFound", f'configmaps "{key[1]}" not found')
                return
            if method == "DELETE":
                del cluster.configmaps[key]
                self._send(200, {"kind": "Status", "status": "Success"})
                return
            if method in ("POST", "PUT"):
                cluster.resource_version += 1
                body["metadata"].update(
                    {"namespace": ns, "resourceVersion": str(cluster.resource_version)}
                )
                cluster.configmaps[key] = body
                cluster.project(ns, key[1])
                self._send(201 if method == "POST" else 200, body)
                return
            self._send(200, cluster.configmaps[key])

    def _jobs(self, ns: str, query: dict[str, str]) -> None:
        cluster = self.cluster
        name = query.get("fieldSelector", "").removeprefix("metadata.name=")
        if query.get("watch") not in ("true", "1", "True"):
            job = cluster.job(ns, name)
            self._send(200, _list("JobList", [job] if job else [], cluster.resource_version))
            return
        # A watch: stream an event whenever the Job changes; end at timeoutSeconds.
        # Chunked, as the real API server streams: a client reads each event as it comes.
        end = time.monotonic() + min(float(query.get("timeoutSeconds", "5")), 5.0)
        self.protocol_version = "HTTP/1.1"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        last = None
        try:
            while time.monotonic() < end:
                job = cluster.job(ns, name)
                rv = job["metadata"]["resourceVersion"] if job else None
                if job and rv != last:
                    kind = "ADDED" if last is None else "MODIFIED"
                    line = (json.dumps({"type": kind, "object": job}) + "\n").encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                    self.wfile.flush()
                    last = rv
                time.sleep(0.02)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped watching
        self.close_connection = True


class FakeApiServer:
    """Serve a FakeCluster on 127.0.0.1:<random port> in a thread."""

    def __init__(self, cluster: FakeCluster | None = None) -> None:
        self.cluster = cluster or FakeCluster()
        handler = type("Handler", (_Handler,), {"cluster": self.cluster})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeApiServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cluster.stop_all()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def pinned_cluster_file(source: Path) -> Path:
    """A copy of cluster file `source` that pins the operator (as a billed `--up` needs)
    to the fake API server's OPERATOR_IMAGE; in a folder removed when the tests end."""
    folder = Path(tempfile.mkdtemp(prefix="kary-pinned-"))
    atexit.register(shutil.rmtree, folder, True)
    raw = yaml.safe_load(source.read_text())
    meta = raw["metadata"] if raw.get("kind") == "ClusterConfig" else raw
    meta.setdefault("annotations", {})["kary/operator-image"] = OPERATOR_IMAGE
    copy = folder / source.name
    copy.write_text(yaml.safe_dump(raw, sort_keys=False))
    return copy


def write_kubeconfig(
    path: Path, server: str, token: str = "kary-test-token", context: str = "fake"
) -> Path:
    """A kubeconfig whose current context (named `context`) points at `server`."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": server}}],
        "users": [{"name": "tester", "user": {"token": token}}],
        "contexts": [{"name": context, "context": {"cluster": "fake", "user": "tester"}}],
        "current-context": context,
    }
    path.write_text(json.dumps(config))
    return path


def _prune(body: dict[str, Any], path: str) -> None:
    """Delete the field at a dotted path with [i] list indexes, as strict_schema writes them."""
    keys: list[str | int] = []
    for part in path.split("."):
        name, _, rest = part.partition("[")
        keys.append(name)
        keys += [int(index) for index in rest.rstrip("]").split("][") if index] if rest else []
    node: Any = body
    for key in keys[:-1]:
        node = node[key]
    del node[keys[-1]]
