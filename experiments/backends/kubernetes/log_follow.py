"""Follow rank 0's log of a long-lived MiniCluster: read what is new, and notice what was lost.

The nested layout's MiniCluster runs for hours and its rank 0 prints every
cell's output.  Reading the whole log every look costs more each time, and on
a real node it does not even stay whole: the kubelet rotates a container's log
at `containerLogMaxSize` (10 MiB by default) and the API then serves the
current file only.  `LogFollower.read()` asks only for the last stretch
(`sinceSeconds`, with `timestamps=true`, as `kubectl logs --since` does) and
keeps the lines newer than the last one it has.  Lines sharing a timestamp are
told apart by their order, so nothing is kept twice.

When the last line it had is no longer in the log the API serves, the log was
rotated past it (or the container restarted: a new container starts a new
log).  That is routine, not a fault (issue 44, item 1): the driver numbers its
frames (formats/nested_frame `seq`), so the new file is taken when its frames
go on from the last one kary had, and `LogLost` is raised only when a frame is
missing (a gap, or a driver that started again at 1) or the log has no
numbered frame to judge by.  Lines lost between two frames that follow on are
the cell's to report: its end frame counts the lines its job printed
(`CellFrame.lines_lost`).

The Python client has no `sinceTime`; `sinceSeconds` is counted on the
kubelet's clock, so the window is widened by `skew_s` for clocks that differ.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from experiments.backends.kubernetes.api import KubeApi
from experiments.formats.nested_frame import frame_sequence
from experiments.redact import redact

__all__ = ["LogFollower", "LogLost", "split_timestamped"]


class LogLost(Exception):
    """Lines kary never read are gone from the log the API serves, frames among them (or
    no numbered frame tells): it was rotated past them, or the container restarted."""


def split_timestamped(text: str) -> list[tuple[str, str]]:
    """`(timestamp, line)` per line of a `timestamps=true` log; a line the kubelet did
    not stamp (none should be) keeps an empty timestamp."""
    lines = []
    for raw in text.splitlines():
        stamp, _, rest = raw.partition(" ")
        if _timestamp(stamp) is None:
            lines.append(("", raw))
        else:
            lines.append((stamp, rest))
    return lines


def _timestamp(stamp: str) -> float | None:
    """Seconds since the epoch of an RFC 3339 timestamp (nanoseconds kept to the float)."""
    if not stamp or not stamp[:4].isdigit():
        return None
    text = stamp.replace("Z", "+00:00")
    whole, dot, rest = text.partition(".")
    fraction = 0.0
    if dot:
        digits = rest[: len(rest) - len(rest.lstrip("0123456789"))]
        zone = rest[len(digits) :]
        fraction = float(f"0.{digits}") if digits else 0.0
        text = whole + zone
    try:
        return datetime.fromisoformat(text).timestamp() + fraction
    except ValueError:
        return None


@dataclass
class LogFollower:
    """Rank 0's log, one pod's one container, read incrementally (see the module doc)."""

    api: KubeApi
    namespace: str
    pod: str
    container: str | None
    skew_s: float = 120.0
    clock: Callable[[], float] = time.time
    lines: list[str] = field(default_factory=list)
    # How often the log was rotated (or started anew) with nothing lost.
    rotations: int = 0
    _last_stamp: str = ""
    _last_at: float | None = None
    _at_last_stamp: int = 0
    _last_seq: int | None = None  # the last frame's number kary has

    @property
    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)

    def read(self) -> str:
        """The whole log so far, after asking the API for what is new; LogLost when lines
        kary had were dropped (ApiException / ApiUnavailable as the API raises them)."""
        since = None
        if self._last_at is not None:
            since = max(1, math.ceil(self.clock() - self._last_at + self.skew_s))
        served = self.api.call_text(
            "read the rank-0 log",
            self.api.core.read_namespaced_pod_log,
            self.pod,
            self.namespace,
            container=self.container,
            timestamps=True,
            **({"since_seconds": since} if since is not None else {}),
        )
        self._merge(split_timestamped(redact(served)))
        return self.text

    def _merge(self, served: list[tuple[str, str]]) -> None:
        known_at, known_stamp, known_count = self._last_at, self._last_stamp, self._at_last_stamp
        rotated = False
        if known_at is not None:
            same = sum(1 for stamp, _ in served if stamp == known_stamp)
            rotated = same < known_count
            if rotated and self._last_seq is None:
                raise LogLost(
                    f"rank 0's log in pod {self.pod} no longer holds the lines kary read last "
                    "(the kubelet rotated it, or the container restarted) and has no numbered "
                    "frame to tell whether any were lost: a cell's frames may be lost"
                )
        new: list[tuple[str, float, str]] = []
        skipped = 0
        for stamp, line in served:
            at = _timestamp(stamp)
            if at is None:
                continue  # unstamped: cannot be placed, so never kept twice
            if not rotated:  # a rotated log holds only lines kary never had
                if known_at is not None and at < known_at:
                    continue  # read before
                if known_at is not None and stamp == known_stamp and skipped < known_count:
                    skipped += 1
                    continue  # the lines of the last stamp kary had, read before
            new.append((stamp, at, line))
        if rotated and not new:
            return  # the new file is still empty: judged when its lines come
        self._check_sequence([line for _, _, line in new])
        if rotated:
            self.rotations += 1
        for stamp, at, line in new:
            self.lines.append(line)
            if stamp == self._last_stamp:
                self._at_last_stamp += 1
            else:
                self._last_stamp, self._at_last_stamp = stamp, 1
            self._last_at = at

    def _check_sequence(self, new: list[str]) -> None:
        """LogLost when the new lines' frames do not go on from the last one kary has:
        frames between were lost (rotated away unread), or the driver started again."""
        last = self._last_seq
        for line in new:
            seq = frame_sequence(line)
            if seq is None:
                continue
            if last is not None and seq != last + 1:
                raise LogLost(
                    f"rank 0's log in pod {self.pod} no longer holds the lines kary read last "
                    f"and lost frames: after frame {last} it shows frame {seq} (the kubelet "
                    "rotated it past lines kary had not read, or the container restarted)"
                )
            last = seq
        self._last_seq = last
