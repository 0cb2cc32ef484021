"""Plumbing of the emulator's `flux` command: errors, a broker handle, option parsing.

Standard library only, and little of it (see wire.py): every rank starts a
client per step.
"""

from __future__ import annotations

import os

from experiments.emulator.wire import (
    WireError,
    connect,
    read_frame,
    socket_dir_from_uri,
    write_frame,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "BLOB_SIZE",
    "EX_NOHOST",
    "FluxError",
    "Handle",
    "broker_handle",
    "option",
    "parse_options",
    "socket_dir",
]

EX_NOHOST = 68
BLOB_SIZE = 1 << 20


class FluxError(Exception):
    """A failed command: printed as `flux-<cmd>: message`, exit `code`."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


class Handle:
    """A connection to one broker, for request/reply calls."""

    def __init__(self, path: str) -> None:
        try:
            self.sock = connect(path)
        except OSError as err:
            raise FluxError(f"cannot connect to broker at {path}: {err.strerror}") from None
        self.buffer = bytearray(BLOB_SIZE)

    def rpc(
        self, header: dict[str, Any], payload: bytes = b""
    ) -> tuple[dict[str, Any], bytes | memoryview]:
        """One request and its reply; a payload is valid until the next call."""
        try:
            write_frame(self.sock, header, payload)
            reply, data = read_frame(self.sock, self.buffer)
        except WireError as err:
            raise FluxError(str(err)) from None
        if not reply.get("ok"):
            raise FluxError(reply.get("error", "error"))
        return reply, data

    def close(self) -> None:
        self.sock.close()


def uri() -> str:
    uri = os.environ.get("FLUX_URI")
    if not uri:
        raise FluxError("FLUX_URI is not set: run this under the kary emulator")
    return uri


def socket_dir() -> str:
    try:
        return socket_dir_from_uri(uri())
    except WireError as err:
        raise FluxError(str(err)) from None


def broker_handle() -> Handle:
    return Handle(uri()[len("local://") :])


def parse_options(
    argv: list[str], with_value: dict[str, str], flags: dict[str, str], stop_at_operand: bool
) -> tuple[dict[str, str | bool], list[str]]:
    """getopt without its import cost: `-n X`, `-nX`, `--name X`, `--name=X`, `-lq`, `--`.

    `with_value` and `flags` map every spelling ("-n", "--name") to a key.
    With `stop_at_operand` the first operand ends the options (flux exec's
    COMMAND...); otherwise options and operands mix (GNU style).
    """
    opts: dict[str, str | bool] = {}
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest.extend(argv[i + 1 :])
            break
        if not arg.startswith("-") or arg == "-":
            if stop_at_operand:
                rest.extend(argv[i:])
                break
            rest.append(arg)
            i += 1
            continue
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if name in with_value:
                if not eq:
                    i += 1
                    if i >= len(argv):
                        raise FluxError(f"option {name} requires an argument")
                    value = argv[i]
                opts[with_value[name]] = value
            elif name in flags and not eq:
                opts[flags[name]] = True
            else:
                raise FluxError(f"unrecognized option {arg!r}")
        else:
            j = 1
            while j < len(arg):
                name = "-" + arg[j]
                if name in with_value:
                    value = arg[j + 1 :]
                    if not value:
                        i += 1
                        if i >= len(argv):
                            raise FluxError(f"option {name} requires an argument")
                        value = argv[i]
                    opts[with_value[name]] = value
                    break
                if name not in flags:
                    raise FluxError(f"unrecognized option {name!r}")
                opts[flags[name]] = True
                j += 1
        i += 1
    return opts, rest


def option(opts: dict[str, str | bool], key: str, default: str) -> str:
    value = opts.get(key, default)
    return value if isinstance(value, str) else default
