"""The box: a cell's brokers on one machine, each in its own network namespace.

Real flux-core brokers, bootstrapped from a generated config file (hosts,
CURVE certificate, `tbon.topo`) the way the Flux Operator's pods are, talk TCP
to each other over veth links through one bridge, and `tc` shapes every link
in both directions.  So on one machine a cell measures links, not only CPU.

- `layout`: the run id, names, the address plan and the broker config (pure).
- `shaping`: the `tc` commands that shape a link (pure; the links themselves
  are experiments/model/links.py's).
- `launch`: what the flux backend hands a box's init, and what it reads back.
- `privileges`: can this machine build a box at all (checked before anything starts).
- `init`: the program that builds one box, runs the cell and tears it down;
  it runs as PID 1 of its own PID, mount and network namespaces, so the
  kernel removes every broker, link and qdisc when it ends, however it ends.
- `reap`: what a dead run may have left (its scratch folder, a box whose
  guard was killed), found by the run id in its name and removed.
"""

from __future__ import annotations

__all__ = ["init", "launch", "layout", "privileges", "reap", "shaping"]
