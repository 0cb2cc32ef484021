"""The emulator's pieces in-process: cache, link, shared upstream loads, idsets, options."""

from __future__ import annotations

import asyncio
import errno

import pytest

from experiments.emulator.broker import Broker, BrokerConfig, BrokerError
from experiments.emulator.client import FluxError, parse_options
from experiments.emulator.content import ContentCache, Egress
from experiments.emulator.idset import encode_idset, parse_idset


def test_cache_evicts_least_recently_used_down_to_the_limit() -> None:
    cache = ContentCache(limit=3)
    for key in "abc":
        cache.put(key, b"x")
    assert cache.get("a") == b"x"  # a is now the most recent
    cache.put("d", b"x")
    assert [k for k in "abcd" if k in cache] == ["a", "c", "d"]
    assert cache.stats()["size"] == 3 and cache.evictions == 1
    cache.put("big", b"y" * 10)  # larger than the limit: kept alone
    assert len(cache) == 1 and cache.get("big") == b"y" * 10
    assert cache.get("zzz") is None and (cache.hits, cache.misses) == (2, 1)
    cache.clear(limit=5)
    assert cache.stats() == {
        "count": 0,
        "valid": 0,
        "dirty": 0,
        "size": 0,
        "flush-batch-count": 0,
        "mmap": {"tags": {}, "blobs": 0},
        "emulator": {"purge-target-size": 5, "hits": 0, "misses": 0, "evictions": 0},
    }


def test_egress_serialises_transmissions_and_adds_latency() -> None:
    link = Egress(bandwidth=1e6, latency=0.01)
    assert link.delay(1_000_000, now=0.0) == pytest.approx(1.01)
    assert link.delay(500_000, now=0.0) == pytest.approx(1.51)  # waits for the first
    assert link.delay(1_000_000, now=5.0) == pytest.approx(1.01)  # idle link again
    assert Egress(latency=0.002).delay(10**9, now=0.0) == pytest.approx(0.002)
    assert not Egress().shaped and link.shaped


def _broker(rank: int = 1) -> Broker:
    return Broker(BrokerConfig(rank=rank, size=4, parent=0, topo="kary:1", root="/nonexistent"))


def test_concurrent_misses_for_one_blob_share_one_upstream_request() -> None:
    broker = _broker()
    calls: list[str] = []

    async def upstream(key: str) -> bytes:
        calls.append(key)
        await asyncio.sleep(0.05)
        return b"blob-" + key.encode()

    broker._load_upstream = upstream  # type: ignore[method-assign]

    async def main() -> list[bytes]:
        first = await asyncio.gather(*(broker.load("k1") for _ in range(8)))
        again = await broker.load("k1")  # a cache hit now
        other = await broker.load("k2")
        return [*first, again, other]

    blobs = asyncio.run(main())
    assert calls == ["k1", "k2"]
    assert blobs == [b"blob-k1"] * 9 + [b"blob-k2"]


def test_a_failed_upstream_load_fails_every_waiter_and_is_retried_later() -> None:
    broker = _broker()
    attempts = []

    async def upstream(key: str) -> bytes:
        attempts.append(key)
        await asyncio.sleep(0.01)
        if len(attempts) == 1:
            raise BrokerError(errno.EHOSTUNREACH, "lost contact with parent broker rank 0")
        return b"ok"

    broker._load_upstream = upstream  # type: ignore[method-assign]

    async def main() -> tuple[list[bytes | BaseException], bytes]:
        results = await asyncio.gather(
            *(broker.load("k") for _ in range(3)), return_exceptions=True
        )
        return results, await broker.load("k")

    results, retried = asyncio.run(main())
    assert all(isinstance(r, BrokerError) for r in results) and retried == b"ok"
    assert attempts == ["k", "k"]


def test_a_broker_without_its_parent_says_so() -> None:
    broker = _broker()

    async def main() -> None:
        await broker.load("k")

    with pytest.raises(BrokerError, match="no parent broker"):
        asyncio.run(main())


def test_idsets() -> None:
    assert parse_idset("all", 4) == {0, 1, 2, 3}
    assert parse_idset("1-3,7", 10) == {1, 2, 3, 7}
    assert parse_idset("[0,2-3]", 10) == {0, 2, 3}
    for bad in ("3-1", "a", "1,,2", "1-"):
        with pytest.raises(ValueError):
            parse_idset(bad, 10)
    assert encode_idset([5, 1, 2, 3], brackets=True) == "[1-3,5]"
    assert encode_idset([4], brackets=True) == "4"


def test_options_parse_like_getopt() -> None:
    values = {"-r": "rank", "--rank": "rank", "-x": "exclude"}
    flags = {"-l": "label", "-q": "quiet"}
    opts, rest = parse_options(
        ["-r", "1-2", "-x0", "-lq", "sh", "-c", "x"], values, flags, stop_at_operand=True
    )
    assert opts == {"rank": "1-2", "exclude": "0", "label": True, "quiet": True}
    assert rest == ["sh", "-c", "x"]
    opts, rest = parse_options(["a", "--rank=3", "b", "--", "-l"], values, flags, False)
    assert (opts, rest) == ({"rank": "3"}, ["a", "b", "-l"])
    with pytest.raises(FluxError, match="unrecognized option '--bogus'"):
        parse_options(["--bogus"], values, flags, False)
    with pytest.raises(FluxError, match="requires an argument"):
        parse_options(["-r"], values, flags, False)
