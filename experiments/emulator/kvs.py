"""Rank 0's key-value store: what `flux archive` keeps in flux-core's KVS.

Other ranks forward their KVS requests up the tree to rank 0
(emulator/broker.py).  A get may wait for its key to appear, as
`flux archive extract --waitcreate` does.  An archive is the key
`archive.<name>`, whose value lists each file's blobrefs.
"""

from __future__ import annotations

import asyncio
import errno
from typing import Any

from experiments.emulator.wire import BrokerError

__all__ = ["Kvs"]


class Kvs:
    """Keys and values, and the callers waiting for a key that is not there yet."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self._waiters: dict[str, list[asyncio.Future[Any]]] = {}

    async def get(self, key: str, wait: bool) -> Any:
        if key in self.values:
            return self.values[key]
        if not wait:
            raise BrokerError(errno.ENOENT, f"{key}: No such file or directory")
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(key, []).append(fut)
        return await fut

    def put(self, key: str, value: Any, exclusive: bool) -> None:
        if exclusive and key in self.values:
            raise BrokerError(errno.EEXIST, f"{key}: File exists")
        self.values[key] = value
        for fut in self._waiters.pop(key, []):
            if not fut.done():
                fut.set_result(value)

    def unlink(self, key: str) -> None:
        if self.values.pop(key, None) is None:
            raise BrokerError(errno.ENOENT, f"{key}: No such file or directory")

    def blobrefs(self) -> set[str]:
        """Every blob an archive still refers to."""
        live: set[str] = set()
        for key, value in self.values.items():
            if key.startswith("archive.") and isinstance(value, dict):
                for entry in value.get("files", []):
                    live.update(entry.get("blobrefs", []))
        return live
