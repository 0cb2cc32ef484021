"""The flux backend: each cell runs on real flux-core, wherever kary finds it.

Three places, chosen in `up()` and recorded in run.json as `place`:

- ``allocation``: kary runs inside a Flux instance (FLUX_URI is set: a user's
  `flux alloc` or batch job on an HPC cluster).  Each cell is a nested instance,
  ``flux batch -N <nodes> --broker-opts=-Stbon.topo=<topo>`` running the
  rendered entrypoint; kary follows its output with ``flux job attach`` and on
  a timeout or Ctrl-C cancels it (``flux cancel``).  The job also carries a
  time limit a minute past kary's timeout, so it ends even if kary is killed.
- ``test-instance``: on this machine otherwise, ``flux start --test-size=<nodes>
  -Stbon.topo=<topo>`` running the entrypoint, under `session_guard` so that no
  broker outlives the cell, a timeout, a Ctrl-C or a crash of kary.
- ``box``: on this machine, each broker in a network namespace of its own,
  bootstrapped from a config file and talking TCP over links `tc` shapes
  (experiments/box).  Chosen by ``place="box"`` and whenever links are shaped.

Where all ranks share one filesystem (a test instance, or an allocation whose
hostlist repeats a host) the entrypoint gets KARY_RANK_ROOT, under which each
rank uses a folder named by its own rank; on real nodes it is unset.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.backends.base import (
    Backend,
    BackendError,
    BackendSettings,
    RunResult,
    by_node_count,
)
from experiments.backends.flux.outer_instance import OuterInstance
from experiments.backends.flux.session_guard import stop_guard
from experiments.backends.waiting import communicate_or_stop
from experiments.box.launch import box_spec, read_link_bytes
from experiments.box.layout import BoxLayout, new_run_id
from experiments.box.links import LinkSettings, link_settings
from experiments.box.privileges import box_command_prefix
from experiments.box.reap import reap_dead_boxes
from experiments.errors import UserError
from experiments.estimate.bottleneck import bottleneck
from experiments.estimate.defaults import default_time_model
from experiments.formats.run_record import (
    ALLOCATION,
    BOX,
    NESTED,
    PER_CELL,
    PLACES,
    TEST_INSTANCE,
)
from experiments.model.plan import Cell
from experiments.model.render import Rendered

__all__ = [
    "ALLOCATION",
    "BOX",
    "HOW_TO_GET_FLUX",
    "TEST_INSTANCE",
    "FluxBackend",
    "current_place",
    "flux_on_path",
    "parse_flux_version",
]

HOW_TO_GET_FLUX = (
    "put flux-core's `flux` on PATH: your site's install (e.g. `module load flux`), "
    "`spack install flux-core`, your distribution's flux-core package, or build it "
    "from source (see the README, 'Real Flux')"
)
_QUERY_TIMEOUT_S = 60.0
_CANCEL_WAIT_S = 30.0
_GUARD_GRACE_S = 10.0
# A job id as `flux batch` prints it with FLUX_F58_FORCE_ASCII (f58), or decimal.
_JOBID = re.compile(r"^(f[1-9A-HJ-NP-Za-km-z]+|[0-9]+)$")


def flux_on_path() -> str | None:
    """Where `flux` (flux-core) is on PATH, or None."""
    return shutil.which("flux")


def current_place() -> str:
    """Where a cell would run now: inside the Flux instance of FLUX_URI, or a test instance."""
    return ALLOCATION if os.environ.get("FLUX_URI") else TEST_INSTANCE


def choose_place(requested: str | None, *, shaped: bool) -> str:
    """The place a flux cell runs: as asked, a box where links are shaped, else where kary is."""
    if requested is not None and requested not in PLACES:
        raise UserError(f"unknown place {requested!r}: choose from {', '.join(PLACES)}")
    if shaped and requested not in (None, BOX):
        raise UserError(
            "--link-bandwidth / --link-latency shape the box's links: "
            f"use --place box, not {requested}"
        )
    if requested == ALLOCATION and not os.environ.get("FLUX_URI"):
        raise UserError("--place allocation needs a Flux allocation (FLUX_URI is not set)")
    if requested is not None:
        return requested
    return BOX if shaped else current_place()


def parse_flux_version(text: str) -> str:
    """The `commands:` version from `flux version` output; ValueError if it has none."""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "commands" and value.split():
            return value.split()[0]
    raise ValueError("no 'commands:' line")


class FluxBackend(Backend):
    """Cells run on real flux-core; timings are Flux's own."""

    name = "flux"

    def __init__(
        self,
        *,
        workdir: Path | None = None,
        place: str | None = None,
        links: LinkSettings | None = None,
        host_prefix: str = "flux-sample",
        layout: str | None = None,
    ) -> None:
        self.workdir = workdir
        self.requested_place = place
        self.layout = layout or PER_CELL
        self.outer: OuterInstance | None = None
        self.links = links or LinkSettings()
        self.host_prefix = host_prefix
        self.box_prefix: list[str] = []
        self.flux: str | None = None
        self.flux_version: str | None = None
        self.place: str | None = None
        self.instance_nodes: int | None = None
        self.shared_filesystem = True

    @classmethod
    def from_settings(cls, settings: BackendSettings) -> FluxBackend:
        try:
            links = link_settings(
                settings.link_bandwidth,
                settings.link_latency,
                settings.root_link_bandwidth,
                settings.group_size,
                settings.group_link_bandwidth,
            )
        except ValueError as err:
            raise UserError(str(err)) from None
        return cls(
            workdir=settings.workdir,
            place=settings.place,
            links=links,
            host_prefix=settings.render.name if settings.render else "flux-sample",
            layout=settings.layout,
        )

    # ---- up: which flux, where ------------------------------------------

    def up(self) -> None:
        self.flux = flux_on_path()
        if self.flux is None:
            raise UserError(f"--backend flux needs flux-core: {HOW_TO_GET_FLUX}")
        text = self._query(["version"], "its version")
        try:
            self.flux_version = parse_flux_version(text)
        except ValueError:
            raise UserError(
                f"`{self.flux} version` printed no 'commands: <version>' line: "
                "is this flux-core's flux?"
            ) from None
        self.place = choose_place(self.requested_place, shaped=self.links.shaped)
        if self.place == BOX:
            self.box_prefix = box_command_prefix(
                bandwidth=bool(self.links.bandwidth or self.links.root_bandwidth),
                latency=bool(self.links.latency),
            )
            reaped = reap_dead_boxes(Path(self._scratch_base() or tempfile.gettempdir()))
            if reaped:
                print(f"kary: {reaped.text()}", file=sys.stderr)
            return
        if self.place == TEST_INSTANCE:
            return
        nodes = self._query(["resource", "list", "-s", "all", "-no", "{nnodes}"], "its nodes")
        if not nodes.strip().isdigit():
            raise UserError(
                f"`flux resource list` printed {nodes.strip()[:60]!r}, not a node count"
            )
        self.instance_nodes = int(nodes)
        hosts = self._query(["hostlist", "-e", "-d", " ", "instance"], "its hosts").split()
        # One disk per host: ranks share a filesystem only where a host repeats.
        self.shared_filesystem = len(hosts) != len(set(hosts))

    def _query(self, args: list[str], what: str) -> str:
        """Run `flux ARGS` for a fact about this Flux; any failure is a one-line UserError."""
        shown = " ".join(["flux", *args])
        try:
            return _run_flux([self.flux or "flux", *args], _flux_env(os.environ), shown)
        except BackendError as err:
            hint = ""
            if os.environ.get("FLUX_URI"):
                hint = " (FLUX_URI is set: is that instance still running?)"
            why = str(err).removeprefix(f"{shown}: ")
            raise UserError(f"cannot ask Flux for {what} (`{shown}`): {why}{hint}") from None

    def run_order(self, cells: Sequence[Cell]) -> list[Cell]:
        # One outer instance per node count in the nested layout: a count's cells together.
        return by_node_count(cells) if self.layout == NESTED else list(cells)

    def check_cells(self, cells: Sequence[Cell]) -> None:
        if self.place != ALLOCATION or self.instance_nodes is None or not cells:
            return
        biggest = max(cells, key=lambda c: c.nodes)
        if biggest.nodes > self.instance_nodes:
            raise UserError(
                f"cell {biggest.id} needs {biggest.nodes} nodes but this Flux instance has "
                f"{self.instance_nodes}: ask for a bigger allocation or plan fewer nodes"
            )

    # ---- run ---------------------------------------------------------------

    def run(self, cell: Cell, rendered: Rendered, timeout: float | None) -> RunResult:
        if self.place is None:
            raise BackendError("run() before up()")
        layout = None
        if self.place == BOX:
            layout = BoxLayout(new_run_id(), cell.nodes, cell.topo, self.host_prefix)
            folder = Path(self._scratch_base() or tempfile.gettempdir()) / layout.name
            folder.mkdir(mode=0o700)
        else:
            folder = Path(tempfile.mkdtemp(prefix="kary-flux-", dir=self._scratch_base()))
        try:
            entrypoint = folder / "entrypoint.sh"
            entrypoint.write_text(rendered.entrypoint_sh)
            if layout is not None:
                return self._run_box(cell, layout, folder, entrypoint, timeout)
            if self.place == TEST_INSTANCE and self.layout == NESTED:
                return self._run_nested(cell, folder, entrypoint, timeout)
            if self.place == TEST_INSTANCE:
                return self._run_test_instance(cell, folder, entrypoint, timeout)
            return self._run_in_allocation(cell, folder, entrypoint, timeout)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def down(self) -> None:
        self._stop_outer()

    # ---- the nested layout: one outer instance per node count ------------------

    def _run_nested(
        self, cell: Cell, folder: Path, entrypoint: Path, timeout: float | None
    ) -> RunResult:
        """Run the cell as a nested instance in the outer instance of its node count."""
        try:
            outer = self._outer_for(cell.nodes)
            env = _flux_env(os.environ)
            env["FLUX_URI"] = outer.uri
            # Rank 0's disk keeps each size's blob for the node count's later cells.
            env["KARY_BLOB_CACHE"] = str(outer.folder / "blobs")
            result = self._run_in_allocation(cell, folder, entrypoint, timeout, env, cell.nodes)
        except BaseException:
            # Ctrl-C (or a broken outer): nothing of the sweep outlives the cell.
            self._stop_outer()
            raise
        result.provenance["nested_in"] = outer.record()
        outer.cells += 1
        return result

    def _outer_for(self, nodes: int) -> OuterInstance:
        """The running outer instance of `nodes` brokers, started (and the last one
        stopped) when the node count changes or it died."""
        if self.outer is not None and (self.outer.nodes != nodes or not self.outer.running):
            self._stop_outer()
        if self.outer is None:
            folder = Path(tempfile.mkdtemp(prefix="kary-outer-", dir=self._scratch_base()))
            outer = OuterInstance(self.flux or "flux", nodes, folder, _flux_env(os.environ))
            try:
                outer.start()
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            self.outer = outer
        return self.outer

    def _stop_outer(self) -> None:
        outer, self.outer = self.outer, None
        if outer is None:
            return
        left = outer.stop()
        shutil.rmtree(outer.folder, ignore_errors=True)
        if left:
            raise BackendError(f"flux processes of the outer instance survived: {left}")

    def _scratch_base(self) -> str | None:
        # flux start's rundir (and its socket paths) go under TMPDIR=folder, and
        # unix socket paths must stay under ~107 bytes.
        for base in (self.workdir, tempfile.gettempdir(), "/tmp"):
            if base is not None and len(str(base)) < 60:
                return str(base)
        raise UserError("no short scratch folder for Flux's sockets: set TMPDIR to a short path")

    def _provenance(self, cell: Cell, wall: float, **extra: Any) -> dict[str, Any]:
        return {
            # The host kary ran on: a login or first node in an allocation.
            "cluster": f"flux:{socket.gethostname()}",
            "flux_version": self.flux_version,
            "place": self.place,
            # Inside a user's allocation every cell is nested in it already.
            "layout": {ALLOCATION: NESTED, TEST_INSTANCE: self.layout}.get(
                self.place or "", PER_CELL
            ),
            "image": None,  # no container: the flux on PATH ran it
            "instance_type": None,
            "flux": {"brokers": cell.nodes, "wall_seconds": round(wall, 3), **extra},
        }

    def _run_test_instance(
        self, cell: Cell, folder: Path, entrypoint: Path, timeout: float | None
    ) -> RunResult:
        env = _flux_env(os.environ, drop_uri=True)
        env["TMPDIR"] = str(folder)
        env["KARY_RANK_ROOT"] = str(folder / "ranks")
        command = [
            self.flux or "flux",
            "start",
            f"--test-size={cell.nodes}",
            f"-Stbon.topo={cell.topo}",
            "bash",
            str(entrypoint),
        ]
        return self._run_guarded(cell, command, env, folder, timeout)

    def _run_box(
        self,
        cell: Cell,
        layout: BoxLayout,
        folder: Path,
        entrypoint: Path,
        timeout: float | None,
    ) -> RunResult:
        env = _flux_env(os.environ, drop_uri=True)
        env["KARY_RANK_ROOT"] = str(folder / "ranks")
        # The direct baseline's server listens on rank 0's address, which every rank reaches.
        env["KARY_DIRECT_HOST"] = layout.address(0)
        cert = folder / "curve.cert"
        _run_flux([self.flux or "flux", "keygen", str(cert)], env, "flux keygen")
        config = folder / "broker.toml"
        config.write_text(layout.broker_config(str(cert)))
        spec = box_spec(layout, self.links, folder, self.flux or "flux", config, entrypoint, env)
        spec.write(folder / "box.json")
        command = [
            *self.box_prefix,
            sys.executable,
            "-m",
            "experiments.box.init",
            str(folder / "box.json"),
        ]
        bottlenecks = box_bottlenecks(cell, self.links)
        result = self._run_guarded(cell, command, env, folder, timeout)
        result.provenance["box"] = {
            "run_id": layout.run_id,
            "cpu_bound": any(b["cpu_bound"] for b in bottlenecks),
            "bottleneck": bottlenecks,
            "links": self.links.record(),
            "addresses": layout.address_plan(),
            "link_bytes": read_link_bytes(folder),
            "rootless": "--user" in self.box_prefix,
        }
        return result

    def _run_guarded(
        self,
        cell: Cell,
        command: list[str],
        env: dict[str, str],
        folder: Path,
        timeout: float | None,
    ) -> RunResult:
        """Run `command` under the session guard: nothing it starts outlives the cell."""
        guarded = [sys.executable, "-m", "experiments.backends.flux.session_guard", "--", *command]
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
            out, err, timed_out = communicate_or_stop(guard, timeout, lambda: _stop_guard(guard))
        finally:
            left = _stop_guard(guard)
        wall = time.monotonic() - started
        rc: int | None = guard.returncode
        messages = _messages(err)
        error = None
        if timed_out:
            rc, error = None, f"timed out after {timeout:g} s"
        elif box_failures := [m for m in messages if m.startswith("kary box:")]:
            error, rc = "; ".join(box_failures[-3:]), None
        elif rc is not None and rc >= 128 and not out:
            error = "flux start died: " + ("; ".join(messages[-3:]) or f"exit status {rc}")
            rc = None
        if left:
            error = (error + "; " if error else "") + f"flux processes survived: {left}"
        provenance = self._provenance(cell, wall, messages=messages[-20:], cores=os.cpu_count())
        return RunResult(out.decode("utf-8", "replace"), rc, timed_out, error, provenance)

    def _run_in_allocation(
        self,
        cell: Cell,
        folder: Path,
        entrypoint: Path,
        timeout: float | None,
        env: dict[str, str] | None = None,
        instance_nodes: int | None = None,
    ) -> RunResult:
        """The cell as a nested instance (`flux batch`) in the instance `env`'s FLUX_URI
        names: the user's allocation, or the nested layout's outer instance."""
        env = env if env is not None else _flux_env(os.environ)
        if self.shared_filesystem:
            env["KARY_RANK_ROOT"] = str(folder / "ranks")
        command = [
            self.flux or "flux",
            "batch",
            f"-N{cell.nodes}",
            f"--broker-opts=-Stbon.topo={cell.topo}",
            "--output=kvs",
            f"--job-name=kary-{cell.id.replace('/', '-')}",
        ]
        if timeout is not None:
            # The job ends by itself a minute after kary would have cancelled it.
            command.append(f"--time-limit={int(timeout) + 60}s")
        command.append(str(entrypoint))
        started = time.monotonic()
        submitted = _run_flux(command, env, "flux batch")
        jobid = submitted.strip()
        if not _JOBID.match(jobid):
            raise BackendError(f"flux batch printed {jobid[:60]!r}, not a job id")
        try:
            attach = subprocess.Popen(
                [self.flux or "flux", "job", "attach", jobid],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
            )
        except OSError as exc:
            self._cancel(jobid, env)
            raise BackendError(f"cannot follow job {jobid}: {exc}") from None

        def cancel() -> None:
            self._cancel(jobid, env)
            attach.kill()

        out, err, timed_out = communicate_or_stop(attach, timeout, cancel)
        wall = time.monotonic() - started
        rc: int | None = None if timed_out else attach.returncode
        hosts = _run_flux(
            [self.flux or "flux", "jobs", "-no", "{nodelist}", jobid], env, "flux jobs"
        ).strip()
        error = f"timed out after {timeout:g} s (job {jobid} cancelled)" if timed_out else None
        provenance = self._provenance(
            cell,
            wall,
            messages=_messages(err)[-20:],
            instance_nodes=instance_nodes or self.instance_nodes,
        )
        provenance.update({"jobid": jobid, "hosts": hosts or None})
        return RunResult(out.decode("utf-8", "replace"), rc, timed_out, error, provenance)

    def _cancel(self, jobid: str, env: dict[str, str]) -> None:
        """Cancel the job and wait until Flux has cleaned it up (its brokers are gone)."""
        flux = self.flux or "flux"
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


def box_bottlenecks(cell: Cell, links: LinkSettings) -> list[dict[str, Any]]:
    """Per size: the links' floor against the CPU every rank shares (estimate.bottleneck)."""
    model = default_time_model("flux", place=BOX)
    return [
        bottleneck(
            cell.nodes, cell.topo, size, model, links.bandwidth, links.root_bandwidth
        ).record(model.source)
        for size in cell.sizes
    ]


def _flux_env(base: os._Environ[str] | dict[str, str], drop_uri: bool = False) -> dict[str, str]:
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
    return env


def _run_flux(command: list[str], env: dict[str, str], shown: str) -> str:
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
        raise BackendError(
            f"{shown}: {_last_line(done.stderr) or f'exit status {done.returncode}'}"
        )
    return done.stdout


def _stop_guard(guard: subprocess.Popen[bytes]) -> list[int]:
    return stop_guard(guard, _GUARD_GRACE_S)


def _messages(err: bytes) -> list[str]:
    return [line for line in err.decode("utf-8", "replace").splitlines() if line.strip()]


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""
