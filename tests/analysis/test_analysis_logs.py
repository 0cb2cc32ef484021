"""The two log parsers on synthetic logs: failures are failures, damage is reported."""

from __future__ import annotations

import pytest
from analysis_samples import SIZES, kary_log, legacy_log

from analysis.read.kary_log import parse_kary
from analysis.read.log_text import LogText, decode_log, overlay_lines
from analysis.read.records import Step
from analysis.read.seed_log import parse_legacy, parse_real
from experiments.formats.kary_line import format_kary_line


def _text(text: str) -> LogText:
    log = decode_log(text.encode())
    assert isinstance(log, LogText)
    return log


def _steps(steps: list[Step]) -> list[tuple[str, str, float | None, str, str]]:
    return [(s.event, s.size_label, s.seconds, s.status, s.reason) for s in steps]


@pytest.mark.parametrize(
    ("line", "seconds"),
    [
        ("real\t0m1.987s", 1.987),
        ("real\t1m9.978s", 69.978),
        ("real 69.97", 69.97),
        ("real\t1h2m3.500s", 3723.5),
        ("real\t0m2,250s", 2.25),
    ],
)
def test_bash_time_formats(line: str, seconds: float) -> None:
    assert parse_real(f"\n{line}\nuser\t0m0.001s\n") == pytest.approx(seconds)


def test_healthy_legacy_log() -> None:
    legacy = parse_legacy(
        _text(legacy_log(sizes=(1,), events=("create-archive", "clean-all-nodes")))
    )
    assert _steps(legacy.steps) == [
        ("create-archive", "1", 1.001, "ok", ""),
        ("clean-all-nodes", "1", 2.001, "ok", ""),
    ]
    assert legacy.notes == []
    # Made in C (step_of), still Steps: named fields and all.
    first = legacy.steps[0]
    assert type(first) is Step and (first.event, first.size_bytes) == ("create-archive", 2**30)


@pytest.mark.parametrize(
    ("block", "reason"),
    [
        ("[1-5]: Exit 1\n\nreal\t0m0.017s\n", "[1-5]: Exit 1"),
        (
            "flux-archive: /tmp/1gb.txt: No such file or directory\n\nreal\t0m0.015s\n",
            "flux-archive: /tmp/1gb.txt: No such file or directory",
        ),
        ("bash: line 1:  42 Segmentation fault  flux exec\n\nreal\t0m0.2s\n",
         "bash: line 1:  42 Segmentation fault  flux exec"),
        ("flux-exec: Error: rank 3: connection lost\n\nreal\t0m0.1s\n",
         "flux-exec: Error: rank 3: connection lost"),
        ("\nuser\t0m0.001s\nsys\t0m0.000s\n", "no 'real' timing line"),
    ],
)  # fmt: skip
def test_legacy_failures_have_a_reason_and_no_time(block: str, reason: str) -> None:
    log = legacy_log(
        sizes=(1,), events=("distribute-all-nodes",), blocks={"distribute-all-nodes-1": block}
    )
    legacy = parse_legacy(_text(log))
    assert _steps(legacy.steps) == [("distribute-all-nodes", "1", None, "failed", reason)]


def test_broker_log_lines_are_not_step_failures() -> None:
    block = (
        "broker.err[0]: broker on flux-sample-1 (rank 1) has been unresponsive for 30.7s\n"
        "kvs.err[0]: content_load_get: No such file or directory\n"
        "\nreal\t0m3.000s\n"
    )
    log = legacy_log(
        sizes=(1,), events=("distribute-all-nodes",), blocks={"distribute-all-nodes-1": block}
    )
    assert _steps(parse_legacy(_text(log)).steps) == [("distribute-all-nodes", "1", 3.0, "ok", "")]


def test_a_truncated_legacy_log_fails_its_last_step() -> None:
    log = legacy_log(sizes=(1,), events=("create-archive", "distribute-all-nodes"), ended=False)
    log = log[: log.rindex("real")]
    legacy = parse_legacy(_text(log))
    assert _steps(legacy.steps)[-1] == (
        "distribute-all-nodes", "1", None, "failed", "log ends inside this step (truncated)"
    )  # fmt: skip
    assert legacy.notes == [("partial", "log ends inside a step (truncated)")]


def test_duplicated_and_unknown_legacy_events_keep_the_first_and_say_so() -> None:
    log = legacy_log(sizes=(1,), events=("create-archive", "create-archive", "warm-up-cache"))
    legacy = parse_legacy(_text(log))
    assert [s.event for s in legacy.steps] == ["create-archive"]
    assert legacy.notes == [
        ("partial", "duplicate events ignored (first kept): create-archive-1"),
        ("partial", "unknown events ignored: warm-up-cache-1"),
    ]


def test_crlf_ansi_and_progress_bars_are_cleaned() -> None:
    log = legacy_log(sizes=(1,), events=("create-archive",)).replace("\n", "\r\n")
    log = "\x1b[32m50%\r\x1b[0m100%\r\n" + log.replace("EVENT", "\x1b[1mEVENT\x1b[0m")
    legacy = parse_legacy(_text(log))
    assert _steps(legacy.steps) == [("create-archive", "1", 1.001, "ok", "")]
    assert overlay_lines(_text(log).text)[0] == "0 flux-sample-0: full"


def test_decode_refuses_empty_and_binary_files() -> None:
    assert decode_log(b"") == "empty file"
    assert decode_log(b"  \n\n") == "empty file"
    assert decode_log(bytes(range(256)) * 4) == "binary file (not a text log)"
    # NUL bytes inside a real log (a torn write) are dropped, the log is kept.
    log = decode_log(legacy_log(sizes=(1,)).encode().replace(b"NODES", b"\x00NODES"))
    assert isinstance(log, LogText) and "\x00" not in log.text


def test_ping_replies_and_a_failed_ping() -> None:
    log = (
        "EVENT flux-ping-broker-size-0-rank-1\nflux-ping 1!broker\n"
        "1!broker.ping pad=0 seq=0 time=0.517 ms (a0990862!7ce94574!3682af28!e88d74f0)\n"
        "EVENT flux-ping-kvs-size-200-rank-2\nflux-ping 2!kvs\n"
        "flux-ping: 2!kvs.ping: Connection timed out\n"
        "SCRIPT entrypoint\n"
    )
    pings = parse_legacy(_text(log)).pings
    assert [(p.service, p.rank, p.pad_bytes, p.ms, p.hops, p.status, p.reason) for p in pings] == [
        ("broker", 1, 0, 0.517, 4, "ok", ""),
        (
            "kvs",
            2,
            200 * 2**20,
            None,
            None,
            "failed",
            "flux-ping: 2!kvs.ping: Connection timed out",
        ),
    ]


def test_kary_lines_win_over_legacy_lines() -> None:
    kary = parse_kary(_text(kary_log(sizes=("16M",))))
    assert _steps(kary.steps) == [
        ("generate-blob", "16M", 0.25, "ok", ""),
        ("create-archive", "16M", 1.0, "ok", ""),
        ("distribute-all-nodes", "16M", 2.0, "ok", ""),
        ("verify-distribute-all-nodes", "16M", 3.0, "ok", ""),
        ("delete-archive-all-nodes", "16M", 4.0, "ok", ""),
        ("clean-all-nodes", "16M", 5.0, "ok", ""),
    ]
    assert kary.cell["cell"] == "4/kary-2/0"
    assert kary.done == {"meta": "done", "failed_steps": 0}
    assert kary.notes == []


def test_kary_nonzero_rc_is_failed_with_the_error_output() -> None:
    log = kary_log(sizes=("16M",), rc={"distribute-all-nodes-16M": 1})
    kary = parse_kary(_text(log))
    assert _steps(kary.steps)[2] == (
        "distribute-all-nodes", "16M", None, "failed", "exit status 1: [1-3]: Exit 1"
    )  # fmt: skip
    assert kary.notes == []


def test_a_killed_kary_run_fails_the_step_it_was_in() -> None:
    log = kary_log(sizes=("16M",), stop_before="delete-archive-all-nodes-16M", done=False)
    kary = parse_kary(_text(log))
    assert _steps(kary.steps)[-1] == (
        "delete-archive-all-nodes", "16M", None, "failed", "log ends inside this step (truncated)"
    )  # fmt: skip
    assert [s.status for s in kary.steps].count("ok") == 4
    assert kary.notes == [("partial", "no KARY done line: the run was cut short (truncated log)")]


def test_malformed_duplicate_and_unknown_kary_lines() -> None:
    log = kary_log(sizes=("16M",))

    def line(event: str, size: str, seconds: float) -> str:
        record = {"event": event, "size": size, "size_bytes": SIZES[size], "seconds": seconds}
        return format_kary_line({**record, "rc": 0}) + "\n"

    extra = (
        line("create-archive", "16M", 9)
        + line("warm-cache", "16M", 1)
        + "KARY {not json\n"
        + line("clean-all-nodes", "64M", -1)
    )
    log = log.replace('KARY {"meta": "done"', extra + 'KARY {"meta": "done"')
    kary = parse_kary(_text(log))
    assert [s.seconds for s in kary.steps if s.event == "create-archive"] == [1.0]
    assert _steps(kary.steps)[-1] == (
        "clean-all-nodes",
        "64M",
        None,
        "failed",
        "impossible time -1.0",  # the template prints -1.000000
    )
    assert kary.notes == [
        ("partial", "1 malformed KARY line(s) ignored"),
        ("partial", "duplicate events ignored (first kept): create-archive-16M"),
        ("partial", "unknown events ignored: warm-cache"),
        ("warning", "done line counts 0 failed step(s), the log shows 1"),
    ]


@pytest.mark.parametrize(
    ("blocks", "clean"),
    [
        ({}, True),  # flux-distribute's every log
        ({"create-archive-1": "\nreal\t1m9.978s\n"}, True),  # minutes
        ({"create-archive-1": "\nreal 69.97\n"}, True),  # time -p
        ({"create-archive-1": "\nreal\t1h2m3.500s\n"}, False),  # hours
        ({"create-archive-1": "\nreal\t0m2,250s\n"}, False),  # a decimal comma
        ({"create-archive-1": "\nuser\t0m0.001s\n"}, False),  # no real line
        ({"create-archive-1": "\nreal\t0m1.0s\nreal\t0m2.0s\n"}, False),  # two
    ],
)
def test_clean_legacy_logs_take_the_column_path_and_give_the_loops_steps(
    blocks: dict[str, str], clean: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """_clean_steps takes the clean logs, and gives exactly what the line-by-line
    loop gives (which judges every other log)."""
    from analysis.read import seed_log

    log = _text(legacy_log(sizes=(1, 2), blocks=blocks))
    fast = parse_legacy(log)
    monkeypatch.setattr(seed_log, "_clean_steps", lambda found: None)
    slow = parse_legacy(log)
    assert (fast.steps, fast.pings, fast.notes) == (slow.steps, slow.pings, slow.notes)
    assert all(type(step) is Step for step in fast.steps)
    monkeypatch.undo()
    found = seed_log._SCAN.findall("\n" + log.text, log.text.find("\nEVENT"))
    assert (seed_log._clean_steps(found) is not None) == clean


def test_duplicated_or_unknown_events_leave_the_column_path() -> None:
    from analysis.read.seed_log import _archive_keys

    assert _archive_keys(("create-archive-1", "create-archive-1")) is None
    assert _archive_keys(("create-archive-1", "warm-up-cache-1")) is None
    assert _archive_keys(("create-archive-1", "clean-all-nodes-2")) == (
        ("create-archive", "clean-all-nodes"), ("1", "2"), (2**30, 2 * 2**30)
    )  # fmt: skip
