"""The local stand-in for a Flux instance: N brokers on this machine (see ../shared/docs/DESIGN.md).

- `instance`: the launcher: forks one broker process per rank, runs a command
  as rank 0, tears everything down.  `python -m experiments.emulator.instance`.
- `broker`: one broker: content cache, archive store (rank 0), KVS (rank 0),
  remote exec (`rexec`), over unix sockets wired in the TBON shape.
- `flux`: the `flux` command the benchmark calls (`archive`, `exec` in
  `flux_exec`, ...), with its plumbing in `client`.
- `wire`, `content`, `idset`, `routing`, `kvs`, `cpu` (`burn` spends it): the small pieces they
  share; `calibration` scales the CPU costs to this machine.

The flux client imports almost nothing (built-in modules, see `wire`), so a
call costs little more than the interpreter's own start.
"""

__all__ = [
    "FIDELITY",
    "LINKS_FIDELITY",
    "broker",
    "burn",
    "calibration",
    "client",
    "content",
    "cpu",
    "flux",
    "flux_exec",
    "flux_ping",
    "idset",
    "instance",
    "kvs",
    "rexec",
    "routing",
    "wire",
]

# How close the emulator's timings are to real Flux, as benchmarks/fidelity.py
# last measured it; every run.json and report of emulated cells carries it.
FIDELITY = (
    "within x1.5 of flux-core 0.88 in 12 of 16 cells on a 2-core machine (N 8 and 16, "
    "64M and 256M; median ratio 1.4, kary:4 1.5-1.8x slower; real Flux has no winner there "
    "to agree on): benchmarks/results/fidelity-flux-0.88-2cores.json"
)
# On shaped links the reference is real Flux in a box on the same links
# (benchmarks/box_topologies.py --emulator): the gap said wherever such cells appear.
LINKS_FIDELITY = (
    "on shaped links, against real flux-core 0.88 in a box on the same links (N=16, 64M, "
    "100 Mbit/s, 4 runs each): 0.63-0.96x of the box's time, within x1.5 in 3 of 4 cells "
    "(kary:1 0.63x: the emulator's chain runs faster than flux-core's, whose chain kary "
    "flagged CPU-bound in the box); the box names no winner there to agree on (kary:1 and "
    "kary:2 tie, p = 0.34): benchmarks/results/box-topologies-n16.json"
)
