"""The fake API server's operator, for real: a MiniCluster's command run on real flux-core.

With `FakeCluster(flux=...)`, creating a MiniCluster does here what the Flux
Operator does on a cluster, on this machine: every pod's `commands.pre` (once:
the pods would share this disk), then the launcher command as the initial
program of a `flux start --test-size=SIZE` instance (the MiniCluster's
brokers).  Rank 0's log is that program's output as it grows; the Job turns
Complete when it exits (rank 0's container exits 0, as under the operator);
deleting the MiniCluster stops the instance, as deleting its pods does.

Paths the manifest writes to (`/tmp/kary-entrypoint`, and the nested driver's
blob cache and cells' statedirs beside it) are moved under a folder of this
MiniCluster's own, so tests never share one; the per-rank folders the
entrypoint uses come from KARY_RANK_ROOT, as in a test instance.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from experiments.backends.flux.session_guard import stop_guard

REPO = Path(__file__).resolve().parents[2]


class FluxPods:
    """One MiniCluster's pods, played by a local Flux instance (see the module doc)."""

    def __init__(self, flux: str, body: dict[str, Any]) -> None:
        container = body["spec"]["containers"][0]
        command = str(container["command"])
        folder = posixpath.dirname(command.split()[-1])
        self.root = Path(tempfile.mkdtemp(prefix="kfo-", dir="/tmp"))
        moved = str(self.root / "entrypoint")
        self.feed_dir = self.root / "feed"
        pre = (container.get("commands") or {}).get("pre") or ""
        self.output = bytearray()
        self.lines: list[tuple[float, str]] = []  # each output line and when it came
        self._partial = b""
        self.lock = threading.Lock()
        env = dict(os.environ)
        env.pop("FLUX_URI", None)
        env.update(
            {
                "TMPDIR": str(self.root),
                "KARY_RANK_ROOT": str(self.root / "ranks"),
                # The nested driver's other folders beside /tmp/kary-entrypoint: here,
                # not in the host's /tmp, where two runs at once (pytest -n) would use,
                # and remove, one cell's statedir (/tmp/kary-nested/4-kary-1-0) together.
                "KARY_BLOB_CACHE": str(self.root / "blobs"),
                "KARY_NESTED_STATE": str(self.root / "nested"),
                # The feed's ConfigMap volume (render_nested.Feed), as the fake kubelet
                # projects it (fake_apiserver.project_feed).
                "KARY_FEED": str(self.feed_dir),
                "PYTHONPATH": str(REPO),
            }
        )
        prepared = subprocess.run(
            ["bash", "-c", pre.replace(folder, moved)], capture_output=True, env=env, check=False
        )
        self._add(prepared.stdout + prepared.stderr)
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "experiments.backends.flux.session_guard",
                "--",
                flux,
                "start",
                f"--test-size={int(body['spec']['size'])}",
                "bash",
                "-c",
                command.replace(folder, moved),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=self.root,
            env=env,
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for chunk in iter(lambda: self.process.stdout.read1(65536), b""):  # type: ignore[union-attr]
            self._add(chunk)

    def _add(self, chunk: bytes) -> None:
        now = time.time()
        with self.lock:
            self.output += chunk
            *complete, self._partial = (self._partial + chunk).split(b"\n")
            self.lines += [(now, raw.decode("utf-8", "replace")) for raw in complete]

    def log_lines(self) -> list[tuple[float, str]]:
        """Rank 0's log as the kubelet keeps it: complete lines, each with its time."""
        with self.lock:
            return list(self.lines)

    @property
    def log(self) -> str:
        with self.lock:
            return self.output.decode("utf-8", "replace")

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> list[int]:
        """Stop the instance (as deleting the pods would); pids that outlived it."""
        left = stop_guard(self.process, 5.0)
        self.process.wait(timeout=10)
        self.reader.join(timeout=5)
        if self.process.stdout is not None:
            self.process.stdout.close()
        shutil.rmtree(self.root, ignore_errors=True)
        return left
