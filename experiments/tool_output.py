"""Check what a tool kary calls printed before kary relies on it.

Every output kary parses from a program or an API (eksctl, gcloud, kubectl,
boto3, the Kubernetes API, flux) goes through here.  Empty, non-JSON or
wrong-shape output becomes a `ToolOutputError`: a UserError (one line, exit 2)
naming the command and what was expected, never a traceback; callers clean up
as for any other failure.

A shape is written like the value it describes:

    dict, list, str, int, float, bool    that type (float takes an int; bool is not an int);
    datetime                             a time (boto3 parses timestamps)
    {"name": str, "tags?": dict}         an object with these keys (others allowed);
                                         a key ending in "?" may be absent or null
    [{"name": str}]                      a list whose items all have that shape

    read_json("gcloud container clusters list", out, [{"name": str}])
    check_shape("EKS DescribeCluster", answer, {"cluster": {"name": str}})
    read_line("gcloud projects describe", out, "[0-9]+", "a project number")
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from experiments.errors import UserError
from experiments.redact import redact

__all__ = ["Shape", "ToolOutputError", "check_shape", "describe", "read_json", "read_line"]

Shape = Any  # a type, a dict of key -> Shape, or a one-item list [Shape]

_NAMES = {
    dict: "an object",
    list: "a list",
    str: "text",
    int: "an integer",
    float: "a number",
    bool: "true or false",
    datetime: "a time",
}
_SNIPPET = 60


class ToolOutputError(UserError):
    """A tool printed something kary cannot use; the message names the command."""


def describe(shape: Shape) -> str:
    """A shape in words: `an object with name (text)`."""
    if isinstance(shape, dict):
        if not shape:
            return "an object"
        keys = ", ".join(f"{key.rstrip('?')} ({describe(sub)})" for key, sub in shape.items())
        return f"an object with {keys}"
    if isinstance(shape, list):
        return f"a list, each {describe(shape[0])}" if shape else "a list"
    return _NAMES.get(shape, getattr(shape, "__name__", str(shape)))


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    for kind in (dict, list, str, int, float, datetime):
        if isinstance(value, kind):
            return _NAMES[kind]
    return type(value).__name__


def _fits(value: Any, kind: type) -> bool:
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _mismatch(value: Any, shape: Shape, path: str) -> str | None:
    """Where `value` first departs from `shape` (`.cluster.name is a number`), else None."""
    where = path or "the top level"
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return f"{where} is {_kind(value)}, not an object"
        for key, sub in shape.items():
            name = key.rstrip("?")
            if value.get(name) is None:
                if key.endswith("?"):
                    continue
                return (
                    f"{path}.{name} is missing" if name not in value else f"{path}.{name} is null"
                )
            if (found := _mismatch(value[name], sub, f"{path}.{name}")) is not None:
                return found
        return None
    if isinstance(shape, list):
        if not isinstance(value, list):
            return f"{where} is {_kind(value)}, not a list"
        if shape:
            for index, item in enumerate(value):
                if (found := _mismatch(item, shape[0], f"{path}[{index}]")) is not None:
                    return found
        return None
    if not _fits(value, shape):
        return f"{where} is {_kind(value)}, not {describe(shape)}"
    return None


def _who(command: str, quote: bool) -> str:
    return f"`{command}`" if quote else command


def check_shape(
    command: str, value: Any, expect: Shape, verb: str = "answered", quote: bool = True
) -> Any:
    """`value` (already parsed, e.g. a boto3 answer) if it has the shape; else ToolOutputError.

    `command` is named in backticks; with `quote=False` it is a phrase (`the
    Kubernetes API at URL, asked to list pods,`).
    """
    problem = _mismatch(value, expect, "")
    if problem is not None:
        raise ToolOutputError(
            f"{_who(command, quote)} {verb} something kary cannot use: {problem} "
            f"(expected {describe(expect)})"
        )
    return value


def _snippet(text: str) -> str:
    """The first non-empty line, short, redacted and quoted; says how many lines follow."""
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    first = redact(lines[0]) if lines else ""
    shown = repr(first if len(first) <= _SNIPPET else first[: _SNIPPET - 3] + "...")
    more = len(lines) - 1
    return shown + (f" and {more} more line{'s' if more > 1 else ''}" if more else "")


def read_json(
    command: str,
    output: str | bytes,
    expect: Shape = dict,
    verb: str = "printed",
    quote: bool = True,
) -> Any:
    """Parse `command`'s output as JSON of shape `expect`; anything else is a ToolOutputError."""
    text = output.decode("utf-8", errors="replace") if isinstance(output, bytes) else output
    who = _who(command, quote)
    wanted = f"expected JSON: {describe(expect)}"
    if not text.strip():
        raise ToolOutputError(f"{who} {verb} nothing ({wanted})")
    try:
        value = json.loads(text)
    except ValueError:
        raise ToolOutputError(
            f"{who} {verb} something that is not JSON: {_snippet(text)} ({wanted})"
        ) from None
    return check_shape(command, value, expect, verb=verb, quote=quote)


def read_line(command: str, output: str, pattern: str, expected: str) -> str:
    """The one line `command` printed, if it matches `pattern` in full; else ToolOutputError."""
    text = output.strip()
    if not text:
        raise ToolOutputError(f"`{command}` printed nothing (expected {expected})")
    if re.fullmatch(pattern, text) is None:
        raise ToolOutputError(f"`{command}` printed {_snippet(text)} (expected {expected})")
    return text
