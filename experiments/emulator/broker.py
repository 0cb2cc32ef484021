"""One emulated Flux broker: an asyncio server on `<root>/sock/<rank>`.

What it does, as flux-core's broker does for the commands kary uses:

- content: `load` answers from the LRU cache; a miss asks the parent (rank 0:
  its backing store), and concurrent misses for one blob share one upstream
  request.  `store` (rank 0) writes the backing store.
- kvs (rank 0 holds it; other ranks forward up the tree): `get` (optionally
  waiting for the key to appear), `put`, `unlink`.  Archives are KVS keys
  `archive.<name>` whose value lists each file's blobrefs.
- `exec`: runs a command as this rank (FLUX_URI and KARY_RANK_PREFIX set for
  it) and streams its output and exit status back; a client that goes away
  takes its process with it.
- `getattr`, `overlay`, `stats`, `reload`, `dropcache`: broker attributes,
  the overlay text, content-cache statistics, a content-module reload, and
  dropping the cache (`flux content dropcache`).
- `ping` (`flux ping`): routed to its rank through the brokers between, down
  the tree as well as up (emulator/routing.py), and answered there.

Replies to a child broker go through this node's `Egress` (shared bandwidth,
latency); the request up to the parent waits `latency` too.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import itertools
import marshal
import os
import signal
import sys
from dataclasses import dataclass, field
from typing import Any

from experiments.emulator.content import BACKING_MODULE, ContentCache, Egress
from experiments.emulator.cpu import CpuCosts, burn
from experiments.emulator.kvs import Kvs
from experiments.emulator.rexec import exec_cwd, exec_env, run_command
from experiments.emulator.routing import Router
from experiments.emulator.wire import (
    BrokerError,
    WireError,
    async_read_frame,
    encode_frame,
    frame_prefix,
    rank_socket,
    set_send_buffer,
    uri_for,
)

__all__ = ["BrokerConfig", "BrokerError", "run_broker"]

_STREAM_LIMIT = 4 << 20
_CONNECT_TIMEOUT = 60.0


@dataclass
class BrokerConfig:
    rank: int
    size: int
    parent: int
    topo: str
    root: str
    name: str = "flux-sample"
    bandwidth: float | None = None
    latency: float = 0.0
    purge_target_size: int = 16 << 20
    cpu: CpuCosts = field(default_factory=CpuCosts)
    # Fault injection for tests: {"corrupt": True} flips a byte of every blob
    # handed to a local client; {"kill_after_loads": N} SIGKILLs this broker
    # after serving N blobs to local clients.
    faults: dict[str, Any] = field(default_factory=dict)

    @property
    def prefix(self) -> str:
        return os.path.join(self.root, "ranks", str(self.rank))


@dataclass
class _Conn:
    writer: asyncio.StreamWriter
    child: int | None = None  # the child broker's rank, for a TBON link


class Broker:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.rank = config.rank
        self.cache = ContentCache(config.purge_target_size)
        self.egress = Egress(config.bandwidth, config.latency)
        self.kvs = Kvs()  # rank 0's; the others forward to it
        self._inflight: dict[str, asyncio.Future[bytes]] = {}
        self._pending: dict[int, asyncio.Future[tuple[dict[str, Any], bytes]]] = {}
        self._ids = itertools.count(1)
        self._up_writer: asyncio.StreamWriter | None = None
        self._up_lost: str | None = None
        self._local_loads = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._store_dir = os.path.join(config.root, "content")
        from experiments.model.topology import build_tree

        parents = build_tree(config.topo, config.size).parents
        self.router = Router(self.rank, config.parent, parents, self.egress, self._upstream)

    # ---- lifecycle -------------------------------------------------------

    async def serve(self, ready_fd: int | None) -> None:
        path = rank_socket(self.config.root, self.rank)
        await asyncio.start_unix_server(self._on_connect, path=path, limit=_STREAM_LIMIT)
        if self.config.parent >= 0:
            await self._connect_parent()
        if ready_fd is not None:
            os.write(ready_fd, b".")
            os.close(ready_fd)
        await asyncio.Event().wait()  # until the launcher stops us

    async def _connect_parent(self) -> None:
        path = rank_socket(self.config.root, self.config.parent)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _CONNECT_TIMEOUT
        while True:
            try:
                reader, writer = await asyncio.open_unix_connection(path, limit=_STREAM_LIMIT)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                if loop.time() > deadline:
                    raise
                await asyncio.sleep(0.01)
        set_send_buffer(writer.get_extra_info("socket"))
        writer.write(encode_frame({"op": "hello", "rank": self.rank}))
        self._up_writer = writer
        self._spawn(self._read_upstream(reader))

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # ---- upstream (toward rank 0) -----------------------------------------

    async def _read_upstream(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                header, payload = await async_read_frame(reader)
                if header.get("down"):  # a request the parent routes down to us
                    self._spawn(self._answer_parent(header, payload))
                    continue
                fut = self._pending.pop(header.get("id", -1), None)
                if fut is not None and not fut.done():
                    fut.set_result((header, payload))
        except (asyncio.IncompleteReadError, ConnectionError, WireError):
            pass
        self._up_lost = f"lost contact with parent broker rank {self.config.parent}"
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(BrokerError(errno.EHOSTUNREACH, self._up_lost))
        self._pending.clear()

    async def _upstream(
        self, header: dict[str, Any], payload: bytes = b""
    ) -> tuple[dict[str, Any], bytes]:
        """Send a request to the parent and wait for its reply."""
        if self._up_writer is None or self._up_lost:
            raise BrokerError(errno.EHOSTUNREACH, self._up_lost or "no parent broker")
        if self.config.latency:
            await asyncio.sleep(self.config.latency)
            if self._up_lost:
                raise BrokerError(errno.EHOSTUNREACH, self._up_lost)
        rid = next(self._ids)
        fut: asyncio.Future[tuple[dict[str, Any], bytes]] = (
            asyncio.get_running_loop().create_future()
        )
        self._pending[rid] = fut
        self._up_writer.write(encode_frame({**header, "id": rid}, payload))
        # A lost connection is noticed by the reader, which fails every pending request.
        with contextlib.suppress(ConnectionError):
            await self._up_writer.drain()
        reply, data = await fut
        if not reply.get("ok"):
            raise BrokerError(reply.get("errno", errno.EIO), reply.get("error", "error"))
        return reply, data

    async def _answer_parent(self, header: dict[str, Any], payload: bytes) -> None:
        reply, data = await self.router.answer_parent(header, payload)
        if self.config.latency:  # the way up, as for our own requests
            await asyncio.sleep(self.config.latency)
        writer = self._up_writer
        if writer is not None and not writer.is_closing():
            writer.write(encode_frame(reply, data))
            with contextlib.suppress(ConnectionError):
                await writer.drain()

    # ---- content ----------------------------------------------------------

    async def load(self, key: str) -> bytes:
        blob = self.cache.get(key)
        if blob is not None:
            return blob
        if self.rank == 0:
            try:
                with open(os.path.join(self._store_dir, key), "rb") as handle:
                    blob = handle.read()
            except (FileNotFoundError, ValueError):
                raise BrokerError(errno.ENOENT, f"content {key[:12]}: not found") from None
        else:
            fut = self._inflight.get(key)
            if fut is None:
                fut = asyncio.get_running_loop().create_task(self._load_upstream(key))
                self._inflight[key] = fut
                fut.add_done_callback(lambda _f: self._inflight.pop(key, None))
            # shield: one waiter going away must not cancel the shared request.
            blob = await asyncio.shield(fut)
        self.cache.put(key, blob)
        return blob

    async def _load_upstream(self, key: str) -> bytes:
        _, data = await self._upstream({"op": "load", "hash": key})
        burn(self.config.cpu.relay_ms, len(data))
        return data

    async def store(self, key: str, blob: bytes) -> None:
        if self.rank != 0:
            await self._upstream({"op": "store", "hash": key}, blob)
        else:
            path = os.path.join(self._store_dir, key)
            if not os.path.exists(path):
                tmp = f"{path}.{os.getpid()}.tmp"
                with open(tmp, "wb") as handle:
                    handle.write(blob)
                os.replace(tmp, path)
        self.cache.put(key, blob)

    def _store_stats(self) -> dict[str, Any]:
        """What content-sqlite's stats say of the backing store: its object count (rank 0)."""
        if self.rank != 0:
            raise BrokerError(errno.ENOSYS, f"{BACKING_MODULE} is loaded on rank 0 only")
        names = [n for n in os.listdir(self._store_dir) if not n.endswith(".tmp")]
        return {"object_count": len(names)}

    def _collect_garbage(self) -> None:
        """Drop backing-store blobs that no archive refers to any more (rank 0)."""
        live = self.kvs.blobrefs()
        for name in os.listdir(self._store_dir):
            if name not in live and not name.endswith(".tmp"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(self._store_dir, name))

    # ---- kvs (rank 0) -----------------------------------------------------

    async def kvs_get(self, key: str, wait: bool) -> Any:
        if self.rank != 0:
            reply, _ = await self._upstream({"op": "kvs.get", "key": key, "wait": wait})
            return reply["value"]
        return await self.kvs.get(key, wait)

    async def kvs_put(self, key: str, value: Any, exclusive: bool) -> None:
        if self.rank != 0:
            await self._upstream({"op": "kvs.put", "key": key, "value": value, "excl": exclusive})
            return
        self.kvs.put(key, value, exclusive)

    async def kvs_unlink(self, key: str) -> None:
        if self.rank != 0:
            await self._upstream({"op": "kvs.unlink", "key": key})
            return
        self.kvs.unlink(key)
        self._collect_garbage()

    # ---- requests ---------------------------------------------------------

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = _Conn(writer)
        set_send_buffer(writer.get_extra_info("socket"))
        tasks: set[asyncio.Task[Any]] = set()
        try:
            while True:
                header, payload = await async_read_frame(reader)
                if header.get("op") == "hello":
                    conn.child = int(header["rank"])
                    self.router.down.attach(conn.child, writer)
                    continue
                if header.get("down"):  # a child's reply to a request we routed down
                    self.router.down.answer(header, payload)
                    continue
                task = self._spawn(self._dispatch(conn, header, payload))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        except (asyncio.IncompleteReadError, ConnectionError, WireError):
            pass
        finally:
            # A client that went away takes its requests (and exec'd processes) along.
            for task in list(tasks):
                task.cancel()
            if conn.child is not None:
                self.router.down.detach(conn.child)
            writer.close()

    async def _reply(self, conn: _Conn, header: dict[str, Any], payload: bytes = b"") -> None:
        if conn.child is not None and self.egress.shaped:
            await asyncio.sleep(self.egress.delay(len(payload) + 64))
        if conn.writer.is_closing():
            return
        head = marshal.dumps(header)
        # Two writes, no await between them: the frame stays contiguous and
        # a 1 MiB blob is not copied into a joined buffer first.
        conn.writer.write(frame_prefix(len(head), len(payload)) + head)
        if payload:
            conn.writer.write(payload)
        with contextlib.suppress(ConnectionError):
            await conn.writer.drain()

    async def _dispatch(self, conn: _Conn, header: dict[str, Any], payload: bytes) -> None:
        rid = header.get("id")
        if header.get("op") == "exec":
            config = self.config
            await run_command(
                functools.partial(self._reply, conn),
                rid,
                [str(a) for a in header["argv"]],
                exec_env(header.get("env") or {}, uri_for(config.root, self.rank), config.prefix),
                exec_cwd(header.get("cwd"), config.root, config.prefix),
            )
            return
        try:
            reply, data = await self._handle(conn, header, payload)
            out: dict[str, Any] = {"id": rid, "ok": True, **reply}
        except BrokerError as err:
            out, data = {"id": rid, "ok": False, "errno": err.errno, "error": str(err)}, b""
        except (KeyError, TypeError, ValueError) as err:
            out, data = {"id": rid, "ok": False, "errno": errno.EPROTO, "error": repr(err)}, b""
        await self._reply(conn, out, data)

    async def _handle(
        self, conn: _Conn, header: dict[str, Any], payload: bytes
    ) -> tuple[dict[str, Any], bytes]:
        op = header.get("op")
        if op == "load":
            blob = await self.load(header["hash"])
            if conn.child is None:
                blob = self._local_faults(blob)
            burn(self.config.cpu.serve_ms, len(blob))
            return {}, blob
        if op == "store":
            await self.store(header["hash"], payload)
            return {}, b""
        if op == "kvs.get":
            return {"value": await self.kvs_get(header["key"], bool(header.get("wait")))}, b""
        if op == "kvs.put":
            await self.kvs_put(header["key"], header["value"], bool(header.get("excl")))
            return {}, b""
        if op == "kvs.unlink":
            await self.kvs_unlink(header["key"])
            return {}, b""
        if op == "stats":
            return {"stats": self.cache.stats()}, b""
        if op == "store-stats":
            return {"stats": self._store_stats()}, b""
        if op == "dropcache":
            self.cache.drop()  # rank 0's blobs stay in its backing store, as in flux-core
            return {}, b""
        if op == "reload":
            limit = header.get("purge_target_size")
            self.cache.clear(int(limit) if limit is not None else self.config.purge_target_size)
            return {}, b""
        if op == "getattr":
            return {"value": self._getattr(header["name"])}, b""
        if op == "overlay":
            from experiments.model.topology import build_tree, render_overlay

            tree = build_tree(self.config.topo, self.config.size)
            return {"text": render_overlay(tree, name=self.config.name)}, b""
        if op == "ping":
            return await self.router.ping(header, payload, from_client=conn.child is None)
        raise BrokerError(errno.ENOSYS, f"unknown request {op!r}")

    def _getattr(self, name: str) -> str:
        config = self.config
        attrs = {
            "rank": str(self.rank),
            "size": str(config.size),
            "tbon.topo": config.topo,
            "tbon.parent-endpoint": (
                uri_for(config.root, config.parent) if config.parent >= 0 else ""
            ),
            "local-uri": uri_for(config.root, self.rank),
            "hostlist": f"{config.name}-[0-{config.size - 1}]",
            "broker.pid": str(os.getpid()),
            "content.purge-target-size": str(self.cache.limit),
        }
        if self.rank == 0:
            attrs["content.backing-module"] = BACKING_MODULE
        if name not in attrs:
            raise BrokerError(errno.ENOENT, f"{name}: No such file or directory")
        return attrs[name]

    def _local_faults(self, blob: bytes) -> bytes:
        faults = self.config.faults
        self._local_loads += 1
        limit = faults.get("kill_after_loads")
        if limit is not None and self._local_loads > int(limit):
            os.kill(os.getpid(), signal.SIGKILL)
        if faults.get("corrupt") and blob:
            return bytes([blob[0] ^ 0xFF]) + blob[1:]
        return blob


def run_broker(config: BrokerConfig, ready_fd: int | None = None) -> int:
    """Serve as one broker until killed.  Returns an exit code if startup fails."""
    try:
        asyncio.run(Broker(config).serve(ready_fd))
    except (OSError, BrokerError) as err:
        print(f"kary-emulator: broker rank {config.rank}: {err}", file=sys.stderr, flush=True)
        return 1
    return 0
