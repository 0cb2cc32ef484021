"""Rank 0's log followed incrementally: new lines once, lost lines noticed (finding 6)."""

from __future__ import annotations

import pytest

from experiments.backends.kubernetes.log_follow import LogFollower, LogLost, split_timestamped
from experiments.formats.nested_frame import format_frame

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


def _frame(seq: int, event: str = "end") -> str:
    return format_frame(event, "c", seq=seq)


S3 = "2026-11-26T12:00:05.000000000Z"
S4 = "2026-11-26T12:00:06.000000000Z"


def test_a_rotation_whose_frames_follow_on_lost_nothing_and_is_taken() -> None:
    """The kubelet rotates at containerLogMaxSize as a matter of course (issue 44,
    item 1): the new file's first frame is the next one, so no frame was lost."""
    follower = _follower()
    follower._merge(_served((S1, _frame(1, "begin")), (S2, "step")))
    follower._merge(_served((S3, "more"), (S4, _frame(2))))  # the old file is gone
    assert follower.lines == [_frame(1, "begin"), "step", "more", _frame(2)]
    assert follower.rotations == 1
    follower._merge(_served((S3, "more"), (S4, _frame(2))))  # read again: kept once
    assert len(follower.lines) == 4 and follower.rotations == 1


def test_a_rotation_that_took_frames_or_a_driver_started_again_is_lost() -> None:
    for first_new in (3, 1):  # frame 2 rotated away unread; a restarted driver's first
        follower = _follower()
        follower._merge(_served((S1, _frame(1, "begin")), (S2, "step")))
        with pytest.raises(LogLost, match=f"after frame 1 it shows frame {first_new}"):
            follower._merge(_served((S3, _frame(first_new))))
        assert follower.lines == [_frame(1, "begin"), "step"]  # nothing of it kept


def test_a_rotated_log_still_empty_is_judged_once_when_its_lines_come() -> None:
    follower = _follower()
    follower._merge(_served((S1, _frame(1, "begin"))))
    follower._merge([])  # rotated: the new file has nothing yet
    follower._merge(_served((S3, _frame(2))))
    assert follower.lines == [_frame(1, "begin"), _frame(2)] and follower.rotations == 1
