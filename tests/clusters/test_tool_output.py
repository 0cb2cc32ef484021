"""experiments.tool_output: each odd output is one line naming the command and what it wanted."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from experiments.errors import UserError
from experiments.tool_output import ToolOutputError, check_shape, describe, read_json, read_line

CMD = "gcloud container clusters describe c --zone z --format json"
CLUSTER = {"name": str, "status?": str, "resourceLabels?": dict}


def _error(output: str | bytes, expect: object) -> str:
    with pytest.raises(ToolOutputError) as caught:
        read_json(CMD, output, expect)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"`{CMD}` ")
    return message


def test_good_output_comes_back_parsed() -> None:
    out = '{"name": "c", "status": "RUNNING", "extra": [1, 2]}'
    assert read_json(CMD, out, CLUSTER) == {"name": "c", "status": "RUNNING", "extra": [1, 2]}
    assert read_json(CMD, b'[{"name": "a"}]', [{"name": str}]) == [{"name": "a"}]
    # An optional key may be absent or null.
    assert read_json(CMD, '{"name": "c", "status": null}', CLUSTER)["status"] is None


@pytest.mark.parametrize(
    ("output", "expect", "message"),
    [
        ("", dict, f"`{CMD}` printed nothing (expected JSON: an object)"),
        ("  \n\n", [str], f"`{CMD}` printed nothing (expected JSON: a list, each text)"),
        (
            "WARNING: Python 3.8 is deprecated\n{",
            CLUSTER,
            f"`{CMD}` printed something that is not JSON: 'WARNING: Python 3.8 is deprecated' "
            "and 1 more line (expected JSON: an object with name (text), status (text), "
            "resourceLabels (an object))",
        ),
        (
            "[]",
            CLUSTER,
            f"`{CMD}` printed something kary cannot use: the top level is a list, not an object "
            "(expected an object with name (text), status (text), resourceLabels (an object))",
        ),
        (
            '{"status": "RUNNING"}',
            {"name": str},
            f"`{CMD}` printed something kary cannot use: .name is missing "
            "(expected an object with name (text))",
        ),
        (
            '{"name": null}',
            {"name": str},
            f"`{CMD}` printed something kary cannot use: .name is null "
            "(expected an object with name (text))",
        ),
        (
            '{"name": "c", "resourceLabels": ["a=b"]}',
            CLUSTER,
            f"`{CMD}` printed something kary cannot use: .resourceLabels is a list, not an object "
            "(expected an object with name (text), status (text), resourceLabels (an object))",
        ),
        (
            '[{"name": "a"}, {"name": 7}]',
            [{"name": str}],
            f"`{CMD}` printed something kary cannot use: [1].name is an integer, not text "
            "(expected a list, each an object with name (text))",
        ),
        (
            '{"count": true}',
            {"count": int},
            f"`{CMD}` printed something kary cannot use: .count is a boolean, not an integer "
            "(expected an object with count (an integer))",
        ),
    ],
)
def test_odd_output_is_one_line_naming_the_command(
    output: str, expect: object, message: str
) -> None:
    assert _error(output, expect) == message


def test_a_long_line_is_cut_and_secrets_are_not_repeated() -> None:
    message = _error("x" * 500, dict)
    assert "'" + "x" * 57 + "...'" in message
    message = _error("aws_secret_access_key = wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY", dict)
    assert "wJalrXUtnFEMI" not in message


def test_it_is_a_user_error_so_the_cli_reports_one_line_and_exit_2() -> None:
    assert issubclass(ToolOutputError, UserError)


def test_numbers_times_and_descriptions() -> None:
    assert check_shape("x", {"n": 3}, {"n": float}) == {"n": 3}  # an int is a number
    when = datetime(2026, 6, 27, tzinfo=timezone.utc)
    assert check_shape("x", {"at": when}, {"at": datetime}) == {"at": when}
    with pytest.raises(ToolOutputError, match=r"\.at is text, not a time"):
        check_shape("x", {"at": "soon"}, {"at": datetime})
    assert describe([{"name": str}]) == "a list, each an object with name (text)"
    assert describe({}) == "an object"


def test_read_line_takes_one_matching_line() -> None:
    cmd = "gcloud projects describe p --format=value(projectNumber)"
    assert read_line(cmd, "123456789012\n", "[0-9]+", "a project number") == "123456789012"
    with pytest.raises(ToolOutputError) as caught:
        read_line(cmd, "", "[0-9]+", "a project number")
    assert str(caught.value) == f"`{cmd}` printed nothing (expected a project number)"
    with pytest.raises(ToolOutputError) as caught:
        read_line(cmd, "123\n456\n", "[0-9]+", "a project number")
    assert str(caught.value) == f"`{cmd}` printed '123' and 1 more line (expected a project number)"
