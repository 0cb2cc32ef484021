"""Judging a cell from its log and exit status; redacting secrets from logs."""

from __future__ import annotations

import pytest
from fake_backend import fake_log

from experiments.backends import RunResult
from experiments.execution.outcome import judge, summarize_log
from experiments.model.plan import Cell
from experiments.redact import redact

CELL = Cell(4, "kary:2", 0, (16 * 2**20, 64 * 2**20), ("all",))


def test_a_clean_log_with_rc_0_succeeds() -> None:
    verdict = judge(RunResult(fake_log(CELL, seconds=0.25), rc=0))
    assert (verdict.state, verdict.error) == ("succeeded", None)
    assert len(verdict.log.steps) == 4 and verdict.log.step_seconds == 1.0
    assert verdict.log.meta is not None and verdict.log.meta["cell"] == "4/kary-2/0"


@pytest.mark.parametrize(
    ("log", "rc", "error"),
    [
        (fake_log(CELL), 1, "the entrypoint exited with 1"),
        (
            fake_log(CELL, failed={"distribute-all-nodes"}),
            0,
            "2 of 4 steps failed: distribute-all-nodes 16M (rc 1), distribute-all-nodes 64M (rc 1)",
        ),
        (
            fake_log(CELL).replace('KARY {"meta": "done", "failed_steps": 0}\n', ""),
            0,
            "the benchmark did not finish (no KARY done line)",
        ),
        ("EVENT create-archive-1G\nreal 0m1.0s\n", 0, "the log has no KARY step lines"),
        (fake_log(CELL), None, "the entrypoint's exit status is unknown"),
    ],
)
def test_anything_less_is_a_failure_with_a_reason(log: str, rc: int | None, error: str) -> None:
    verdict = judge(RunResult(log, rc=rc))
    assert (verdict.state, verdict.error) == ("failed", error)


def test_a_timeout_says_so_first() -> None:
    log = fake_log(CELL, failed={"create-archive"})
    verdict = judge(RunResult(log, rc=None, timed_out=True, error="timed out after 5 s"))
    assert verdict.state == "timeout"
    assert verdict.error is not None and verdict.error.startswith("timed out after 5 s; 2 of 4")


def test_damaged_kary_lines_are_ignored() -> None:
    summary = summarize_log('KARY {"event": \nKARY [1]\nKARY {"event": "x", "rc": 0}\n')
    assert [s["event"] for s in summary.steps] == ["x"]


def test_redact_curve_keys_and_aws_credentials() -> None:
    text = (
        "#   ****  Generated on 2024-01-01 by pyzmq  ****\n"
        "curve\n"
        '    public-key = "abc"\n'
        '    secret-key = "v1c[s!ab}}>>0"\n'
        "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
        '"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",\n'
        "aws_session_token = FwoGZXIvYXdzEXAMPLETOKENVALUE1234\n"
        "id AKIAIOSFODNN7EXAMPLE in a sentence\n"
        'KARY {"event": "create-archive", "rc": 0}\n'
    )
    assert redact(text) == (
        "#   ****  Generated on 2024-01-01 by pyzmq  ****\n"
        "curve\n"
        '    public-key = "abc"\n'
        "    secret-key = <redacted>\n"
        "export AWS_SECRET_ACCESS_KEY=<redacted>\n"
        '"SecretAccessKey": "<redacted>",\n'
        "aws_session_token = <redacted>\n"
        "id <redacted> in a sentence\n"
        'KARY {"event": "create-archive", "rc": 0}\n'
    )
