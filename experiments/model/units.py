"""Units as people type them: sizes, link bandwidths and latencies, each read one way.

- Sizes are whole bytes.  A bare K, M, G or T is binary, as dd(1) reads it
  (`512M` is 512 x 2**20 bytes), and so are the IEC units KiB, MiB, GiB and TiB;
  the SI units KB, MB, GB and TB are decimal (`10GB` is 10**10 bytes, `10G` and
  `10GiB` 10 x 2**30).  The plan's header shows each size in bytes.
- Bandwidths follow tc(8): `bit`, `kbit`, `mbit`, `gbit`, `tbit` are bits per
  second and `Bps`, `KBps`, `MBps`, `GBps` bytes per second (decimal prefixes):
  `1Gbit`, `100mbit`, `50MBps`.  tc reads `50Mbps` as bytes too, where most people
  mean megabits (8x less): a `bps` unit with a small b is refused as ambiguous.
- Latencies take `ns`, `us`, `ms` or `s`: `200us`, `1ms`, `0.5s`.

Each returns the value in bytes, bytes per second or seconds, or raises
UserError with one line saying what was wrong and what would be right.  The
plan checks every flag with these before anything starts; the emulator's
launcher and the time model read the same texts with them again.
"""

from __future__ import annotations

import re

from experiments.errors import UserError

__all__ = ["SIZE_UNITS_TEXT", "parse_bandwidth", "parse_latency", "parse_size", "parse_sizes"]

_SIZE_UNITS = {"": None, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_SI_UNITS = {"K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
_SIZE = re.compile(
    r"^(?P<num>[0-9]+(?:\.[0-9]+)?)\s*(?P<unit>[KMGT]?)(?P<suffix>iB|B)?$", re.IGNORECASE
)
# How --help and messages say it.
SIZE_UNITS_TEXT = (
    "K, M, G, T and KiB, MiB, GiB, TiB are binary (1G = 2^30 bytes, as dd reads it); "
    "KB, MB, GB, TB are decimal (1GB = 10^9 bytes)"
)
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


def parse_size(text: str) -> int:
    """`512M` and `512MiB` -> 536870912, `512MB` -> 512000000 (see the module doc)."""
    match = _SIZE.match(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise UserError(f"invalid size {text!r}: expected a number with a unit, e.g. 512M or 4G")
    letter, suffix = match.group("unit").upper(), match.group("suffix") or ""
    unit = 1 if (letter, suffix.upper()) == ("", "B") else _SIZE_UNITS[letter]  # `123B`: bytes
    if unit is None or (suffix.upper() == "IB" and not letter):
        raise UserError(f"invalid size {text!r}: give a unit (K, M, G or T), e.g. {text}G")
    if suffix.upper() == "B" and letter:  # SI: KB, MB, GB, TB
        unit = _SI_UNITS[letter]
    size = float(match.group("num")) * unit
    if size < 1 or size != int(size):
        raise UserError(f"invalid size {text!r}: must be a whole number of bytes >= 1")
    return int(size)


def parse_sizes(text: str) -> list[int]:
    """`512M,2G` -> sizes in bytes, in the order given, duplicates refused."""
    parts = [p for p in (s.strip() for s in text.split(",")) if p]
    if not parts:
        raise UserError(f"invalid sizes {text!r}: expected a list such as 512M,2G")
    sizes = [parse_size(p) for p in parts]
    if len(set(sizes)) != len(sizes):
        raise UserError(f"invalid sizes {text!r}: a size is listed twice")
    return sizes


def parse_bandwidth(text: str) -> float:
    """Bytes per second; UserError with the accepted forms if `text` is not one."""
    match = re.fullmatch(_NUMBER, text.strip())
    unit = match.group("unit").lower() if match else ""
    if match is None or unit not in _BANDWIDTH or float(match.group("num")) <= 0:
        raise UserError(
            f"invalid bandwidth {text!r}: expected e.g. 1Gbit, 100mbit or 50MBps "
            "(bit/kbit/mbit/gbit/tbit or bps/kbps/mbps/gbps)"
        )
    typed = match.group("unit")
    if unit.endswith("bps") and "B" not in typed:
        number = match.group("num")
        raise UserError(
            f"ambiguous bandwidth {text!r}: tc(8) reads {typed} as bytes per second, most "
            f"people as bits; write {number}{typed[:-3]}bit for bits or {number}"
            f"{typed[:-3].upper()}Bps for bytes per second"
        )
    return float(match.group("num")) * _BANDWIDTH[unit]


def parse_latency(text: str) -> float:
    """Seconds; UserError with the accepted forms if `text` is not one."""
    match = re.fullmatch(_NUMBER, text.strip())
    unit = match.group("unit").lower() if match else ""
    if match is None or unit not in _LATENCY:
        raise UserError(f"invalid latency {text!r}: expected e.g. 200us, 1ms or 0.5s")
    return float(match.group("num")) * _LATENCY[unit]
