"""CPU that flux-core spends per 1 MiB blob, spent here too so the emulator keeps its pace.

Real Flux on a machine whose cores every broker shares is CPU-bound: measured
with flux-core 0.88 on a 2-core machine (cold caches), brokers and `flux
archive extract` together used 7.1 CPU-ms per MiB delivered to a rank at 16
brokers and 64M (6.7-7.0 CPU-s for 960 MiB), and 8.6-10.2 at 8 brokers and
256M, where the emulator's Python brokers used 3.4 and 2.3.  Each rank's copy
costs relay + 2 x serve + client = 4.5 ms here: measured, the emulator then
used 8.2 ms at 16/64M (7.84 CPU-s); at 8/256M 2.3 + 4.5 = 6.8 is an estimate.  The extra is
burned at the three places a blob costs flux-core work: a broker taking a
blob from its parent (zmq receive, cache insert), a broker sending a blob to a
requester (child broker or local client), and the extracting client (receive,
libarchive write).

These are the reference costs; the emulator burns them scaled to the machine it
runs on (experiments.emulator.calibration).

`burn` spins on this thread's CPU clock, not the wall clock: a broker that
waits for a core does not count that wait, so N brokers on 2 cores slow each
other down as flux-core's do.
"""

from __future__ import annotations

from dataclasses import dataclass

from experiments.emulator.burn import CLIENT_ENV, MIB, burn, client_cost

__all__ = ["CLIENT_ENV", "DEFAULT_COSTS", "MIB", "CpuCosts", "burn", "client_cost"]


@dataclass(frozen=True)
class CpuCosts:
    """Extra CPU milliseconds per MiB: broker receive, broker send, client receive."""

    relay_ms: float = 0.0
    serve_ms: float = 0.0
    client_ms: float = 0.0

    @classmethod
    def parse(cls, text: str) -> CpuCosts:
        """`RELAY,SERVE,CLIENT` in ms per MiB, e.g. `2,1.5,1.5`; ValueError otherwise."""
        parts = text.split(",")
        try:
            values = [float(p) for p in parts]
        except ValueError:
            values = []
        if len(values) != 3 or any(v < 0 or v != v for v in values):
            raise ValueError(
                f"invalid CPU costs {text!r}: "
                "expected RELAY,SERVE,CLIENT ms per MiB, e.g. 2,1.5,1.5"
            )
        return cls(*values)

    def text(self) -> str:
        return f"{self.relay_ms:g},{self.serve_ms:g},{self.client_ms:g}"

    def scaled(self, factor: float) -> CpuCosts:
        """Every cost x `factor` (to the microsecond)."""
        return CpuCosts(
            round(self.relay_ms * factor, 3),
            round(self.serve_ms * factor, 3),
            round(self.client_ms * factor, 3),
        )


# Calibrated on flux-core 0.88, 2 cores: see the module docstring and benchmarks/fidelity.py.
DEFAULT_COSTS = CpuCosts(relay_ms=1.5, serve_ms=1.0, client_ms=1.0)
