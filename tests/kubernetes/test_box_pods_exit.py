"""The pods in a box read a container's exit status only once it is written (issue 42,
item 7).

The pod's holder (pod_box_init.py) writes `container-N.exit` when the container
ends, and the box's watcher (box_pods.py) polls for it.  A file seen between its
creation and its write read as empty, and empty was read as status 1: a container
that had exited 0 was restarted, and kary rightly failed the cell for a restart
(rank 0's, as its driver ended; or rank 2's, its broker leaving after the instance
did).  Under load, 1 run in 3 of the full-worker-disk test in
tests/flux/test_k8s_pods_in_box.py saw it.  No root and no Flux here: the watcher
runs on a box whose pods are files.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from box_pods import BoxPods, PodSettings, _PodState, exit_status


class _Watched:
    """BoxPods' watcher over pod folders in `folder`, with what it would send kept."""

    def __init__(self, folder: Path, size: int) -> None:
        box = object.__new__(BoxPods)
        box.folder, box.size, box.settings = folder, size, PodSettings()
        box.lock = threading.RLock()
        box.lines, box._log_bytes, box._partial, box._offset = [], 0, b"", 0
        # Each pod running its first container (a Pending pod has started none).
        box.pods = [
            _PodState(uid=f"u{i}", name=f"p-{i}", created="t", containers=1) for i in range(size)
        ]
        # What the watcher publishes as pods become Ready (each pod's /etc/hosts).
        box.name, box._resolvable = "p", None
        box.addresses = [f"198.19.0.{i + 1}" for i in range(size)]
        box.names = [f"p-{i}.p" for i in range(size)]
        for i in range(size):
            (folder / f"pod-{i}").mkdir()
        self.sent: list[list[Any]] = []
        self.looks = 0
        box._send = self.sent.append  # type: ignore[method-assign]
        box._read_rank_zero = self._look  # type: ignore[method-assign]
        box._stopping = threading.Event()
        self.box = box
        self.thread = threading.Thread(target=box._watch, daemon=True)
        self.thread.start()

    def _look(self, number: int) -> None:
        self.looks += 1  # once a round, at its start

    def wait_rounds(self, rounds: int) -> None:
        """Until the watcher began `rounds` more rounds: it has looked at every pod since."""
        until = self.looks + rounds
        while self.looks < until:
            assert self.thread.is_alive()
            time.sleep(0.01)

    def stop(self) -> None:
        self.box._stopping.set()
        self.thread.join(timeout=10)


def test_an_exit_file_seen_before_its_status_is_written_restarts_nothing(
    tmp_path: Path,
) -> None:
    watched = _Watched(tmp_path, size=1)
    exit_file = tmp_path / "pod-0" / "container-1.exit"
    try:
        exit_file.touch()  # made, not yet written: what the watcher can see mid-write
        watched.wait_rounds(2)
        exit_file.write_text("0\n")
        watched.wait_rounds(2)
    finally:
        watched.stop()
    pod = watched.box.pods[0]
    assert (pod.exit_code, pod.restarts, watched.sent) == (0, 0, [])


def test_a_non_zero_status_still_restarts_the_container(tmp_path: Path) -> None:
    watched = _Watched(tmp_path, size=2)
    try:
        (tmp_path / "pod-1" / "container-1.exit").write_text("137\n")
        watched.wait_rounds(2)
    finally:
        watched.stop()
    pod = watched.box.pods[1]
    assert (pod.restarts, watched.sent) == (1, [["start", 1, "container"]])


def test_exit_status_is_none_until_the_file_holds_a_whole_line(tmp_path: Path) -> None:
    path = tmp_path / "exec-1.exit"
    assert exit_status(path) is None
    for partial in ("", "1", "\n"):
        path.write_text(partial)
        assert exit_status(path) is None, partial
    path.write_text("0\n")
    assert exit_status(path) == 0
    path.write_text("143\n")
    assert exit_status(path) == 143
