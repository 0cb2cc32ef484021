"""The allocation place: each cell a nested instance in the Flux instance kary runs inside.

kary runs inside a Flux instance when FLUX_URI is set (a user's `flux alloc`
or batch job on an HPC cluster).  Each cell is then a nested instance,
``flux batch -N <nodes> --broker-opts=-Stbon.topo=<topo>`` running the
rendered entrypoint; kary follows its output with ``flux job attach`` and on a
timeout or Ctrl-C cancels it (``flux cancel``) and waits until Flux has cleaned
it up.  The job also carries a time limit a minute past kary's timeout, so it
ends even if kary is killed.  The nested layout (nested.py) runs its cells the
same way, in the outer instance it started.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from experiments.backends.base import BackendError, RunResult
from experiments.backends.flux.site import FluxSite, flux_env, messages, run_flux
from experiments.backends.waiting import communicate_or_stop
from experiments.errors import UserError
from experiments.model.plan import Cell

__all__ = ["AllocationFacts", "allocation_facts", "run_in_allocation"]

_CANCEL_WAIT_S = 30.0
# A nested instance's statedir is temporary, so flux-core runs its content store with
# journal_mode=OFF and synchronous=OFF (content-sqlite.c, statedir-cleanup); the
# Flux Operator's instances, where the seed's data was taken, keep theirs (WAL,
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
) -> RunResult:
    """The cell as a nested instance (`flux batch`) in the instance `env`'s FLUX_URI
    names: the user's allocation, or the nested layout's outer instance."""
    env = env if env is not None else flux_env(os.environ)
    if site.shared_filesystem:
        env["KARY_RANK_ROOT"] = str(folder / "ranks")
    command = [
        site.flux,
        "batch",
        f"-N{cell.nodes}",
        f"--broker-opts=-Stbon.topo={cell.topo}",
        *SEED_CONTENT_STORE,
        "--output=kvs",
        f"--job-name=kary-{cell.id.replace('/', '-')}",
    ]
    if timeout is not None:
        # The job ends by itself a minute after kary would have cancelled it.
        command.append(f"--time-limit={int(timeout) + 60}s")
    command.append(str(entrypoint))
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

    out, err, timed_out = communicate_or_stop(attach, timeout, cancel)
    wall = time.monotonic() - started
    rc: int | None = None if timed_out else attach.returncode
    hosts = run_flux([site.flux, "jobs", "-no", "{nodelist}", jobid], env, "flux jobs").strip()
    error = f"timed out after {timeout:g} s (job {jobid} cancelled)" if timed_out else None
    provenance = site.provenance(
        cell,
        wall,
        messages=messages(err)[-20:],
        instance_nodes=instance_nodes or site.instance_nodes,
    )
    provenance.update({"jobid": jobid, "hosts": hosts or None})
    return RunResult(out.decode("utf-8", "replace"), rc, timed_out, error, provenance)


def cancel_job(flux: str, jobid: str, env: dict[str, str]) -> None:
    """Cancel the job and wait until Flux has cleaned it up (its brokers are gone)."""
    for command in (
        [flux, "cancel", jobid],
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
