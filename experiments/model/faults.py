"""Emulator faults (`--emulator-fault`, a testing aid): their syntax, read one way.

`corrupt:RANK`: every blob RANK's broker hands to a command on RANK (flux
archive extract) has its first byte flipped, so verify fails there.
`kill:RANK[:LOADS]`: RANK's broker is SIGKILLed when such a command asks for
blob LOADS+1 (LOADS defaults to 0: the first).  The plan checks the faults
with these (and that every cell has the rank); the emulator's launcher reads
the same texts with `parse_faults`, so a fault the plan took is one it runs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from experiments.errors import UserError

TYPE_CHECKING = False  # the emulator's instance reads faults; model.plan loads pydantic
if TYPE_CHECKING:
    from experiments.model.plan import Cell

__all__ = ["FAULT_SYNTAX", "check_fault_ranks", "parse_faults"]

FAULT_SYNTAX = "corrupt:RANK or kill:RANK[:LOADS]"
_FAULT = re.compile(r"corrupt:(?P<corrupt>[0-9]+)|kill:(?P<kill>[0-9]+)(?::(?P<loads>[0-9]+))?")


def parse_faults(texts: Sequence[str]) -> dict[int, dict[str, object]]:
    """Faults by rank ({rank: {"corrupt": True, "kill_after_loads": 0}}).

    A UserError names a text that is not a fault, and one fault given twice.
    """
    out: dict[int, dict[str, object]] = {}
    for text in texts:
        match = _FAULT.fullmatch(text)
        if match is None:
            raise UserError(f"invalid --emulator-fault {text!r}: expected {FAULT_SYNTAX}")
        value: object
        if match["corrupt"] is not None:
            rank, key, value = int(match["corrupt"]), "corrupt", True
        else:
            rank, key = int(match["kill"]), "kill_after_loads"
            value = int(match["loads"] or 0)
        if key in out.get(rank, {}):
            raise UserError(
                f"--emulator-fault {text}: rank {rank} already has a {text.split(':')[0]} fault"
            )
        out.setdefault(rank, {})[key] = value
    return out


def check_fault_ranks(texts: Sequence[str], cells: Sequence[Cell]) -> None:
    """Every fault names a rank of every cell: a rank outside an instance would do nothing."""
    parse_faults(texts)
    if not cells:
        return
    smallest = min(cells, key=lambda c: c.nodes)
    for text in texts:
        [rank] = parse_faults([text])
        if rank >= smallest.nodes:
            raise UserError(
                f"--emulator-fault {text}: cell {smallest.id} has no rank {rank} "
                f"(ranks 0-{smallest.nodes - 1})"
            )
