"""Messages between emulator processes: a JSON header plus an optional binary payload.

A frame is `>II` (header length, payload length), the UTF-8 JSON header, then
the payload.  Requests carry `op` and, on multiplexed links, `id`; replies
carry the request's `id` and either `ok: true` or `errno` + `error`.

Sockets live in `<root>/sock/<rank>`; FLUX_URI is `local://<root>/sock/<rank>`.
Only the standard library is imported: the flux client starts on every call.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "FRAME",
    "MAX_HEADER",
    "WireError",
    "async_read_frame",
    "connect",
    "encode_frame",
    "rank_socket",
    "read_frame",
    "set_send_buffer",
    "socket_dir_from_uri",
    "uri_for",
    "write_frame",
]

FRAME = struct.Struct(">II")
MAX_HEADER = 1 << 24
SEND_BUFFER = 4 << 20
URI_SCHEME = "local://"


class WireError(Exception):
    """A peer went away or sent something that is not a frame."""


def uri_for(root: str, rank: int) -> str:
    return f"{URI_SCHEME}{rank_socket(root, rank)}"


def rank_socket(root: str, rank: int) -> str:
    return os.path.join(root, "sock", str(rank))


def socket_dir_from_uri(uri: str) -> str:
    """`local://<root>/sock/3` -> `<root>/sock`."""
    if not uri.startswith(URI_SCHEME):
        raise WireError(f"unsupported FLUX_URI {uri!r}")
    return os.path.dirname(uri[len(URI_SCHEME) :])


def encode_frame(header: dict[str, Any], payload: bytes = b"") -> bytes:
    head = json.dumps(header, separators=(",", ":")).encode()
    return FRAME.pack(len(head), len(payload)) + head + payload


def connect(path: str, timeout: float | None = None) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        raise
    return sock


def write_frame(sock: socket.socket, header: dict[str, Any], payload: bytes = b"") -> None:
    try:
        sock.sendall(encode_frame(header, payload))
    except OSError as err:
        raise WireError(f"broker connection lost: {err.strerror or err}") from None


def _recv_into(sock: socket.socket, view: memoryview) -> None:
    got, size = 0, len(view)
    while got < size:
        try:
            n = sock.recv_into(view[got:], size - got)
        except OSError as err:
            raise WireError(f"broker connection lost: {err.strerror or err}") from None
        if n == 0:
            raise WireError("broker connection lost")
        got += n


def read_frame(
    sock: socket.socket, buffer: bytearray | None = None
) -> tuple[dict[str, Any], bytes | memoryview]:
    """The next frame.  With `buffer`, a payload that fits is read into it and
    returned as a view, valid until the next call (fresh 1 MiB allocations
    cost more in page faults than the copy itself)."""
    head = bytearray(FRAME.size)
    _recv_into(sock, memoryview(head))
    head_len, payload_len = FRAME.unpack(head)
    if head_len > MAX_HEADER:
        raise WireError("malformed frame")
    raw = bytearray(head_len)
    _recv_into(sock, memoryview(raw))
    header = json.loads(raw)
    if not payload_len:
        return header, b""
    if buffer is not None and payload_len <= len(buffer):
        view = memoryview(buffer)[:payload_len]
        _recv_into(sock, view)
        return header, view
    payload = bytearray(payload_len)
    _recv_into(sock, memoryview(payload))
    return header, bytes(payload)


def set_send_buffer(sock: socket.socket, size: int = SEND_BUFFER) -> None:
    """Let one write hold a whole blob, so a 1 MiB reply is not sent in 200 KiB slices."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)


async def async_read_frame(reader: asyncio.StreamReader) -> tuple[dict[str, Any], bytes]:
    """The next frame; raises asyncio.IncompleteReadError at a clean end of stream."""
    head_len, payload_len = FRAME.unpack(await reader.readexactly(FRAME.size))
    if head_len > MAX_HEADER:
        raise WireError("malformed frame")
    header = json.loads(await reader.readexactly(head_len))
    payload = await reader.readexactly(payload_len) if payload_len else b""
    return header, payload
