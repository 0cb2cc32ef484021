"""One Flux instance kept up across cells: the nested layout's stand-in for a MiniCluster.

In the nested layout (`--layout nested`) the flux backend starts, per node
count, one test instance of that many brokers (``flux start --test-size=N``)
and runs every cell of that node count in it as a nested instance, exactly as
it does inside a user's allocation (``flux batch -N n``).  On a cluster the
outer instance is the MiniCluster; here it is this, so the same flow is tested
without one.

The outer instance's initial program writes its FLUX_URI to a file and then
waits for its stdin to close: kary holds the other end, so closing it ends the
instance gracefully, and kary's death (the pipe breaks, the session guard gets
its death signal) ends it too.  It runs under `session_guard`, like every
instance kary starts, so no broker outlives it.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from experiments.backends.base import BackendError
from experiments.backends.flux.session_guard import stop_guard
from experiments.backends.flux.site import last_line

__all__ = ["OuterInstance"]

_URI_WAIT_S = 120.0
_CLOSE_WAIT_S = 20.0
# Written by the initial program; cat returns when kary closes the pipe.
_HOLD = 'printf "%s\\n" "$FLUX_URI" >"$1.part" && mv "$1.part" "$1" && exec cat >/dev/null'


@dataclass
class OuterInstance:
    """A test instance of `nodes` brokers that outlives one cell (see the module doc)."""

    flux: str
    nodes: int
    folder: Path
    env: dict[str, str]
    name: str = ""
    uri: str = ""
    started: str = ""
    start_seconds: float = 0.0
    cells: int = 0
    _guard: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> None:
        """Start the instance and wait (bounded) until it says where it listens."""
        uri_file = self.folder / "outer.uri"
        command = [
            sys.executable,
            "-m",
            "experiments.backends.flux.session_guard",
            "--",
            self.flux,
            "start",
            f"--test-size={self.nodes}",
            "bash",
            "-c",
            _HOLD,
            "kary-outer",
            str(uri_file),
        ]
        env = dict(self.env, TMPDIR=str(self.folder))
        env.pop("FLUX_URI", None)
        began = time.monotonic()
        self.name = f"kary-outer-{self.nodes}-{os.getpid()}"
        self.started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        # A file, not a pipe: nobody reads the instance's messages while it runs.
        errors = self.folder / "outer.err"
        try:
            with errors.open("wb") as err_file:
                self._guard = subprocess.Popen(
                    command,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=err_file,
                    start_new_session=True,
                    cwd=self.folder,
                    env=env,
                )
        except OSError as err:
            raise BackendError(f"cannot start the outer instance: {err}") from None
        deadline = began + _URI_WAIT_S
        while not uri_file.exists():
            if self._guard.poll() is not None:
                why = last_line(errors.read_bytes().decode("utf-8", "replace"))[:200]
                self.stop()
                raise BackendError(
                    f"the outer {self.nodes}-broker instance ended before it was up"
                    + (f": {why}" if why else "")
                )
            if time.monotonic() > deadline:
                self.stop()
                raise BackendError(
                    f"the outer {self.nodes}-broker instance was not up after {_URI_WAIT_S:g} s"
                )
            time.sleep(0.05)
        self.uri = uri_file.read_text().strip()
        self.start_seconds = time.monotonic() - began

    @property
    def running(self) -> bool:
        return self._guard is not None and self._guard.poll() is None

    def record(self) -> dict[str, object]:
        """What run.json says of the instance a cell ran nested in."""
        return {
            "name": self.name,
            "nodes": self.nodes,
            "started": self.started,
            "start_seconds": round(self.start_seconds, 3),
            "cell_index": self.cells,
        }

    def stop(self) -> list[int]:
        """End the instance (gracefully first); the pids of its session still alive."""
        guard, self._guard = self._guard, None
        if guard is None:
            return []
        if guard.stdin is not None:
            with contextlib.suppress(OSError):
                guard.stdin.close()
        # Closing stdin ends the instance gracefully; a guard that does not follow is stopped.
        with contextlib.suppress(subprocess.TimeoutExpired):
            guard.wait(timeout=_CLOSE_WAIT_S)
        return stop_guard(guard, _CLOSE_WAIT_S)
