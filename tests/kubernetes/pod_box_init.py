"""PID 1 of a MiniCluster's pods in a box: each pod a node of its own, as on a cluster.

    unshare --pid --fork --kill-child --mount-proc --net \\
        python tests/kubernetes/pod_box_init.py FOLDER/pods.json

Like experiments/box/init.py (whose bridge and veth code it shares), with a
pod where the box has a broker.  Each pod is a holder process, the pod's
"pause container": it makes the pod's namespaces and then starts, kills and
execs its container on request, so a container can restart in the same pod
(same network, same disk) as the kubelet restarts one.  A pod has

- its own network namespace (an address on the box's bridge), and its own
  UTS namespace with the pod's hostname, `<minicluster>-<index>`;
- its own mount namespace: /tmp is a tmpfs of the pod's disk size (the pod's
  ephemeral disk: a write past it fails with ENOSPC), host folders under /tmp
  the pod needs (this repository, Flux, the box folder) bound back in as a
  pod's volumes would be, and /etc/hosts from FOLDER/hosts-<i>, which the host
  side keeps as the cluster's DNS answers (box_pods.py: a peer's headless
  service name, `<name>-<i>.<service>.<namespace>.svc.cluster.local`, only
  while that peer is Ready);
- a fresh writable layer for each restarted container: /tmp emptied but for
  the operator's volume (`config_root`) and what is bound in; a new pod's
  (`["start", i, "new-pod"]`, a lost pod's replacement) loses that volume too;
- its containers' output in FOLDER/pod-<i>/container-<n>.log and exit status
  in container-<n>.exit (the host side, box_pods.py, serves rank 0's log).  A
  container runs on a terminal, as the Flux Operator runs its application
  container (flux-operator 0d75cef8, controllers/flux/containers.go: `TTY:
  true`): a pseudo-terminal is its stdin, stdout and stderr, and its line
  discipline ends every line `\r\n`, as the API serves a real pod's log.  An
  exec has none (`kubectl exec` without -t).

Requests come on the FIFO FOLDER/control, one JSON list per line:
`["start", i, "container" | "new-pod"]`, `["kill", i]` (every process of the pod, its brokers too),
`["exec", i, id, argv]` (output and status in FOLDER/pod-<i>/exec-<id>.*).
When this program ends, however it ends, the kernel kills every process of
its PID namespace, and every pod's namespaces, links and tmpfs go with them.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import select
import shutil
import signal
import sys
import termios
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from box_kubelet import disk_pressure, write_eviction

from experiments.box.init import BRIDGE
from experiments.proctable import descendants

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUTS = 0x04000000
_CLONE_NEWNET = 0x40000000
_MS_BIND, _MS_REC, _MS_PRIVATE = 4096, 16384, 1 << 18
_PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER = 1, 36
_LIBC = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    _check(
        _LIBC.mount(
            source.encode(),
            target.encode(),
            fstype.encode() if fstype else None,
            flags,
            data.encode() if data else None,
        ),
        f"mount {source} on {target}",
    )


def _sh(command: list[str], stdin: str | None = None) -> None:
    import subprocess

    done = subprocess.run(command, input=stdin, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"`{' '.join(command)}`: {done.stderr.strip()[-200:]}")


class _Pod:
    """The holder of pod `index`, seen from init: its pid and its request pipe."""

    def __init__(self, spec: dict[str, Any], index: int) -> None:
        self.index = index
        requests_read, self.requests = os.pipe()
        ready_read, ready_write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover - the holder never returns
            os.close(self.requests)
            os.close(ready_read)
            code = 1
            try:
                _Holder(spec, index, requests_read, ready_write).serve()
                code = 0
            except BaseException as err:  # a holder reports and exits
                with contextlib.suppress(OSError):
                    os.write(2, f"pod box: pod {index}: {err}\n".encode())
            os._exit(code)
        os.close(requests_read)
        os.close(ready_write)
        with os.fdopen(ready_read, "rb") as ready:
            if ready.read(1) != b"1":
                raise RuntimeError(f"pod {index} could not make its namespaces")

    def send(self, request: list[Any]) -> None:
        os.write(self.requests, (json.dumps(request) + "\n").encode())


class _Holder:
    """Inside pod `index`: makes its namespaces, then serves start / kill / exec."""

    def __init__(self, spec: dict[str, Any], index: int, requests: int, ready: int) -> None:
        self.spec, self.index, self.requests = spec, index, requests
        self.folder = Path(spec["folder"])
        self.pod_dir = self.folder / f"pod-{index}"
        self.container: int | None = None
        self.pump: threading.Thread | None = None  # the container terminal's copier
        self.count = 0
        self.execs: dict[int, str] = {}
        self.evicted = False
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # Orphans of the pod (a daemonised broker) come back here, as to a pause container.
        _LIBC.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        _check(_LIBC.unshare(_CLONE_NEWNET | _CLONE_NEWUTS | _CLONE_NEWNS), "unshare")
        os.write(ready, b"1")
        os.close(ready)
        go = os.read(self.requests, 2)
        if go != b"g\n":
            raise RuntimeError("init went away before the pod's link existed")
        host = spec["hosts"][index].encode()
        _check(_LIBC.sethostname(host, len(host)), "sethostname")
        self._mount_disk()
        _sh(
            ["ip", "-batch", "-"],
            "link set lo up\n"
            f"address add {spec['addresses'][index]}/{spec['prefix_length']} dev eth0\n"
            "link set eth0 up\n",
        )

    def _mount_disk(self) -> None:
        """/tmp as the pod's disk, the host folders it needs bound back, /etc/hosts."""
        _mount("none", "/", None, _MS_REC | _MS_PRIVATE, None)
        host_tmp = os.open("/tmp", os.O_PATH | os.O_DIRECTORY)
        size = int(self.spec["disk_bytes"][self.index])
        _mount("tmpfs", "/tmp", "tmpfs", 0, f"size={size},mode=1777")
        for path in self.spec["keep_paths"]:
            relative = os.path.relpath(path, "/tmp")
            if relative.startswith(".."):
                continue  # not under /tmp: the pod sees it as it is
            os.makedirs(path, exist_ok=True)
            _mount(f"/proc/self/fd/{host_tmp}/{relative}", path, None, _MS_BIND | _MS_REC, None)
        os.close(host_tmp)
        _mount(str(self.folder / f"hosts-{self.index}"), "/etc/hosts", None, _MS_BIND, None)

    def serve(self) -> None:
        buffered = b""
        while True:
            ready, _, _ = select.select([self.requests], [], [], 0.05)
            if ready:
                chunk = os.read(self.requests, 4096)
                if not chunk:
                    return  # init is gone; so is the box
                buffered += chunk
                while b"\n" in buffered:
                    line, buffered = buffered.split(b"\n", 1)
                    self._handle(json.loads(line))
            self._reap()
            self._kubelet_look()

    def _kubelet_look(self) -> None:
        """The fake kubelet (box_kubelet.py): evict the pod once its disk runs low."""
        percent = self.spec.get("eviction_free_percent")
        if percent is None or self.container is None or self.evicted:
            return
        seen = disk_pressure("/tmp", percent)
        if seen is not None:
            self.evicted = True
            write_eviction(self.pod_dir, seen)
            self._kill_all()

    def _handle(self, request: list[Any]) -> None:
        verb = request[0]
        if verb == "start" and self.container is None:
            if self.count:
                self._fresh_layer(keep_volume=request[2] != "new-pod")
            self.count += 1
            self.container = self._spawn(
                ["bash", str(self.folder / "pod.sh")],
                self.pod_dir / f"container-{self.count}.log",
                tty=True,
            )
        elif verb == "kill":
            self._kill_all()
        elif verb == "exec":
            pid = self._spawn([str(a) for a in request[3]], self.pod_dir / f"exec-{request[2]}.out")
            self.execs[pid] = str(request[2])

    def _fresh_layer(self, keep_volume: bool) -> None:
        """Empty /tmp as a new container's writable layer is, keeping the operator's
        volume (unless the pod is new) and every folder bound in or mounted under it."""
        keep = list(self.spec["keep_paths"]) + _mount_points()
        if keep_volume:
            keep.append(self.spec["config_root"])
        for entry in os.scandir("/tmp"):
            # A path that holds something kept is left whole: never reach into a bind mount.
            if any(k == entry.path or k.startswith(entry.path + "/") for k in keep):
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)

    def _spawn(self, argv: list[str], output: Path, tty: bool = False) -> int:
        log = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        terminal = os.openpty() if tty else None
        pid = os.fork()
        if pid == 0:  # pragma: no cover - execs
            try:
                os.setsid()
                if terminal is not None:
                    os.close(terminal[0])
                    fcntl.ioctl(terminal[1], termios.TIOCSCTTY, 0)
                    for fd in (0, 1, 2):
                        os.dup2(terminal[1], fd)
                else:
                    os.dup2(log, 1)
                    os.dup2(log, 2)
                    devnull = os.open(os.devnull, os.O_RDONLY)
                    os.dup2(devnull, 0)
                os.chdir("/tmp")
                env = dict(self.spec["env"], HOSTNAME=self.spec["hosts"][self.index])
                os.execvpe(argv[0], argv, env)
            except BaseException as err:
                os.write(2, f"pod box: {argv[0]}: {err}\n".encode())
            os._exit(127)
        if terminal is None:
            os.close(log)
            return pid
        os.close(terminal[1])
        self.pump = threading.Thread(target=_pump, args=(terminal[0], log), daemon=True)
        self.pump.start()
        return pid

    def _kill_all(self) -> None:
        """SIGKILL every process of the pod but the holder (all are its descendants)."""
        for _ in range(20):
            pids = descendants(os.getpid())
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)
            self._reap()

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            code = os.waitstatus_to_exitcode(status)
            code = code if code >= 0 else 128 - code
            if pid == self.container:
                self.container = None
                # Its last lines reach the log before its status does (the host side
                # reads the log whole once the status is there); a process left
                # holding the terminal does not keep the status back.
                if self.pump is not None:
                    self.pump.join(timeout=2.0)
                _write_status(self.pod_dir / f"container-{self.count}.exit", code)
            elif pid in self.execs:
                _write_status(self.pod_dir / f"exec-{self.execs.pop(pid)}.exit", code)


def _pump(master: int, log: int) -> None:
    """Copy what the container writes on its terminal to its log, until the terminal's
    last holder closes it."""
    try:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: no process holds the terminal any more
                return
            if not data:
                return
            os.write(log, data)
    finally:
        os.close(master)
        os.close(log)


def _write_status(path: Path, code: int) -> None:
    """An exit status, whole or not at all: the host side (box_pods.py) polls for the
    file, and one seen between its creation and its write read as empty."""
    part = path.with_name(path.name + ".part")
    part.write_text(f"{code}\n")
    os.replace(part, path)


def _mount_points() -> list[str]:
    """Where something is mounted in this mount namespace (/proc/self/mountinfo)."""
    with open("/proc/self/mountinfo") as info:
        return [line.split()[4] for line in info if len(line.split()) > 4]


def _serve_control(spec: dict[str, Any], pods: list[_Pod]) -> None:
    """Forward requests from the FIFO to the pods' holders; reap what comes to PID 1."""
    control = os.open(Path(spec["folder"]) / "control", os.O_RDWR | os.O_NONBLOCK)
    buffered = b""
    while True:
        ready, _, _ = select.select([control], [], [], 0.1)
        if ready:
            buffered += os.read(control, 65536)
            while b"\n" in buffered:
                line, buffered = buffered.split(b"\n", 1)
                request = json.loads(line)
                pods[int(request[1])].send(request)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] != 0:
                pass


def main(path: str) -> int:
    spec = json.loads(Path(path).read_text())
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    _sh(
        ["ip", "-batch", "-"],
        f"link set lo up\nlink add {BRIDGE} type bridge\nlink set {BRIDGE} up\n",
    )
    pods = [_Pod(spec, i) for i in range(len(spec["hosts"]))]
    _sh(
        ["ip", "-batch", "-"],
        "".join(
            f"link add h{p.index} type veth peer name eth0 netns {p.pid}\n"
            f"link set h{p.index} master {BRIDGE} up\n"
            for p in pods
        ),
    )
    for pod in pods:
        os.write(pod.requests, b"g\n")
    (Path(spec["folder"]) / "ready").write_text("1\n")
    _serve_control(spec, pods)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
