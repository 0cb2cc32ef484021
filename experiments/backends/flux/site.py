"""Which flux-core the flux backend runs, and where: what `up()` found, shared by every place.

`FluxSite` is that finding (the `flux` command, its version, the place and
layout, whether ranks share a filesystem); each place's module (test_instance,
allocation, box, nested) takes one and runs a cell with it.  The small pieces
they all use live here too: the environment a flux command gets, running a
short flux command, and what run.json says of every flux cell.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.backends.base import BackendError
from experiments.errors import UserError
from experiments.formats.run_record import ALLOCATION, NESTED, PER_CELL, TEST_INSTANCE
from experiments.model.places import HOW_TO_GET_FLUX
from experiments.model.plan import Cell

__all__ = [
    "HOW_TO_GET_FLUX",
    "FluxSite",
    "flux_env",
    "flux_version",
    "last_line",
    "messages",
    "parse_flux_version",
    "query_flux",
    "run_flux",
]

_QUERY_TIMEOUT_S = 60.0
# flux start's rundir (and its socket paths) go under TMPDIR=folder, and unix
# socket paths must stay under ~107 bytes.
_MAX_SCRATCH_CHARS = 60


@dataclass
class FluxSite:
    """The flux a cell runs on and where: `place` and `layout` as run.json says them.

    `shared_filesystem`: every rank sees one filesystem (a test instance, a box,
    or an allocation whose hostlist repeats a host), so each rank needs a folder
    of its own.  `instance_nodes`: the allocation's size (None elsewhere).
    """

    flux: str
    version: str | None
    place: str
    layout: str = PER_CELL
    shared_filesystem: bool = True
    instance_nodes: int | None = None
    workdir: Path | None = None

    def scratch_base(self) -> str:
        """A folder short enough for Flux's socket paths (the workdir, TMPDIR or /tmp)."""
        for base in (self.workdir, tempfile.gettempdir(), "/tmp"):
            if base is not None and len(str(base)) < _MAX_SCRATCH_CHARS:
                return str(base)
        raise UserError("no short scratch folder for Flux's sockets: set TMPDIR to a short path")

    def provenance(self, cell: Cell, wall: float, **extra: Any) -> dict[str, Any]:
        """What run.json says of a cell run here; `extra` goes under `flux`."""
        return {
            # The host kary ran on: a login or first node in an allocation.
            "cluster": f"flux:{socket.gethostname()}",
            "flux_version": self.version,
            "place": self.place,
            # Inside a user's allocation every cell is nested in it already.
            "layout": {ALLOCATION: NESTED, TEST_INSTANCE: self.layout}.get(self.place, PER_CELL),
            "image": None,  # no container: the flux on PATH ran it
            "instance_type": None,
            "flux": {"brokers": cell.nodes, "wall_seconds": round(wall, 3), **extra},
        }


def parse_flux_version(text: str) -> str:
    """The `commands:` version from `flux version` output; ValueError if it has none."""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "commands" and value.split():
            return value.split()[0]
    raise ValueError("no 'commands:' line")


def query_flux(flux: str, args: list[str], what: str) -> str:
    """stdout of `flux ARGS`, asked for a fact about this Flux; any failure is one UserError."""
    shown = " ".join(["flux", *args])
    try:
        return run_flux([flux, *args], flux_env(os.environ), shown)
    except BackendError as err:
        hint = ""
        if os.environ.get("FLUX_URI"):
            hint = " (FLUX_URI is set: is that instance still running?)"
        why = str(err).removeprefix(f"{shown}: ")
        raise UserError(f"cannot ask Flux for {what} (`{shown}`): {why}{hint}") from None


def flux_version(flux: str) -> str:
    """flux-core's version as `flux version` says it; UserError if `flux` is not flux-core's."""
    text = query_flux(flux, ["version"], "its version")
    try:
        return parse_flux_version(text)
    except ValueError:
        raise UserError(
            f"`{flux} version` printed no 'commands: <version>' line: is this flux-core's flux?"
        ) from None


def flux_env(base: os._Environ[str] | dict[str, str], drop_uri: bool = False) -> dict[str, str]:
    """The environment of a flux command kary runs."""
    env = dict(base)
    # A caller's rank settings would send every rank to one folder; a test instance
    # must not find the caller's instance.  ASCII job ids are easy to check.
    for name in (
        "KARY_RANK_PREFIX",
        "KARY_RANK_ROOT",
        "KARY_DIRECT_HOST",
        *(("FLUX_URI",) if drop_uri else ()),
    ):
        env.pop(name, None)
    env["FLUX_F58_FORCE_ASCII"] = "1"
    # Flux's rc1 and rc3 run `bash -c` on every broker with a socket for stdin, and
    # bash then reads ~/.bashrc as if it were a remote login unless SHLVL says it is
    # not a top-level shell.  A `flux start` typed in a terminal has SHLVL >= 1; kary
    # started by a program (a script, cron, CI) may have it unset or 0, and then every
    # broker ran the user's shell set-up twice a cell (here: pyenv's rehash behind a
    # lock the brokers queue on, 2.2-2.9 s -> 4.4-5.5 s for an 8-broker start and stop).
    shlvl = env.get("SHLVL", "")
    if not shlvl.isdigit() or int(shlvl) < 1:
        env["SHLVL"] = "1"
    return env


def run_flux(command: list[str], env: dict[str, str], shown: str) -> str:
    """stdout of a short flux command; BackendError `shown: why` when it fails."""
    try:
        done = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_QUERY_TIMEOUT_S,
            env=env,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise BackendError(f"{shown}: {err}") from None
    if done.returncode != 0:
        raise BackendError(f"{shown}: {last_line(done.stderr) or f'exit status {done.returncode}'}")
    return done.stdout


def messages(err: bytes) -> list[str]:
    """The non-blank lines a command printed on stderr."""
    return [line for line in err.decode("utf-8", "replace").splitlines() if line.strip()]


def last_line(text: str) -> str:
    """The last non-blank line of `text`, stripped ("" when there is none)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""
