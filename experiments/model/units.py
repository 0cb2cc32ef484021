"""Link settings as people type them: `1Gbit`, `100mbit`, `50MBps`; `200us`, `1ms`, `0.5s`.

Bandwidth units follow tc(8): `bit`, `kbit`, `mbit`, `gbit`, `tbit` are bits
per second and `bps`, `kbps`, `mbps`, `gbps` bytes per second (decimal
prefixes, case-insensitive).  Latency takes `ns`, `us`, `ms` or `s`.
"""

from __future__ import annotations

import re

__all__ = ["parse_bandwidth", "parse_latency"]

_NUMBER = r"(?P<num>[0-9]+(?:\.[0-9]+)?)\s*(?P<unit>[a-zA-Z/]*)"
_BANDWIDTH = {
    "bit": 1 / 8,
    "kbit": 1e3 / 8,
    "mbit": 1e6 / 8,
    "gbit": 1e9 / 8,
    "tbit": 1e12 / 8,
    "bps": 1.0,
    "kbps": 1e3,
    "mbps": 1e6,
    "gbps": 1e9,
}
_LATENCY = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def parse_bandwidth(text: str) -> float:
    """Bytes per second; ValueError with the accepted forms if `text` is not one."""
    match = re.fullmatch(_NUMBER, text.strip())
    unit = match.group("unit").lower() if match else ""
    if match is None or unit not in _BANDWIDTH or float(match.group("num")) <= 0:
        raise ValueError(
            f"invalid bandwidth {text!r}: expected e.g. 1Gbit, 100mbit or 50MBps "
            "(bit/kbit/mbit/gbit/tbit or bps/kbps/mbps/gbps)"
        )
    return float(match.group("num")) * _BANDWIDTH[unit]


def parse_latency(text: str) -> float:
    """Seconds; ValueError with the accepted forms if `text` is not one."""
    match = re.fullmatch(_NUMBER, text.strip())
    unit = match.group("unit").lower() if match else ""
    if match is None or unit not in _LATENCY:
        raise ValueError(f"invalid latency {text!r}: expected e.g. 200us, 1ms or 0.5s")
    return float(match.group("num")) * _LATENCY[unit]
