"""The fake operator's second mode: a MiniCluster's pods as pods, each a node in a box.

`FakeCluster(flux=..., pods=PodSettings(...))` makes every MiniCluster's pods
here: one network namespace, hostname, /tmp (a disk of a stated size) and
working directory per pod (pod_box_init.py), and in each the script the Flux
Operator's pods run, at the commit kary installs (experiments/model/operator.py,
flux-framework/flux-operator 0d75cef8), reduced to what a kary MiniCluster
uses.  What is followed, with the operator's lines:

- the broker config (pkg/flux/view.go generateBrokerConfig, lines 46-93):
  `[bootstrap]` with the CURVE certificate, `default_port = 8050`,
  `default_bind = "tcp://eth0:%p"`, `default_connect =
  "tcp://%h.<headlessName>.<namespace>.svc.cluster.local:%p"` and one
  `hosts` entry `<name>-[0-<size-1>]`, `<name>-[0]` for one pod (ranks in
  index order, config.go generateHostlist and generateRange, lines 37-111);
  the headless service is named after the MiniCluster
  (api/v1alpha2/minicluster_types.go line 804).  Its `[archive]` and
  `[sched-fluxion-qmanager]` tables are left out: nothing in flux-core 0.88
  reads them (`[archive]` was the job-archive module's, removed in 0.68.0:
  NEWS.md "job-archive: remove module (#6378)"; the `flux archive` kary uses
  keeps archives in the KVS, src/cmd/builtin/archive.c, and reads no table;
  the other is Fluxion's, flux-sched, which the box does not run);
- the cluster's DNS: that service is headless without
  `publishNotReadyAddresses` (controllers/flux/service.go lines 53-74), so a
  pod's name resolves only once the pod is Ready, and the operator gives its
  containers no readiness probe, so Ready is its container running.  Each pod's
  /etc/hosts holds its own names from the start (the kubelet writes them) and
  a peer's service name only while that peer is Ready (no short names: the
  pods' DNS search path does not hold the service);
- the parts of the start script (pkg/flux/templates/wait.sh) a kary
  MiniCluster reaches, not all of it (left out: `--wrap`, worker pre and post
  commands, `completeWorkers`, timed and interactive modes; no
  `-Sbroker.quorum`, which the operator renders only when maxSize differs from
  size, and it sets maxSize to size: config.go getRequiredRanks,
  minicluster_types.go line 821): `flux R encode --hosts=...
  --local` (line 58), STATE_DIR made beforehand and passed as `-Sstatedir`
  (lines 63-65, 84: a kept statedir, so WAL/NORMAL), brokerOptions
  `-Stbon.fanout=256`, `-Srundir`, `-Slocal-uri`, the spec's `-Stbon.topo`,
  `-Stbon.connect_timeout=5s` (the CRD's default connectTimeout, which kary
  leaves unset: minicluster_types.go lines 362-365), `-Slog-stderr-level=0`
  under `logging.quiet` (lines 81-89);
  `commands.pre` pasted on every pod with ` > /dev/null 2>&1` after its last
  line under quiet (line 108: only the line after a heredoc is silenced);
  rank 0 `flux start -o --config ${cfg} ${brokerOptions} ${command}` in
  launcher mode (line 163), the others looping on `flux start` every 15 s
  until it exits 0 (lines 182-193; `worker_retry_s` may shorten it);
- the container's `environment` as its env (controllers/flux/containers.go
  lines 159-166): a per-cell MiniCluster's switch off of rc1's job cleanup;
- the Job (controllers/flux/job.go line 90): restartPolicy OnFailure, so a
  container that exits non-zero starts again in the same pod (restartCount+1),
  on a fresh writable layer: the operator mounts no volume on /tmp
  (controllers/flux/volumes.go, containers.go), so a restarted container finds
  /tmp empty but for CONFIG_ROOT, which stands for the operator's emptyDir
  /mnt/flux and is kept.

Rank 0's output is the pod log, with the time each line arrived (as the
kubelet stamps it), rotated when it passes `rotate_bytes` (the API then serves
the current file only, as it does).  Faults a test injects: `lose_pod` (its
processes killed, Pending for a while, then replaced by a new pod),
`restart_container`, `fill_disk`, `drain` (a rank of the MiniCluster's own
instance), `rotate_log`; and `PodSettings.pulls` keeps a pod Pending a while
before its first container starts, as a slow image pull on its node does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from box_kubelet import evicted_status, read_eviction
from pod_view import make_view, pods_path, view_script

from experiments.backends.flux.session_guard import stop_guard

REPO = Path(__file__).resolve().parents[2]
_INIT = Path(__file__).resolve().with_name("pod_box_init.py")
CONFIG_ROOT = "/tmp/flux-operator"  # the operator's /mnt/flux/config, on the pod's disk


@dataclass(frozen=True)
class PodSettings:
    """How the next MiniClusters' pods are made."""

    # A tmpfs's size is a limit, not memory taken: room for kary's 1 GiB disk margin.
    disk_bytes: int = 2 << 30
    # Per rank, a disk of another size (rank -> bytes).
    disks: dict[int, int] = field(default_factory=dict)
    # Rank 0's log rotates past this many bytes: the kubelet's containerLogMaxSize default.
    rotate_bytes: int | None = 10 * 2**20
    pending_s: float = 2.0  # a lost pod's replacement stays Pending this long
    # Per rank, seconds its pod stays Pending before its first container starts (the
    # image pull on its node): not Ready, so its name does not resolve meanwhile.
    pulls: dict[int, float] = field(default_factory=dict)
    worker_retry_s: int = 15  # the operator sleeps 15 s between a worker's tries
    # More environment for every pod's containers (the spec's own env, in effect).
    env: dict[str, str] = field(default_factory=dict)
    # `-Stbon.tcp_user_timeout` on a test's clock (flux-core's 20 s; box_node_death.py).
    tcp_user_timeout_s: float | None = None
    # The fake kubelet evicts a pod under this share of its disk free (box_kubelet.py).
    eviction_free_percent: float | None = None


def operator_hostlist(name: str, size: int) -> str:
    """The MiniCluster's hostlist as the operator writes it (config.go generateHostlist
    with generateRange: `name-[0]` for one pod, not `name-0`)."""
    return f"{name}-[{f'0-{size - 1}' if size > 1 else '0'}]"


def service_name(name: str, namespace: str, index: int) -> str:
    """Pod `index`'s name in the MiniCluster's headless service (named after it)."""
    return f"{name}-{index}.{name}.{namespace}.svc.cluster.local"


def broker_config(name: str, namespace: str, size: int) -> str:
    """The operator's broker config for a MiniCluster (view.go generateBrokerConfig)."""
    fqdn = f"{name}.{namespace}.svc.cluster.local"
    hosts = operator_hostlist(name, size)
    return (
        "[access]\nallow-guest-user = true\nallow-root-owner = true\n\n"
        f'[resource]\npath = "{CONFIG_ROOT}/etc/flux/system/R"\n\n'
        "[bootstrap]\n"
        f'curve_cert = "{CONFIG_ROOT}/curve/curve.cert"\n'
        "default_port = 8050\n"
        'default_bind = "tcp://eth0:%p"\n'
        f'default_connect = "tcp://%h.{fqdn}:%p"\n'
        f'hosts = [\n{{ host="{hosts}"}},\n]\n'
    )


def start_script(body: dict[str, Any], settings: PodSettings, folder: Path) -> str:
    """wait.sh as the operator renders it for this MiniCluster (the parts kary uses)."""
    spec = body["spec"]
    name = body["metadata"]["name"]
    container = spec["containers"][0]
    quiet = bool((spec.get("logging") or {}).get("quiet"))
    topology = (spec.get("flux") or {}).get("topology")
    pre = (container.get("commands") or {}).get("pre") or ""
    hosts = operator_hostlist(name, int(spec["size"]))
    silence = " > /dev/null 2>&1" if quiet else ""
    user_timeout = settings.tcp_user_timeout_s
    tcp_user_timeout = f"-Stbon.tcp_user_timeout={user_timeout:g}s" if user_timeout else ""
    return f"""#!/bin/bash
{view_script(folder / "view")}configroot={CONFIG_ROOT}
cfg="${{configroot}}/etc/flux/config"
command="{container["command"]}"
mkdir -p $configroot/curve $configroot/etc/flux/config $configroot/etc/flux/system
cp {folder}/curve.cert $configroot/curve/curve.cert
chmod o-r,g-r $configroot/curve/curve.cert
cp {folder}/broker.toml $cfg/broker.toml
flux R encode --hosts={hosts} --local > /tmp/R
mv /tmp/R ${{configroot}}/etc/flux/system/R
export STATE_DIR=${{configroot}}/var/lib/flux
export FLUX_OUTPUT_DIR=/tmp/fluxout
mkdir -p ${{STATE_DIR}} ${{FLUX_OUTPUT_DIR}} $configroot/run/flux
mainHost="{name}-0"
mkdir -p ${{configroot}}/etc/flux/system/cron.d
brokerOptions="-Scron.directory=${{configroot}}/etc/flux/system/cron.d \\
  -Stbon.fanout=256 \\
  -Srundir=${{configroot}}/run/flux \\
  -Sstatedir=${{STATE_DIR}} -Slocal-uri=local://$configroot/run/flux/local \\
  -Stbon.connect_timeout=5s {f"-Stbon.topo={topology}" if topology else ""} \\
  {tcp_user_timeout} \\
  {"-Slog-stderr-level=0" if quiet else "-Slog-stderr-level=6"} \\
  -Slog-stderr-mode=local"
{pre}{silence}
if [ $(hostname) == "${{mainHost}}" ]; then
    flux start -o --config ${{cfg}} ${{brokerOptions}} ${{command}}
else
    while true
    do
        flux start -o --config ${{configroot}}/etc/flux/config ${{brokerOptions}}
        retval=$?
        if [[ "${{retval}}" -eq 0 ]]; then
             echo "The follower worker exited cleanly. Goodbye!"
             break
        fi
        echo "Return value for follower worker is ${{retval}}"
        sleep {settings.worker_retry_s}
    done
fi
# The operator's marker (wait.sh line 199, under its view's path): the container exits 0
# whatever the launcher's command did.
touch /tmp/flux-operator-complete.txt
"""


@dataclass
class _PodState:
    uid: str
    name: str
    created: str
    restarts: int = 0
    containers: int = 0  # containers started in this pod so far
    pending_until: float | None = None
    exit_code: int | None = None  # the latest container's, once it exited
    evicted: dict[str, int] | None = None  # what the fake kubelet saw (box_kubelet.py)


class BoxPods:
    """One MiniCluster's pods in a box (see the module doc); the fake API server's view."""

    def __init__(self, flux: str, body: dict[str, Any], settings: PodSettings) -> None:
        self.flux, self.body, self.settings = flux, body, settings
        self.name = body["metadata"]["name"]
        namespace = body["metadata"].get("namespace") or "default"
        self.size = int(body["spec"]["size"])
        self.folder = Path(tempfile.mkdtemp(prefix="kpb-", dir="/tmp"))
        self.feed_dir = self.folder / "feed"
        self.lock = threading.RLock()
        self.lines: list[tuple[float, str]] = []  # rank 0's current log file
        self._log_bytes = 0
        self._partial = b""
        self._offset = 0
        self.pods = [self._new_pod(i) for i in range(self.size)]
        self.addresses = [f"198.19.0.{i + 1}" for i in range(self.size)]
        self.names = [service_name(self.name, namespace, i) for i in range(self.size)]
        self._resolvable: set[int] | None = None
        self._publish_names()
        subprocess.run(
            [flux, "keygen", str(self.folder / "curve.cert")], check=True, capture_output=True
        )
        (self.folder / "broker.toml").write_text(broker_config(self.name, namespace, self.size))
        self.view = make_view(self.folder, flux)  # Flux comes from it (pod_view.py)
        (self.folder / "pod.sh").write_text(start_script(body, settings, self.folder))
        for i in range(self.size):
            (self.folder / f"pod-{i}").mkdir()
        os.mkfifo(self.folder / "control")
        env = {
            "PATH": pods_path(),
            "PYTHONPATH": str(REPO),
            "LANG": "C.UTF-8",
            "HOME": "/root",
            # The feed's ConfigMap volume, as the fake kubelet projects it.
            "KARY_FEED": str(self.feed_dir),
            # The container's `environment`, which the operator makes its env
            # (controllers/flux/containers.go lines 159-166).
            **(body["spec"]["containers"][0].get("environment") or {}),
            **settings.env,
        }
        spec = {
            "folder": str(self.folder),
            "hosts": [f"{self.name}-{i}" for i in range(self.size)],
            "addresses": self.addresses,
            "config_root": CONFIG_ROOT,
            "prefix_length": 16,
            "disk_bytes": [settings.disks.get(i, settings.disk_bytes) for i in range(self.size)],
            "keep_paths": sorted(
                {str(REPO), str(Path(flux).resolve().parents[1]), sys.prefix, str(self.folder)}
            ),
            "env": env,
            "eviction_free_percent": settings.eviction_free_percent,
        }
        (self.folder / "pods.json").write_text(json.dumps(spec))
        # The guard's parent-death signal follows the thread that started it, and the fake
        # API server answers each request on a thread of its own: a thread of the box's
        # own starts it and lives until stop().
        self._owned = threading.Event()
        self._released = threading.Event()
        self.process: subprocess.Popen[bytes]
        threading.Thread(target=self._own, daemon=True).start()
        self._owned.wait(30)
        deadline = time.monotonic() + 30
        while not (self.folder / "ready").exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the pod box did not start: {self.init_log()}")
            time.sleep(0.02)
        self.control = open(self.folder / "control", "w")  # noqa: SIM115
        for i in range(self.size):
            pull = settings.pulls.get(i)
            if pull:
                self.pods[i].pending_until = time.monotonic() + pull
            else:
                self._start(i)
        self._publish_names()
        self._stopping = threading.Event()
        self.watcher = threading.Thread(target=self._watch, daemon=True)
        self.watcher.start()

    def _own(self) -> None:
        with open(self.folder / "init.log", "wb") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable, "-m", "experiments.backends.flux.session_guard", "--",
                    "unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "--net",
                    sys.executable, str(_INIT), str(self.folder / "pods.json"),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=dict(os.environ, PYTHONPATH=str(REPO)),
            )  # fmt: skip
        self._owned.set()
        self._released.wait()

    # -- what the API shows -----------------------------------------------------

    def init_log(self) -> str:
        try:
            return (self.folder / "init.log").read_text()[-2000:]
        except OSError:
            return ""

    def log_lines(self) -> list[tuple[float, str]]:
        with self.lock:
            return list(self.lines)

    @property
    def log(self) -> str:
        return "".join(line + "\n" for _, line in self.log_lines())

    @property
    def running(self) -> bool:
        """The Job runs until every pod's container exited 0 (Completions = size)."""
        with self.lock:
            return not all(p.exit_code == 0 for p in self.pods)

    def pod_status(self, index: int) -> dict[str, Any]:
        """What the fake API shows of pod `index`: name, uid, phase and its container."""
        with self.lock:
            pod = self.pods[index]
            if pod.pending_until is not None:
                return {
                    "name": pod.name,
                    "uid": pod.uid,
                    "created": pod.created,
                    "phase": "Pending",
                }
            if pod.exit_code is not None:
                phase = "Succeeded" if pod.exit_code == 0 else "Failed"
                state = {"terminated": {"exitCode": pod.exit_code}}
            else:
                phase, state = "Running", {"running": {"startedAt": pod.created}}
            return {
                "name": pod.name,
                "uid": pod.uid,
                "created": pod.created,
                "phase": phase,
                "state": state,
                "restarts": pod.restarts,
                **(evicted_status(pod.evicted) if pod.evicted else {}),
            }

    # -- faults ---------------------------------------------------------------------

    def lose_pod(self, index: int) -> None:
        """The pod's node is gone: its processes die, and a new pod replaces it later."""
        self._send(["kill", index])
        with self.lock:
            self.pods[index] = self._new_pod(index, replacing=self.pods[index])
            self.pods[index].pending_until = time.monotonic() + self.settings.pending_s

    def restart_container(self, index: int) -> None:
        """The pod's container is killed (OOM, say); OnFailure starts it again."""
        self._send(["kill", index])

    def fill_disk(self, index: int) -> None:
        """Fill the pod's /tmp to the last byte."""
        self.exec(index, ["sh", "-c", "dd if=/dev/zero of=/tmp/kary-fill bs=1M 2>/dev/null; true"])

    def drain(self, rank: int) -> str:
        """`flux resource drain RANK` in the MiniCluster's own instance (from rank 0)."""
        uri = f"local://{CONFIG_ROOT}/run/flux/local"
        flux = f"{self.view}/bin/flux"  # kubectl exec has the image's PATH, not the view's
        return self.exec(0, [flux, "proxy", uri, flux, "resource", "drain", str(rank), "kary-test"])

    def rotate_log(self) -> None:
        """The kubelet rotates rank 0's log now: the API serves only what comes next."""
        with self.lock:
            self.lines, self._log_bytes = [], 0

    def exec(self, index: int, argv: list[str], timeout: float = 30.0) -> str:
        """Run argv in the pod (kubectl exec); its output (RuntimeError if it fails)."""
        ident = uuid.uuid4().hex[:8]
        self._send(["exec", index, ident, argv])
        done = self.folder / f"pod-{index}" / f"exec-{ident}.exit"
        deadline = time.monotonic() + timeout
        while (code := exit_status(done)) is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"exec {argv} in pod {index} did not end")
            time.sleep(0.05)
        out = (self.folder / f"pod-{index}" / f"exec-{ident}.out").read_text()
        if code != 0:
            raise RuntimeError(f"exec {argv} in pod {index}: {out[-500:]}")
        return out

    def stop(self) -> list[int]:
        """Delete the pods: the box's PID 1 ends and the kernel takes every process."""
        self._stopping.set()
        self.watcher.join(timeout=5)
        left = stop_guard(self.process, 5.0)
        self.process.wait(timeout=10)
        self._released.set()
        self.control.close()
        shutil.rmtree(self.folder, ignore_errors=True)
        return left

    # -- the kubelet's side -----------------------------------------------------------

    def _new_pod(self, index: int, replacing: _PodState | None = None) -> _PodState:
        tag = uuid.uuid4().hex[:5]
        return _PodState(
            uid=str(uuid.uuid4()),
            name=f"{self.name}-{index}-{tag}",
            created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            if replacing is None
            else _later(replacing.created),
        )

    def _ready(self) -> set[int]:
        """The pods that are Ready: their container runs (the operator sets no probe)."""
        with self.lock:
            return {
                i
                for i, pod in enumerate(self.pods)
                if pod.pending_until is None and pod.exit_code is None and pod.containers > 0
            }

    def _publish_names(self) -> None:
        """Each pod's /etc/hosts: its own names, and each Ready peer's service name.

        Rewritten in place (each pod's /etc/hosts is a bind mount of its file, so
        a new file by rename would not be seen)."""
        ready = self._ready()
        if ready == self._resolvable:
            return
        self._resolvable = ready
        for index in range(self.size):
            own = f"{self.addresses[index]} {self.names[index]} {self.name}-{index}\n"
            peers = "".join(
                f"{self.addresses[i]} {self.names[i]}\n" for i in sorted(ready) if i != index
            )
            path = self.folder / f"hosts-{index}"
            path.touch()
            with open(path, "r+") as hosts:
                hosts.write("127.0.0.1 localhost\n" + own + peers)
                hosts.truncate()

    def _send(self, request: list[Any]) -> None:
        self.control.write(json.dumps(request) + "\n")
        self.control.flush()

    def _start(self, index: int, new_pod: bool = False) -> None:
        """Start the pod's next container (a new pod's first: `new_pod`, a fresh disk)."""
        with self.lock:
            # Sent before the count shows it: a test that waits for the count and then
            # execs in the pod reaches the new container, not the one before it.
            self._send(["start", index, "new-pod" if new_pod else "container"])
            pod = self.pods[index]
            pod.containers += 1
            pod.exit_code = None

    def _watch(self) -> None:
        """Container exits (restart OnFailure), replacements, and rank 0's log lines."""
        seen: dict[int, int] = {}
        # The container number each pod runs (0: Pending for its first).
        started = {i: self.pods[i].containers for i in range(self.size)}
        while not self._stopping.wait(0.05):
            self._publish_names()
            # Rank 0's log first: once its container shows as ended, its log is whole.
            self._read_rank_zero(started[0])
            for index in range(self.size):
                with self.lock:
                    pod = self.pods[index]
                    if pod.pending_until is not None:
                        if time.monotonic() < pod.pending_until:
                            continue
                        pod.pending_until = None
                        restart = True
                    else:
                        restart = False
                if restart:
                    started[index] += 1
                    if index == 0:
                        self._new_log()
                    self._start(index, new_pod=True)
                    continue
                number = started[index]
                exit_file = self.folder / f"pod-{index}" / f"container-{number}.exit"
                if seen.get(index) == number:
                    continue
                code = exit_status(exit_file)
                if code is None:
                    continue
                seen[index] = number
                if index == 0:
                    self._read_rank_zero(number)
                with self.lock:
                    pod.exit_code = code
                    pod.evicted = read_eviction(self.folder / f"pod-{index}")
                if code != 0 and pod.pending_until is None and pod.evicted is None:
                    with self.lock:
                        pod.restarts += 1
                    started[index] += 1
                    if index == 0:
                        self._new_log()
                    self._start(index)

    def _new_log(self) -> None:
        """A new container of rank 0: the API serves its log, not the old one's."""
        with self.lock:
            self.lines, self._log_bytes, self._partial, self._offset = [], 0, b"", 0

    def _read_rank_zero(self, number: int) -> None:
        path = self.folder / "pod-0" / f"container-{number}.log"
        try:
            with open(path, "rb") as handle:
                handle.seek(self._offset)
                chunk = handle.read()
        except OSError:
            return
        if not chunk:
            return
        now = time.time()
        with self.lock:
            self._offset += len(chunk)
            text = self._partial + chunk
            *complete, self._partial = text.split(b"\n")
            for raw in complete:
                line = raw.decode("utf-8", "replace")
                if self.settings.rotate_bytes and self._log_bytes > self.settings.rotate_bytes:
                    self.lines, self._log_bytes = [], 0
                self.lines.append((now, line))
                self._log_bytes += len(raw) + 1


def exit_status(path: Path) -> int | None:
    """The status in a container's or an exec's `.exit` file; None until it holds one
    whole line.  The pod's holder writes it whole (pod_box_init.py), and a file seen
    empty is not a failure: read as one, it once restarted a container that had exited
    0 (rank 0's, at the end of a cell, so kary failed the cell for a restart that never
    happened; issue 42, item 7)."""
    try:
        text = path.read_text()
    except OSError:
        return None
    if not text.endswith("\n") or not text.strip().lstrip("-").isdigit():
        return None
    return int(text)


def _later(stamp: str) -> str:
    """A creation time after `stamp` (a replacement is always newer)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return now if now > stamp else stamp[:-1] + "1Z"
