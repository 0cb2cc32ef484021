"""Messages between emulator processes: a small header plus an optional binary payload.

A frame is 8 bytes (header length, payload length; 4 bytes each, big-endian),
the header, then the payload.  Headers are `marshal`-encoded dicts: the flux
client starts once per rank and step, and marshal is built in, where json
(with re and enum behind it) costs more than the client's own work.  Only
processes of one emulated instance talk here, over unix sockets in a private
(0700) folder, all running the same interpreter.

Requests carry `op` and, on multiplexed links, `id`; replies carry the
request's `id` and either `ok: true` or `errno` + `error`.  Sockets live in
`<root>/sock/<rank>`; FLUX_URI is `local://<root>/sock/<rank>`.
"""

from __future__ import annotations

import _socket  # socket.py would pull in enum and selectors on every client start
import marshal
import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs an import too; mypy reads this block
    import asyncio
    from typing import Any

__all__ = [
    "MAX_HEADER",
    "PREFIX_SIZE",
    "BrokerError",
    "WireError",
    "async_read_frame",
    "connect",
    "decode_header",
    "encode_frame",
    "frame_prefix",
    "rank_socket",
    "read_frame",
    "set_send_buffer",
    "socket_dir_from_uri",
    "uri_for",
    "write_frame",
]

PREFIX_SIZE = 8
MAX_HEADER = 1 << 24
SEND_BUFFER = 4 << 20
URI_SCHEME = "local://"


class WireError(Exception):
    """A peer went away or sent something that is not a frame."""


class BrokerError(Exception):
    """A request that fails: errno and message travel back to the caller in its reply."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.errno = code


def uri_for(root: str, rank: int) -> str:
    return f"{URI_SCHEME}{rank_socket(root, rank)}"


def rank_socket(root: str, rank: int) -> str:
    return os.path.join(root, "sock", str(rank))


def socket_dir_from_uri(uri: str) -> str:
    """`local://<root>/sock/3` -> `<root>/sock`."""
    if not uri.startswith(URI_SCHEME):
        raise WireError(f"unsupported FLUX_URI {uri!r}")
    return os.path.dirname(uri[len(URI_SCHEME) :])


def frame_prefix(header_len: int, payload_len: int) -> bytes:
    return header_len.to_bytes(4, "big") + payload_len.to_bytes(4, "big")


def _lengths(prefix: bytes | bytearray) -> tuple[int, int]:
    header_len = int.from_bytes(prefix[:4], "big")
    if header_len > MAX_HEADER:
        raise WireError("malformed frame")
    return header_len, int.from_bytes(prefix[4:8], "big")


def decode_header(raw: bytes | bytearray) -> dict[str, Any]:
    try:
        header = marshal.loads(raw)
    except (EOFError, ValueError, TypeError):
        raise WireError("malformed frame header") from None
    if not isinstance(header, dict):
        raise WireError("malformed frame header")
    return header


def encode_frame(header: dict[str, Any], payload: bytes = b"") -> bytes:
    head = marshal.dumps(header)
    return frame_prefix(len(head), len(payload)) + head + payload


def connect(path: str, timeout: float | None = None) -> _socket.socket:
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        raise
    return sock


def write_frame(sock: _socket.socket, header: dict[str, Any], payload: bytes = b"") -> None:
    try:
        sock.sendall(encode_frame(header, payload))
    except OSError as err:
        raise WireError(f"broker connection lost: {err.strerror or err}") from None


def _recv_into(sock: _socket.socket, view: memoryview) -> None:
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
    sock: _socket.socket, buffer: bytearray | None = None
) -> tuple[dict[str, Any], bytes | memoryview]:
    """The next frame.  With `buffer`, a payload that fits is read into it and
    returned as a view, valid until the next call (fresh 1 MiB allocations
    cost more in page faults than the copy itself)."""
    prefix = bytearray(PREFIX_SIZE)
    _recv_into(sock, memoryview(prefix))
    head_len, payload_len = _lengths(prefix)
    raw = bytearray(head_len)
    _recv_into(sock, memoryview(raw))
    header = decode_header(raw)
    if not payload_len:
        return header, b""
    if buffer is not None and payload_len <= len(buffer):
        view = memoryview(buffer)[:payload_len]
        _recv_into(sock, view)
        return header, view
    payload = bytearray(payload_len)
    _recv_into(sock, memoryview(payload))
    return header, bytes(payload)


def set_send_buffer(sock: Any, size: int = SEND_BUFFER) -> None:
    """Let one write hold a whole blob, so a 1 MiB reply is not sent in 200 KiB slices."""
    try:  # noqa: SIM105 - contextlib is one more import per client start
        sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_SNDBUF, size)
    except OSError:
        pass


async def async_read_frame(reader: asyncio.StreamReader) -> tuple[dict[str, Any], bytes]:
    """The next frame; raises asyncio.IncompleteReadError at a clean end of stream."""
    head_len, payload_len = _lengths(await reader.readexactly(PREFIX_SIZE))
    header = decode_header(await reader.readexactly(head_len))
    payload = await reader.readexactly(payload_len) if payload_len else b""
    return header, payload
