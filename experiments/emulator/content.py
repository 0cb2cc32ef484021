"""A broker's content cache and its outgoing network link.

- `ContentCache`: 1 MiB blobs by sha256, least recently used first out, bounded
  by purge-target-size like flux-core's content module (which purges down to
  that size; here the bound is kept after every insert).
- `Egress`: the node's NIC toward its TBON children.  All children share one
  sender-side link of `bandwidth` bytes/s (a transmission waits for the ones
  before it), and every message arrives `latency` seconds after it left.  So a
  root that serves K children sends K copies through one pipe: the fan-out
  cost that a k-ary tree spreads over its routers.
"""

from __future__ import annotations

import time
from collections import OrderedDict

TYPE_CHECKING = False  # the emulator's `flux` imports this module on every call
if TYPE_CHECKING:
    from typing import Any

__all__ = ["BACKING_MODULE", "BLOB_SIZE", "DEFAULT_PURGE_TARGET_SIZE", "ContentCache", "Egress"]

BLOB_SIZE = 1 << 20
DEFAULT_PURGE_TARGET_SIZE = 16 << 20
# What rank 0 answers for `flux getattr content.backing-module`, as flux-core's default.
BACKING_MODULE = "content-sqlite"


class ContentCache:
    """sha256 hex -> blob, bounded by `limit` bytes (the most recent blob always stays)."""

    def __init__(self, limit: int = DEFAULT_PURGE_TARGET_SIZE) -> None:
        self.limit = limit
        self.size = 0
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self._blobs: OrderedDict[str, bytes] = OrderedDict()

    def __len__(self) -> int:
        return len(self._blobs)

    def __contains__(self, key: str) -> bool:
        return key in self._blobs

    def get(self, key: str) -> bytes | None:
        blob = self._blobs.get(key)
        if blob is None:
            self.misses += 1
            return None
        self.hits += 1
        self._blobs.move_to_end(key)
        return blob

    def put(self, key: str, blob: bytes) -> None:
        old = self._blobs.pop(key, None)
        if old is not None:
            self.size -= len(old)
        self._blobs[key] = blob
        self.size += len(blob)
        while self.size > self.limit and len(self._blobs) > 1:
            _, evicted = self._blobs.popitem(last=False)
            self.size -= len(evicted)
            self.evictions += 1

    def drop(self) -> None:
        """Drop every cached blob, counters kept, as `flux content dropcache` does.

        Nothing here is ever dirty: rank 0 writes its backing store before caching.
        """
        self._blobs.clear()
        self.size = 0

    def clear(self, limit: int | None = None) -> None:
        """Empty the cache and its counters, as a module reload does."""
        self._blobs.clear()
        self.size = self.hits = self.misses = self.evictions = 0
        if limit is not None:
            self.limit = limit

    def stats(self) -> dict[str, Any]:
        """flux-core 0.88's `module stats content`; the emulator's own counters under "emulator"."""
        return {
            "count": len(self._blobs),
            "valid": len(self._blobs),
            "dirty": 0,
            "size": self.size,
            "flush-batch-count": 0,
            "mmap": {"tags": {}, "blobs": 0},
            "emulator": {
                "purge-target-size": self.limit,
                "hits": self.hits,
                "misses": self.misses,
                "evictions": self.evictions,
            },
        }


class Egress:
    """One sender-side link: serialised transmissions at `bandwidth` B/s, then `latency` s.

    `delay(nbytes)` books the transmission and returns how long from now the
    message arrives at the other end.  No bandwidth (None) means no queueing.
    """

    def __init__(self, bandwidth: float | None = None, latency: float = 0.0) -> None:
        if bandwidth is not None and bandwidth <= 0:
            raise ValueError("bandwidth must be positive")
        self.bandwidth = bandwidth
        self.latency = max(0.0, latency)
        self.bytes_sent = 0
        self._free_at = 0.0

    @property
    def shaped(self) -> bool:
        return self.bandwidth is not None or self.latency > 0

    def delay(self, nbytes: int, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        self.bytes_sent += nbytes
        if self.bandwidth is None:
            return self.latency
        start = max(now, self._free_at)
        self._free_at = start + nbytes / self.bandwidth
        return self._free_at - now + self.latency
