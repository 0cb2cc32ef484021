"""The emulator's CPU costs on the machine it runs on: the reference costs, scaled by how
fast this machine does the work they stand for.

`experiments.emulator.cpu.DEFAULT_COSTS` were fitted against flux-core 0.88 on
one 2-core VM (benchmarks/fidelity.py).  They stand for flux-core's C work per
MiB of a blob: hashing it (the content store names blobs by SHA-1) and copying
it through ZeroMQ and into the extracted file.  `probe_ms_per_mib` times that
work here (SHA-1 and two copies of each 1 MiB block of 16 MiB, on this thread's
CPU clock, best of 3 rounds: about 0.1 s), and the costs are scaled by the
probe here over `REFERENCE_PROBE_MS_PER_MIB`, the same probe on the VM where
the costs were fitted (a constant measured on that one machine).  A machine
twice as fast at that work burns half the extra CPU per MiB.

The result is cached per machine (`$XDG_CACHE_HOME/kary/emulator-calibration.json`,
keyed by /etc/machine-id, CPU model and core count), and every emulated cell's
run.json records it (`emulator.calibration`).  Holding the emulator to real Flux
on this machine needs flux-core here: benchmarks/fidelity.py measures it and
`record_fidelity` keeps what it found, which every emulated cell then carries
as its fidelity statement (`fidelity_here`) instead of the one measured elsewhere.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from experiments.emulator.cpu import DEFAULT_COSTS, MIB, CpuCosts

__all__ = [
    "REFERENCE_PROBE_MS_PER_MIB",
    "Calibration",
    "calibrated_costs",
    "fidelity_here",
    "machine_key",
    "probe_ms_per_mib",
    "record_fidelity",
]

# probe_ms_per_mib() on the 2-core VM (class) where DEFAULT_COSTS were fitted: median of 5
# calls, 0.94-1.04, on 2026-11-25, nothing else running.  Measured on that one machine,
# as the costs themselves were.
REFERENCE_PROBE_MS_PER_MIB = 1.0
# A probe outside this range of the reference says more about a noisy moment than about
# the machine: the scale is clamped to it.
SCALE_RANGE = (0.25, 4.0)
CACHE_NAME = "emulator-calibration.json"
# What benchmarks/fidelity.py last measured on this machine (emulator against real Flux).
FIDELITY_NAME = "emulator-fidelity.json"


@dataclass(frozen=True)
class Calibration:
    """The costs the emulator burns here, and how they were found."""

    costs: CpuCosts
    probe_ms_per_mib: float
    reference_ms_per_mib: float
    scale: float
    machine: str
    measured: str

    def record(self) -> dict[str, object]:
        """For run.json: everything but the costs, which are recorded beside it."""
        data = asdict(self)
        data.pop("costs")
        return data


def probe_ms_per_mib(mib: int = 16, rounds: int = 3) -> float:
    """CPU ms this thread needs per MiB to SHA-1 a 1 MiB block and copy it twice."""
    block = os.urandom(MIB)
    best = float("inf")
    for _ in range(rounds):
        started = time.thread_time()
        for _ in range(mib):
            hashlib.sha1(block).digest()
            copied = bytearray(block)
            bytes(copied)
        best = min(best, (time.thread_time() - started) * 1000.0 / mib)
    return best


def machine_key() -> str:
    """What makes one machine's calibration another's: machine id, CPU model, cores."""
    machine_id = ""
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            machine_id = Path(path).read_text().strip()
            break
        except OSError:
            continue
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{machine_id or 'unknown'}|{model or 'unknown cpu'}|{os.cpu_count()} cores"


def _cache_path(name: str = CACHE_NAME) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kary" / name


def _write(path: Path, data: dict[str, object]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        tmp.replace(path)
    except OSError:
        pass  # a read-only home: measured again next time


def record_fidelity(statement: str, cache: Path | None = None) -> None:
    """Keep what benchmarks/fidelity.py measured here, for every emulated cell to carry."""
    _write(cache or _cache_path(FIDELITY_NAME), {"machine": machine_key(), "statement": statement})


def fidelity_here(default: str, cache: Path | None = None) -> str:
    """The fidelity measured on this machine; else `default`, saying it was measured elsewhere."""
    try:
        data = json.loads((cache or _cache_path(FIDELITY_NAME)).read_text())
        if data.get("machine") == machine_key() and isinstance(data.get("statement"), str):
            return str(data["statement"])
    except (OSError, ValueError, AttributeError):
        pass
    return (
        f"{default} (measured on another machine; `make bench` with flux-core on PATH "
        "measures this one)"
    )


def _cached(path: Path, machine: str) -> Calibration | None:
    try:
        data = json.loads(path.read_text())
        if data.get("machine") != machine:
            return None
        probe = float(data["probe_ms_per_mib"])
        if not probe > 0:
            return None
        return _scaled(probe, machine, str(data["measured"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None  # no cache, or an unreadable one: measure again


def _scaled(probe: float, machine: str, measured: str) -> Calibration:
    # Rounded first, as the cache keeps it: a calibration read back is the one made.
    probe = round(probe, 4)
    low, high = SCALE_RANGE
    scale = min(max(probe / REFERENCE_PROBE_MS_PER_MIB, low), high)
    return Calibration(
        DEFAULT_COSTS.scaled(scale),
        probe,
        REFERENCE_PROBE_MS_PER_MIB,
        round(scale, 3),
        machine,
        measured,
    )


def calibrated_costs(
    cache: Path | None = None, probe: Callable[[], float] = probe_ms_per_mib
) -> Calibration:
    """This machine's calibration: from the cache, else probed now and cached."""
    path = cache or _cache_path()
    machine = machine_key()
    found = _cached(path, machine)
    if found is not None:
        return found
    measured = datetime.now(timezone.utc).isoformat(timespec="seconds")
    calibration = _scaled(probe(), machine, measured)
    _write(path, calibration.record())
    return calibration
