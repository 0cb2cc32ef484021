"""Spending the emulator's CPU costs (experiments.emulator.cpu says what they are and why).

Apart from cpu.py because the emulator's `flux` burns the client's share on every
call: this imports only `os` and `time`, where cpu.py's dataclass pulls in
`inspect` and the rest of what `dataclasses` needs.
"""

from __future__ import annotations

import os
import time

__all__ = ["CLIENT_ENV", "MIB", "burn", "client_cost"]

MIB = 1 << 20
# The client's ms per MiB, as the instance puts it in each rank's environment.
CLIENT_ENV = "KARY_EMULATOR_CLIENT_CPU_MS"


def burn(ms_per_mib: float, nbytes: int) -> None:
    """Spend `ms_per_mib` CPU milliseconds per MiB of `nbytes` on this thread."""
    if ms_per_mib <= 0 or nbytes <= 0:
        return
    end = time.thread_time() + ms_per_mib * nbytes / MIB / 1000.0
    while time.thread_time() < end:
        pass


def client_cost() -> float:
    """The client's ms per MiB, as the instance put it in the environment (0 if unset)."""
    try:
        return max(0.0, float(os.environ.get(CLIENT_ENV, "0")))
    except ValueError:
        return 0.0
