"""The test-instance place: a cell's brokers as ``flux start --test-size=N`` on this machine.

The instance runs the rendered entrypoint as its initial program, under the
session guard (session_guard.py), so that no broker outlives the cell, a
timeout, a Ctrl-C or a crash of kary.  All ranks share this machine's one
filesystem, so each extracts into its own folder under KARY_RANK_ROOT.

`run_guarded` is that guarded start and wait; the box place starts its init
with it too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from experiments.backends.base import BackendError, RunResult
from experiments.backends.flux.session_guard import stop_guard
from experiments.backends.flux.site import FluxSite, flux_env, messages
from experiments.backends.waiting import communicate_or_stop
from experiments.initial_exit import EXIT_NAME
from experiments.model.plan import Cell

__all__ = ["run_guarded", "run_in_test_instance"]

_GUARD_GRACE_S = 10.0
# The guard runs as a module of this package: `python -m experiments.backends.flux.session_guard`.
_GUARD_MODULE = "experiments.backends.flux.session_guard"


def run_in_test_instance(
    site: FluxSite, cell: Cell, folder: Path, entrypoint: Path, timeout: float | None
) -> RunResult:
    """Run the cell's entrypoint on rank 0 of a test instance of `cell.nodes` brokers;
    the instance ends as soon as a stamped entrypoint has left its exit status."""
    env = flux_env(os.environ, drop_uri=True)
    env["TMPDIR"] = str(folder)
    env["KARY_RANK_ROOT"] = str(folder / "ranks")
    # A statedir that exists before the broker starts is kept, and a kept one gets
    # the content store a Flux Operator pod has (WAL, NORMAL) instead of a temporary
    # one's OFF/OFF (flux-core broker/rundir.c, content-sqlite.c): creates compare.
    statedir = folder / "statedir"
    statedir.mkdir(exist_ok=True)
    command = [
        site.flux,
        "start",
        f"--test-size={cell.nodes}",
        f"-Stbon.topo={cell.topo}",
        f"-Sstatedir={statedir}",
        "bash",
        str(entrypoint),
    ]
    return run_guarded(site, cell, command, env, folder, timeout, entrypoint.parent / EXIT_NAME)


def run_guarded(
    site: FluxSite,
    cell: Cell,
    command: list[str],
    env: dict[str, str],
    folder: Path,
    timeout: float | None,
    end_file: Path | None = None,
) -> RunResult:
    """Run `command` under the session guard: nothing it starts outlives the cell, and
    with `end_file` nothing outlives the exit status it holds (initial_exit.py)."""
    ending = ["--end-file", str(end_file)] if end_file is not None else []
    guarded = [sys.executable, "-m", _GUARD_MODULE, *ending, "--", *command]
    started = time.monotonic()
    try:
        guard = subprocess.Popen(
            guarded,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            cwd=folder,
            env=env,
        )
    except OSError as exc:
        raise BackendError(f"cannot start flux: {exc}") from None
    try:
        out, err, timed_out = communicate_or_stop(guard, timeout, lambda: _stop(guard))
    finally:
        left = _stop(guard)
    wall = time.monotonic() - started
    rc: int | None = guard.returncode
    said = messages(err)
    error = None
    if timed_out:
        rc, error = None, f"timed out after {timeout:g} s"
    elif box_failures := [m for m in said if m.startswith("kary box:")]:
        error, rc = "; ".join(box_failures[-3:]), None
    elif rc is not None and rc >= 128 and not out:
        error = "flux start died: " + ("; ".join(said[-3:]) or f"exit status {rc}")
        rc = None
    if left:
        error = (error + "; " if error else "") + f"flux processes survived: {left}"
    provenance = site.provenance(cell, wall, messages=said[-20:], cores=os.cpu_count())
    return RunResult(out.decode("utf-8", "replace"), rc, timed_out, error, provenance)


def _stop(guard: subprocess.Popen[bytes]) -> list[int]:
    return stop_guard(guard, _GUARD_GRACE_S)
