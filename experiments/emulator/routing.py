"""Requests routed to another rank through the tree: `flux ping --rank N`.

flux-core routes a request for rank N through the brokers between: up to the
common ancestor, then down from parent to child.  Content and KVS requests
only ever go up (emulator/broker.py's `_upstream`); a ping goes down as well,
so a parent keeps each child's connection (`Downlinks`) and sends the request
on it, and the child's reply comes back on the same link.  Frames of such an
exchange carry `down: true` both ways, so that neither end mistakes them for
its own traffic.  A request sent down passes this node's `Egress` (its link
toward its children), like any reply sent down.

Each broker on the way adds its id to the request's route, as flux-core's
route does (the client's id first, then rank 0's connector's); the target
answers for its broker, or for a module (kvs, content: its id once more), with
the payload it was sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import itertools
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from experiments.emulator.content import Egress
from experiments.emulator.wire import BrokerError, encode_frame

__all__ = ["ANY", "UPSTREAM", "Downlinks", "Router", "next_hop"]

Reply = tuple[dict[str, Any], bytes]
Upstream = Callable[[dict[str, Any], bytes], Awaitable[Reply]]

# flux ping's nodeid for "any rank" (the local broker) and "the parent".
ANY, UPSTREAM = -1, -2
# Services answering `<service>.ping` on every rank: True for a module, whose
# id shows in the route after its broker's (here the broker's id again, as
# flux-core prints it for kvs).
_PING_SERVICES = {"broker": False, "kvs": True, "content": True}


def next_hop(parents: Sequence[int], rank: int, target: int) -> int | None:
    """The child of `rank` on the way down to `target`; None when `target` is not below it."""
    child = target
    while child > 0:
        parent = parents[child]
        if parent == rank:
            return child
        child = parent
    return None


def _failed(rid: Any, code: int, message: str) -> dict[str, Any]:
    return {"id": rid, "down": True, "ok": False, "errno": code, "error": message}


def _unreachable(rid: Any) -> dict[str, Any]:
    return _failed(rid, errno.EHOSTUNREACH, os.strerror(errno.EHOSTUNREACH))


class Downlinks:
    """Each child broker's connection, and the requests sent down it still waiting."""

    def __init__(self, egress: Egress) -> None:
        self.egress = egress
        self._links: dict[int, asyncio.StreamWriter] = {}
        self._pending: dict[int, tuple[int, asyncio.Future[Reply]]] = {}
        self._ids = itertools.count(1)

    def attach(self, child: int, writer: asyncio.StreamWriter) -> None:
        self._links[child] = writer

    def detach(self, child: int) -> None:
        """The child went away: every request waiting on it fails (No route to host)."""
        self._links.pop(child, None)
        for rid, (rank, fut) in list(self._pending.items()):
            if rank == child:
                del self._pending[rid]
                if not fut.done():
                    fut.set_result((_unreachable(rid), b""))

    async def request(self, child: int, header: dict[str, Any], payload: bytes) -> Reply:
        """Send a request to `child` and wait for its reply (an `ok: false` one on failure)."""
        writer = self._links.get(child)
        if writer is None or writer.is_closing():
            return _unreachable(None), b""
        rid = next(self._ids)
        fut: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._pending[rid] = (child, fut)
        if self.egress.shaped:
            await asyncio.sleep(self.egress.delay(len(payload) + 64))
        writer.write(encode_frame({**header, "id": rid, "down": True}, payload))
        # A lost connection is noticed by the broker's reader, which detaches the child.
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        try:
            return await fut
        finally:
            self._pending.pop(rid, None)

    def answer(self, header: dict[str, Any], payload: bytes) -> None:
        """A child's reply to one of our requests."""
        entry = self._pending.pop(header.get("id", -1), None)
        if entry is not None and not entry[1].done():
            entry[1].set_result((header, payload))


class Router:
    """One broker's part in routing pings: answer one for this rank, or pass it on."""

    def __init__(
        self, rank: int, parent: int, parents: Sequence[int], egress: Egress, upstream: Upstream
    ) -> None:
        self.rank = rank
        self.parent = parent
        self.parents = parents
        self.down = Downlinks(egress)
        self.upstream = upstream
        # Route ids as flux ping prints them: this broker's, and its local connector's.
        self.uuid, self.connector_uuid = os.urandom(4).hex(), os.urandom(4).hex()

    async def ping(self, header: dict[str, Any], payload: bytes, from_client: bool) -> Reply:
        """The reply to a ping (its rank, route and seq, and the payload back)."""
        route = [*header.get("route", []), *([self.connector_uuid] if from_client else [])]
        route.append(self.uuid)
        target = int(header["target"])
        if target == ANY:
            target = self.rank
        elif target == UPSTREAM:
            target = self.parent
        if target == self.rank:
            service = str(header["service"])
            if service not in _PING_SERVICES:
                raise BrokerError(errno.ENOSYS, os.strerror(errno.ENOSYS))
            if _PING_SERVICES[service]:
                route.append(self.uuid)
            return {"rank": self.rank, "route": route, "seq": header.get("seq", 0)}, payload
        if not 0 <= target < len(self.parents):
            raise BrokerError(errno.EHOSTUNREACH, os.strerror(errno.EHOSTUNREACH))
        forward = {**header, "op": "ping", "target": target, "route": route}
        child = next_hop(self.parents, self.rank, target)
        if child is None:
            return await self.upstream(forward, payload)
        reply, data = await self.down.request(child, forward, payload)
        if not reply.get("ok"):
            raise BrokerError(reply.get("errno", errno.EIO), reply.get("error", "error"))
        return {k: v for k, v in reply.items() if k not in ("id", "ok", "down")}, data

    async def answer_parent(self, header: dict[str, Any], payload: bytes) -> Reply:
        """The reply frame (header, payload) to a request the parent routed down to us."""
        rid = header.get("id")
        try:
            if header.get("op") != "ping":
                raise BrokerError(errno.ENOSYS, os.strerror(errno.ENOSYS))
            reply, data = await self.ping(header, payload, from_client=False)
        except BrokerError as err:
            return _failed(rid, err.errno, str(err)), b""
        return {"id": rid, "down": True, "ok": True, **reply}, data
