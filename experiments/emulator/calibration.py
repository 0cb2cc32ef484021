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
run.json records it (`emulator.calibration`).  A probe outside x0.25-x4 of the
reference is clamped to that range: one warning line says so each time the
calibration is used, and the record keeps the scale the probe asked for
(`clamped_from`).

Holding the emulator to real Flux on this machine needs flux-core here:
benchmarks/fidelity.py measures it and `record_fidelity` keeps what it found,
under a `FidelityKey`: everything that changes the emulator's result (this
machine, the emulator's source, the CPU costs it burned and their deliberate
scale) and the flux-core it was held to.  Each key keeps its own entry, with
the calibration it ran with.  An emulated cell carries, as its fidelity
statement (`fidelity_here`), the newest entry whose key matches its own
emulator; else the one measured elsewhere, saying so.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from experiments.emulator.cpu import DEFAULT_COSTS, MIB, CpuCosts

__all__ = [
    "REFERENCE_PROBE_MS_PER_MIB",
    "SCALE_RANGE",
    "Calibration",
    "FidelityKey",
    "calibrated_costs",
    "emulator_source_hash",
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
# What benchmarks/fidelity.py measured on this machine (emulator against real Flux), per key.
FIDELITY_NAME = "emulator-fidelity.json"
_FIDELITY_FORMAT = 2


@dataclass(frozen=True)
class Calibration:
    """The costs the emulator burns here, and how they were found."""

    costs: CpuCosts
    probe_ms_per_mib: float
    reference_ms_per_mib: float
    scale: float
    machine: str
    measured: str
    # The scale the probe asked for when it fell outside SCALE_RANGE (None: not clamped).
    clamped_from: float | None = None

    def record(self) -> dict[str, object]:
        """For run.json: everything but the costs, which are recorded beside it."""
        data = asdict(self)
        data.pop("costs")
        return data

    def clamp_warning(self) -> str | None:
        """One line when the probe's scale was clamped; None otherwise."""
        if self.clamped_from is None:
            return None
        low, high = SCALE_RANGE
        return (
            f"kary: warning: the emulator's CPU probe here took {self.probe_ms_per_mib:g} ms "
            f"per MiB, x{self.clamped_from:g} the reference's {self.reference_ms_per_mib:g}; "
            f"its CPU costs are scaled x{self.scale:g} instead (clamped to x{low:g}-x{high:g}), "
            "so emulated times here may be off (emulator.calibration.clamped_from in run.json)"
        )


@dataclass(frozen=True)
class FidelityKey:
    """What an emulator's fidelity holds for: this machine, the emulator's source, the
    CPU costs it burned (ms per MiB, as --cpu-costs) and their deliberate scale, and the
    flux-core it was compared with (None when looking up: any)."""

    machine: str
    emulator_source: str
    cpu_costs: str
    cpu_scale: float = 1.0
    flux_version: str | None = None

    def text(self) -> str:
        return "|".join(
            (self.machine, self.emulator_source, self.cpu_costs, f"{self.cpu_scale:g}",
             self.flux_version or "")
        )  # fmt: skip

    def emulator(self) -> tuple[str, str, str, float]:
        """The parts that say which emulator ran (all but the flux-core compared with)."""
        return (self.machine, self.emulator_source, self.cpu_costs, self.cpu_scale)


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


def emulator_source_hash() -> str:
    """sha256 (16 hex digits) over the emulator's code: experiments/emulator and its
    backend, experiments/backends/emulator; another source is another emulator."""
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for folder in (here, here.parent / "backends" / "emulator"):
        for path in sorted(folder.glob("*.py")):
            digest.update(f"{folder.name}/{path.name}".encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


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


def _fidelity_entries(path: Path) -> dict[str, dict[str, object]]:
    """The cache's entries by key text; {} when absent, unreadable, or of an older format."""
    try:
        data = json.loads(path.read_text())
        entries = data.get("entries") if data.get("format") == _FIDELITY_FORMAT else None
        return dict(entries) if isinstance(entries, dict) else {}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def record_fidelity(
    statement: str,
    key: FidelityKey,
    calibration: Mapping[str, object],
    cache: Path | None = None,
) -> None:
    """Keep what benchmarks/fidelity.py measured here under `key`, with the calibration
    (Calibration.record()) it ran with, beside the entries of every other key, for the
    emulated cells whose emulator it describes to carry."""
    path = cache or _cache_path(FIDELITY_NAME)
    entries = _fidelity_entries(path)
    entries[key.text()] = {
        "key": asdict(key),
        "statement": statement,
        "calibration": dict(calibration),
        "recorded": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    _write(path, {"format": _FIDELITY_FORMAT, "entries": entries})


def fidelity_here(default: str, key: FidelityKey, cache: Path | None = None) -> str:
    """The newest fidelity measured for this emulator (key, less the flux-core compared
    with); else `default`, saying it was measured elsewhere."""
    found: list[tuple[str, str]] = []
    for entry in _fidelity_entries(cache or _cache_path(FIDELITY_NAME)).values():
        try:
            theirs = FidelityKey(**entry["key"])  # type: ignore[arg-type]
        except (TypeError, KeyError):
            continue
        statement = entry.get("statement")
        if theirs.emulator() == key.emulator() and isinstance(statement, str):
            found.append((str(entry.get("recorded", "")), statement))
    if found:
        return max(found)[1]
    return (
        f"{default} (measured on another machine or another emulator; `make bench` with "
        "flux-core on PATH measures this one)"
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
    wanted = probe / REFERENCE_PROBE_MS_PER_MIB
    scale = min(max(wanted, low), high)
    return Calibration(
        DEFAULT_COSTS.scaled(scale),
        probe,
        REFERENCE_PROBE_MS_PER_MIB,
        round(scale, 3),
        machine,
        measured,
        None if scale == wanted else round(wanted, 3),
    )


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


def calibrated_costs(
    cache: Path | None = None,
    probe: Callable[[], float] = probe_ms_per_mib,
    warn: Callable[[str], None] = _stderr,
) -> Calibration:
    """This machine's calibration: from the cache, else probed now and cached; a clamped
    probe is warned of, in one line, each time."""
    path = cache or _cache_path()
    machine = machine_key()
    calibration = _cached(path, machine)
    if calibration is None:
        measured = datetime.now(timezone.utc).isoformat(timespec="seconds")
        calibration = _scaled(probe(), machine, measured)
        _write(path, calibration.record())
    warning = calibration.clamp_warning()
    if warning:
        warn(warning)
    return calibration
