"""The allocation place: each cell a nested instance in the Flux instance kary runs inside.

kary runs inside a Flux instance when FLUX_URI is set (a user's `flux alloc`
or batch job on an HPC cluster).  Each cell is then a nested instance,
``flux batch -N <nodes> --broker-opts=-Stbon.topo=<topo>`` running the
rendered entrypoint; kary follows its output with ``flux job attach`` and on a
timeout or Ctrl-C cancels it (``flux cancel``) and waits until Flux has cleaned
it up.  The job also carries a time limit a minute past kary's timeout, so it
ends even if kary is killed.  The nested layout (nested.py) runs its cells the
same way, in the outer instance it started, and there (every rank on this
machine) it ends each cell's nested instance as soon as the cell's exit status
is in `entry.exit` rather than wait for the nested brokers' rc3
(experiments/initial_exit.py), with the brokers' run and state folders in
folders kary removes.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from experiments.backends.base import BackendError, RunResult
from experiments.backends.entry_stamps import entry_spans, stamped
from experiments.backends.flux.site import FluxSite, flux_env, messages, run_flux
from experiments.backends.waiting import communicate_or_stop
from experiments.errors import UserError
from experiments.initial_exit import EXIT_NAME, KILL_NOISE, NO_JOB_CLEANUP, read_exit_status
from experiments.model.plan import Cell

__all__ = ["AllocationFacts", "allocation_facts", "run_in_allocation"]

_CANCEL_WAIT_S = 30.0
# A nested instance's statedir is temporary, so flux-core runs its content store with
# journal_mode=OFF and synchronous=OFF (content-sqlite.c, statedir-cleanup); the
# Flux Operator's instances, where flux-distribute's data was taken, keep theirs (WAL,
# NORMAL).  The config table wins over that default (content-sqlite.c process_config),
# so a create is timed on the store a cluster's cell would have.
SEED_CONTENT_STORE = (
    "--conf=content-sqlite.journal_mode=WAL",
    "--conf=content-sqlite.synchronous=NORMAL",
)
# A job id as `flux batch` prints it with FLUX_F58_FORCE_ASCII (f58), or decimal.
_JOBID = re.compile(r"^(f[1-9A-HJ-NP-Za-km-z]+|[0-9]+)$")


@dataclass(frozen=True)
class AllocationFacts:
    """The allocation's size, and the host of each of its ranks."""

    nodes: int
    hosts: tuple[str, ...]

    @property
    def shared_filesystem(self) -> bool:
        """Ranks share a filesystem where a host repeats (one disk per host)."""
        return len(self.hosts) != len(set(self.hosts))


def allocation_facts(query: Callable[[list[str], str], str]) -> AllocationFacts:
    """Ask the allocation (`query(flux arguments, what is asked)` gives stdout) for its
    nodes and hosts."""
    nodes = query(["resource", "list", "-s", "all", "-no", "{nnodes}"], "its nodes")
    if not nodes.strip().isdigit():
        raise UserError(f"`flux resource list` printed {nodes.strip()[:60]!r}, not a node count")
    hosts = query(["hostlist", "-e", "-d", " ", "instance"], "its hosts").split()
    return AllocationFacts(int(nodes), tuple(hosts))


def run_in_allocation(
    site: FluxSite,
    cell: Cell,
    folder: Path,
    entrypoint: Path,
    timeout: float | None,
    env: dict[str, str] | None = None,
    instance_nodes: int | None = None,
    on_this_machine: bool = False,
) -> RunResult:
    """The cell as a nested instance (`flux batch`) in the instance `env`'s FLUX_URI
    names: the user's allocation, or the nested layout's outer instance.

    `on_this_machine`: every rank of the instance runs here and sees `folder`
    (the outer test instance), so the cell ends early (the module doc).
    """
    env = env if env is not None else flux_env(os.environ)
    state = _StateFolders(folder, env) if on_this_machine else None
    try:
        return _run_batch(site, cell, folder, entrypoint, timeout, env, instance_nodes, state)
    finally:
        if state is not None:
            state.remove()


def _run_batch(
    site: FluxSite,
    cell: Cell,
    folder: Path,
    entrypoint: Path,
    timeout: float | None,
    env: dict[str, str],
    instance_nodes: int | None,
    state: _StateFolders | None,
) -> RunResult:
    if site.shared_filesystem:
        env["KARY_RANK_ROOT"] = str(folder / "ranks")
    command = [
        site.flux,
        "batch",
        f"-N{cell.nodes}",
        f"--broker-opts=-Stbon.topo={cell.topo}",
        *SEED_CONTENT_STORE,
        f"--env={NO_JOB_CLEANUP}",  # it runs no job to clean up (initial_exit.py)
        "--output=kvs",
        f"--job-name=kary-{cell.id.replace('/', '-')}",
    ]
    if timeout is not None:
        # The job ends by itself a minute after kary would have cancelled it.
        command.append(f"--time-limit={int(timeout) + 60}s")
    if state is not None:
        command.extend(state.broker_opts)
        entrypoint = stamped(entrypoint)  # its last act writes entry.exit
    command.append(str(entrypoint))
    called = time.time()
    started = time.monotonic()
    jobid = run_flux(command, env, "flux batch").strip()
    if not _JOBID.match(jobid):
        raise BackendError(f"flux batch printed {jobid[:60]!r}, not a job id")
    try:
        attach = subprocess.Popen(
            [site.flux, "job", "attach", jobid],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
    except OSError as exc:
        cancel_job(site.flux, jobid, env)
        raise BackendError(f"cannot follow job {jobid}: {exc}") from None

    def cancel() -> None:
        cancel_job(site.flux, jobid, env)
        attach.kill()

    exit_file = folder / EXIT_NAME

    def end_if_over() -> bool:
        if read_exit_status(exit_file) is None:
            return False
        # The cell is over; what its brokers would still do (rc3) is thrown away.
        stop_job(site.flux, jobid, env, ["job", "kill", "--signal=SIGKILL", jobid])
        return True

    early = end_if_over if state is not None else None
    out, err, timed_out = communicate_or_stop(attach, timeout, cancel, early)
    wall = time.monotonic() - started
    # The entrypoint's own status, also where kary's kill ended the job (a job that
    # ended by itself has the same one).
    status = read_exit_status(exit_file) if state is not None else None
    rc: int | None = None if timed_out else status if status is not None else attach.returncode
    said = messages(err)
    if status is not None:
        said = [line for line in said if not KILL_NOISE.search(line)]
    hosts = run_flux([site.flux, "jobs", "-no", "{nodelist}", jobid], env, "flux jobs").strip()
    error = f"timed out after {timeout:g} s (job {jobid} cancelled)" if timed_out else None
    provenance = site.provenance(
        cell,
        wall,
        messages=said[-20:],
        instance_nodes=instance_nodes or site.instance_nodes,
    )
    provenance.update({"jobid": jobid, "hosts": hosts or None})
    spans = entry_spans(folder, called, time.time()) if state is not None else {}
    return RunResult(out.decode("utf-8", "replace"), rc, timed_out, error, provenance, spans=spans)


class _StateFolders:
    """Where a nested instance on this machine keeps its brokers' run folders (in
    the cell's folder) and rank 0's state (where Flux would: in ${TMPDIR:-/var/tmp}).

    Each is sticky, so each broker makes a fresh temporary folder inside it as it
    would in /tmp (flux-core's rundir.c): the same layout, in folders kary removes
    after a nested instance killed before its own cleanup.
    """

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.run = folder / "run"
        base = env.get("TMPDIR") or "/var/tmp"
        try:
            self.run.mkdir(mode=0o700)
            self.state = Path(tempfile.mkdtemp(prefix="kary-state-", dir=base))
            for made in (self.run, self.state):
                made.chmod(0o1700)
        except OSError as err:  # e.g. a TMPDIR that is not writable: the cell's error
            raise BackendError(f"cannot make the nested instance's folders: {err}") from None
        self.broker_opts = [
            f"--broker-opts=-Srundir={self.run}",
            f"--broker-opts=-Sstatedir={self.state}",
        ]

    def remove(self) -> None:
        shutil.rmtree(self.state, ignore_errors=True)  # run/ goes with the cell's folder


def cancel_job(flux: str, jobid: str, env: dict[str, str]) -> None:
    """Cancel the job and wait until Flux has cleaned it up (its brokers are gone)."""
    stop_job(flux, jobid, env, ["cancel", jobid])


def stop_job(flux: str, jobid: str, env: dict[str, str], how: list[str]) -> None:
    """Run `flux <how>` and wait until Flux has cleaned the job up (its brokers are gone)."""
    for command in (
        [flux, *how],
        [flux, "job", "wait-event", "-t", f"{_CANCEL_WAIT_S:g}", jobid, "clean"],
    ):
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(
                command,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=_CANCEL_WAIT_S + 5,
                env=env,
            )
