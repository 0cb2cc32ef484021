"""When a cell's entrypoint began and ended, so a backend can say what its start and stop cost.

A backend runs ``bash stamped.sh`` where it ran ``bash entrypoint.sh``: the
wrapper writes bash's ``$EPOCHREALTIME`` (no fork) to ``entry.began``, runs the
entrypoint (so the entrypoint's ``$0`` and exit status are its own), then writes
``entry.ended``.  The wall clock is shared by every namespace on this machine
(a box's brokers included), so the stamps compare with the backend's own
``time.time()`` around the call:

- ``instance_start``: from the backend's call to the entrypoint's first line
  (scratch files, the session guard, the brokers coming up, a box's links);
- ``entrypoint``: the entrypoint itself (Flux's timed steps and kary's work
  around them: blob generation, cache drops, checks);
- ``instance_stop``: from the entrypoint's exit to the backend's return (the
  brokers and guard going down, a box's link counters read).

Its last act is to write the entrypoint's exit status to ``entry.exit``
(experiments/initial_exit.py), on which the session guard and the box's init
end the instance at once rather than wait for Flux's own stop.

A stamp that is missing (the cell never started, or was stopped) leaves its
spans out: a span is never guessed.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from experiments.initial_exit import write_exit_status_line

__all__ = ["WRAPPER_NAME", "entry_spans", "stamped"]

WRAPPER_NAME = "stamped.sh"
_BEGAN, _ENDED = "entry.began", "entry.ended"


def stamped(entrypoint: Path) -> Path:
    """Write the stamping wrapper beside `entrypoint` and return its path."""
    folder = entrypoint.parent
    began, ended = shlex.quote(str(folder / _BEGAN)), shlex.quote(str(folder / _ENDED))
    wrapper = folder / WRAPPER_NAME
    wrapper.write_text(
        # A script `flux batch` takes as it is (the nested layout's cells).
        "#!/bin/bash\n"
        f'printf "%s\\n" "$EPOCHREALTIME" >{began}\n'
        f"bash {shlex.quote(str(entrypoint))}\n"
        "rc=$?\n"
        f'printf "%s\\n" "$EPOCHREALTIME" >{ended}\n'
        + write_exit_status_line(folder)
        + 'exit "$rc"\n'
    )
    return wrapper


def _stamp(path: Path) -> float | None:
    try:
        return float(path.read_text().strip())
    except (OSError, ValueError):
        return None


def entry_spans(folder: Path, called: float, returned: float) -> dict[str, float]:
    """The spans the stamps in `folder` give, between the backend's `called` and
    `returned` (epoch seconds); only those both of whose ends are known."""
    began, ended = _stamp(folder / _BEGAN), _stamp(folder / _ENDED)
    spans: dict[str, float] = {}
    if began is not None:
        spans["instance_start"] = began - called
    if began is not None and ended is not None:
        spans["entrypoint"] = ended - began
    if ended is not None:
        spans["instance_stop"] = returned - ended
    # A clock stepped backwards mid-cell would give a negative span: no span, not a guess.
    return {name: round(s, 3) for name, s in spans.items() if s >= 0}
