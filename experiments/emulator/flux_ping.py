"""`flux ping [OPTIONS] TARGET`: flux-core 0.88's flux-ping against the emulated brokers.

TARGET is `SERVICE` (on any rank: the local broker), `RANK` (its broker) or
`RANK!SERVICE`, where RANK may also be `any` or `upstream`; `--rank RANK` is
`RANK!TARGET`.  Options as flux-core's: -r/--rank, -p/--pad N (a size, K/M/G
suffixes, < 2G), -c/--count N (0: until killed), -i/--interval SECONDS
(default 1), -b/--batch, -u/--userid.  Output and errors are flux-core's:

    flux-ping 3!broker
    3!broker.ping pad=1024 seq=0 time=0.123 ms (c1a2b3c4!5d6e7f80!...)

`time` is that ping's round trip (the mean of the one response flux-core
times per request); the route lists the
client's id, rank 0's connector's, then each broker's on the way (see
emulator/routing.py).  A host name as TARGET is not looked up: it is taken as
a service, which no broker answers.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Iterator

from experiments.emulator.client import FluxError, Handle, broker_handle, option, parse_options
from experiments.emulator.routing import ANY, UPSTREAM

__all__ = ["flux_ping", "parse_size"]

USAGE = """Usage: flux-ping [OPTIONS] TARGET
  -h, --help             Display this message.
  -r, --rank=RANK        Find target on a specific broker rank
  -p, --pad=N            Include in the payload a string of length N bytes
  -i, --interval=N       Specify the delay, in seconds, between successive
                         requests
  -c, --count=N          Specify the number of requests to send
  -b, --batch            Begin processing responses after all requests are sent
  -u, --userid           Include userid and rolemask in ping output
"""
_INT_MAX = 2**31 - 1
_SCALE = {"": 1, "k": 1 << 10, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_SCALE |= {"T": 1 << 40, "P": 1 << 50, "E": 1 << 60}
_DURATION = {"": 1.0, "s": 1.0, "ms": 1e-3, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_size(text: str) -> int | None:
    """flux-core's parse_size: an integer (C base prefixes) or a float, with a K/M/G.. suffix."""
    digits = text.rstrip("kKMGTPE")
    scale = _SCALE.get(text[len(digits) :])
    if scale is None or not digits or "-" in digits:
        return None
    try:
        return int(digits, 0) * scale
    except ValueError:
        pass
    try:
        value = float(digits)
    except ValueError:
        return None
    return math.floor(value * scale) if math.isfinite(value) and value >= 0 else None


def _pad(text: str) -> int:
    size = parse_size(text)
    if size is None:
        raise FluxError(f"flux-ping: invalid argument for option 'pad': {text}: Invalid argument")
    if size > _INT_MAX:
        raise FluxError(f"flux-ping: pad: value {text} too large (must be < 2G)")
    return size


def _interval(text: str) -> float:
    number = text.rstrip("smhd")
    scale = _DURATION.get(text[len(number) :])
    try:
        seconds = float(number) * (scale or 0.0)
    except ValueError:
        scale = None
    if scale is None or not math.isfinite(seconds):
        raise FluxError(f"flux-ping: invalid argument for option 'interval': {text}")
    if seconds < 0:
        raise FluxError("interval must be >= 0")
    return seconds


def _count(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        raise FluxError(f"flux-ping: invalid argument for option 'count': {text}") from None
    if count < 0:
        raise FluxError("count must be >= 0")
    return count


def _nodeid(text: str) -> tuple[int, str] | None:
    """(nodeid, how the header names it) for `any`, `upstream` or a rank; None otherwise."""
    if text in ("any", "upstream"):
        return (ANY if text == "any" else UPSTREAM), text
    if text.isdigit() and text.isascii():
        return int(text), str(int(text))
    return None


def _target(target: str) -> tuple[int, str, str]:
    """(nodeid, service, header) for TARGET, as flux-core's parse_target reads it."""
    rank_text, bang, service = target.partition("!")
    if bang:
        found = _nodeid(rank_text)
        if found is None:
            raise FluxError(f"invalid nodeid/host: '{rank_text}'")
    else:
        found = _nodeid(target)
        if found is None:
            found, service = (ANY, "any"), target
        else:
            service = "broker"
    nodeid, shown = found
    return nodeid, service, f"flux-ping {shown}!{service}"


def _rank_bang(rank: int) -> str:
    return "" if rank == ANY else ("upstream!" if rank == UPSTREAM else f"{rank}!")


def flux_ping(argv: list[str]) -> int:
    if any(arg in ("-h", "--help") for arg in argv):
        sys.stdout.write(USAGE)
        return 0
    try:
        opts, operands = parse_options(
            argv,
            {"-r": "rank", "--rank": "rank", "-p": "pad", "--pad": "pad"}
            | {"-i": "interval", "--interval": "interval", "-c": "count", "--count": "count"},
            {"-b": "batch", "--batch": "batch", "-u": "userid", "--userid": "userid"},
            stop_at_operand=False,
        )
    except FluxError as err:
        raise FluxError(f"{err}\nTry `flux-ping --help' for more information.") from None
    if len(operands) != 1:
        sys.stderr.write(USAGE)
        return 1
    target = operands[0]
    pad = _pad(option(opts, "pad", "0"))
    if "rank" in opts:
        if "!" in target:
            raise FluxError("--rank and TARGET both try to specify a nodeid")
        target = f"{option(opts, 'rank', '')}!{target}"
    interval = _interval(option(opts, "interval", "1.0"))
    count = _count(option(opts, "count", "0"))
    if opts.get("batch") and count == 0:
        raise FluxError("--batch should only be used with --count")
    handle = broker_handle()
    nodeid, service, header = _target(target)
    replies = _pings(handle, nodeid, service, pad, count, interval, bool(opts.get("userid")))
    try:
        first = next(replies, None)
    except FluxError as err:
        # flux-core's header waits in stdio's buffer while its error goes out:
        # a first ping that fails reads error first, header second.
        print(f"flux-ping: {err}", file=sys.stderr, flush=True)
        print(header, flush=True)
        return err.code
    print(header)
    if first is not None:
        print(first, flush=True)
    for line in replies:
        print(line, flush=True)
    return 0


def _pings(
    handle: Handle,
    nodeid: int,
    service: str,
    pad: int,
    count: int,
    interval: float,
    userid_flag: bool,
) -> Iterator[str]:
    """Each ping's reply line, the pings sent one after another."""
    topic = f"{service}.ping"
    payload = b"p" * pad
    client = os.urandom(4).hex()
    userid = f" userid={os.getuid()} rolemask=0x1" if userid_flag else ""
    seq = 0
    while count == 0 or seq < count:
        if seq and interval:
            time.sleep(interval)
        request = {"op": "ping", "target": nodeid, "service": service, "seq": seq}
        started = time.monotonic()
        try:
            reply, echoed = handle.rpc({**request, "route": [client]}, payload)
        except FluxError as err:
            raise FluxError(f"{_rank_bang(nodeid)}{topic}: {err}") from None
        took_ms = (time.monotonic() - started) * 1000
        if bytes(echoed) != payload:
            raise FluxError(f"{_rank_bang(nodeid)}{topic}: padding contents invalid")
        route = "!".join(reply["route"])
        yield (
            f"{_rank_bang(reply['rank'])}{topic} pad={pad}{userid} seq={reply['seq']} "
            f"time={took_ms:.3f} ms ({route})"
        )
        seq += 1
