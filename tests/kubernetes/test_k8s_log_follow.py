"""Rank 0's log followed incrementally: new lines once, lost lines noticed (finding 6)."""

from __future__ import annotations

import pytest

from experiments.backends.kubernetes.log_follow import LogFollower, LogLost, split_timestamped

S1 = "2026-11-26T12:00:00.100000000Z"
S2 = "2026-11-26T12:00:01.250000000Z"


def _follower() -> LogFollower:
    return LogFollower(None, "ns", "pod", None)  # type: ignore[arg-type]


def _served(*lines: tuple[str, str]) -> list[tuple[str, str]]:
    return split_timestamped("".join(f"{stamp} {text}\n" for stamp, text in lines))


def test_lines_sharing_a_timestamp_are_kept_once_each_and_new_ones_appended() -> None:
    follower = _follower()
    follower._merge(_served((S1, "a"), (S1, "b")))
    follower._merge(_served((S1, "a"), (S1, "b"), (S1, "b"), (S2, "c")))
    follower._merge(_served((S1, "b"), (S2, "c")))  # a window that starts later
    assert follower.lines == ["a", "b", "b", "c"]


def test_a_log_that_lost_the_last_lines_read_is_lost_not_waited_on() -> None:
    """The kubelet rotated the log (or the container restarted): what comes now starts
    after lines kary never read, so a cell's begin frame may be among them."""
    follower = _follower()
    follower._merge(_served((S1, "begin"), (S2, "step")))
    with pytest.raises(LogLost, match="no longer holds the lines kary read last"):
        follower._merge(_served(("2026-11-26T12:00:05.000000000Z", "end")))
