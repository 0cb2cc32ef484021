"""The local stand-in for a Flux instance: N brokers on this machine (see docs/DESIGN.md).

- `instance`: the launcher: forks one broker process per rank, runs a command
  as rank 0, tears everything down.  `python -m experiments.emulator.instance`.
- `broker`: one broker: content cache, archive store (rank 0), KVS (rank 0),
  remote exec, over unix sockets wired in the TBON shape.
- `flux`: the `flux` command the benchmark calls (`archive`, `exec`, ...).
- `wire`, `content`, `units`, `idset`: the small pieces they share.

Nothing here is imported by the CLI process except `units` and `instance`'s
helpers; the flux client imports only the standard library, so each call
starts in a few tens of milliseconds.
"""
