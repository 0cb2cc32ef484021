"""The emulator's backend (`--backend local`): each cell on an emulated Flux instance here.

`run()` starts `python -m experiments.emulator.instance` as a session leader in
a fresh temporary folder; the instance forks one broker per rank and runs the
rendered entrypoint under bash as rank 0.  Whatever happens (exit, timeout,
Ctrl-C), the whole process group is killed and the folder removed before
`run()` returns or raises.

Links and faults (`--emulator-fault`, a testing aid) arrive checked by the plan
(model/links.py, model/faults.py); the launcher reads them with the same rules.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from experiments.backends.base import Backend, BackendError, BackendSettings, RunResult
from experiments.backends.entry_stamps import entry_spans, stamped
from experiments.backends.waiting import communicate_or_stop
from experiments.emulator import FIDELITY, LINKS_FIDELITY
from experiments.emulator.calibration import (
    Calibration,
    FidelityKey,
    calibrated_costs,
    emulator_source_hash,
    fidelity_here,
    machine_key,
)
from experiments.emulator.content import DEFAULT_PURGE_TARGET_SIZE
from experiments.emulator.instance import STARTUP_FAILED, group_members
from experiments.errors import UserError
from experiments.machine_load import CpuMeter
from experiments.model.links import LinkSettings
from experiments.model.machine_check import check_emulator_here
from experiments.model.places import Here
from experiments.model.plan import Cell
from experiments.model.render import Rendered

__all__ = ["EmulatorBackend"]

_GRACE_S = 3.0
_MAX_SOCKET_PATH = 100
_REAP_S = 5.0


class EmulatorBackend(Backend):
    """Cells run on the emulator (see experiments/emulator); timings are the emulator's."""

    name = "local"

    def __init__(
        self,
        *,
        minicluster_name: str = "flux-sample",
        links: LinkSettings | None = None,
        workdir: Path | None = None,
        faults: tuple[str, ...] = (),
        purge_target_size: int | None = None,
        cpu_scale: float = 1.0,
    ) -> None:
        self.minicluster_name = minicluster_name
        # The links as typed: the launcher reads the same text (model/units.py).
        links = links or LinkSettings()
        self.link_bandwidth = links.typed("link_bandwidth")
        self.link_latency = links.typed("link_latency")
        self.workdir = workdir
        self.faults = tuple(faults)
        self.purge_target_size = purge_target_size or DEFAULT_PURGE_TARGET_SIZE
        # The CPU the emulator burns per MiB, scaled to this machine (emulator.calibration).
        self._calibration: Calibration | None = None
        # A deliberate mis-calibration, x this (benchmarks/fidelity.py --emulator-scale
        # shows the fidelity check fails on one); recorded in run.json when not 1.
        self.cpu_scale = cpu_scale

    @classmethod
    def from_settings(cls, settings: BackendSettings) -> EmulatorBackend:
        return cls(
            minicluster_name=settings.render.name if settings.render else "flux-sample",
            links=settings.links,
            workdir=settings.workdir,
            faults=tuple(settings.options.get("faults", ())),
        )

    def up(self) -> None:
        """Check what a run needs here (bash, Linux) and calibrate the CPU costs."""
        check_emulator_here(Here.now())
        self._calibrated()

    def _calibrated(self) -> Calibration:
        if self._calibration is None:
            self._calibration = calibrated_costs()
        return self._calibration

    def calibration(self) -> Calibration:
        """The CPU costs this machine's probe gave (before any deliberate scale)."""
        return self._calibrated()

    def fidelity_key(self, flux_version: str | None = None) -> FidelityKey:
        """What this emulator's fidelity is kept under (emulator.calibration's FidelityKey):
        this machine, the emulator's source, the costs it burns and their scale."""
        return FidelityKey(
            machine_key(), emulator_source_hash(), self._costs(), self.cpu_scale, flux_version
        )

    def _costs(self) -> str:
        return self._calibrated().costs.scaled(self.cpu_scale).text()

    def _command(self, cell: Cell, root: Path, entrypoint: Path) -> list[str]:
        cmd = [
            sys.executable,
            "-m",
            "experiments.emulator.instance",
            "--root",
            str(root),
            "--size",
            str(cell.nodes),
            "--topo",
            cell.topo,
            "--name",
            self.minicluster_name,
            "--purge-target-size",
            str(self.purge_target_size),
            "--cpu-costs",
            self._costs(),
        ]
        if self.link_bandwidth:
            cmd += ["--bandwidth", self.link_bandwidth]
        if self.link_latency:
            cmd += ["--latency", self.link_latency]
        for fault in self.faults:
            cmd += ["--fault", fault]
        return [*cmd, "--", "bash", str(entrypoint)]

    def run(self, cell: Cell, rendered: Rendered, timeout: float | None) -> RunResult:
        folder = Path(tempfile.mkdtemp(prefix="kary-", dir=self._scratch_base(cell.nodes)))
        try:
            entrypoint = folder / "entrypoint.sh"
            entrypoint.write_text(rendered.entrypoint_sh)
            started, called = time.monotonic(), time.time()
            meter = CpuMeter()
            try:
                proc = subprocess.Popen(
                    self._command(cell, folder / "i", stamped(entrypoint)),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                    cwd=folder,
                    env=self._env(),
                )
            except OSError as exc:
                raise BackendError(f"cannot start the emulator: {exc}") from None
            try:
                out, errout, timed_out = communicate_or_stop(
                    proc, timeout, lambda: _stop_group(proc)
                )
            finally:
                _stop_group(proc)
            wall = time.monotonic() - started
            others = meter.others()
            spans = entry_spans(folder, called, time.time())
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        result = self._result(cell, proc.returncode, out, errout, timed_out, timeout, wall)
        result.provenance["emulator"]["other_load"] = round(others, 3)
        if others >= LOADED:
            print(loaded_warning(cell.id, others), file=sys.stderr)
        return dataclasses.replace(result, spans=spans)

    def _scratch_base(self, nodes: int) -> str | None:
        """Where the instance folder goes: unix socket paths must stay under ~107 bytes."""
        for base in (self.workdir, tempfile.gettempdir(), "/tmp"):
            if base is None:
                continue
            longest = Path(base) / "kary-12345678" / "i" / "sock" / str(nodes)
            if len(str(longest)) < _MAX_SOCKET_PATH:
                return str(base)
        raise UserError(
            f"no short scratch folder for the emulator's sockets (tried {self.workdir}, "
            f"{tempfile.gettempdir()}, /tmp): set TMPDIR to a short path"
        )

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        # Never let a caller's Flux or rank settings leak into the emulated ranks.
        for name in ("FLUX_URI", "KARY_RANK_PREFIX"):
            env.pop(name, None)
        return env

    def _result(
        self,
        cell: Cell,
        rc: int | None,
        out: bytes,
        err: bytes,
        timed_out: bool,
        timeout: float | None,
        wall: float,
    ) -> RunResult:
        messages = [
            line.removeprefix("kary-emulator: ")
            for line in err.decode("utf-8", "replace").splitlines()
            if line.strip()
        ]
        problems = [m for m in messages if " exited (" in m or m.startswith("error")]
        error: str | None = None
        if timed_out:
            error = f"timed out after {timeout:g} s"
            rc = None
        elif rc == STARTUP_FAILED:
            error = "emulator failed to start: " + ("; ".join(problems) or "see the log")
            rc = None
        if problems and error is None:
            error = "emulator: " + "; ".join(problems)
        provenance: dict[str, Any] = {
            "cluster": f"local:{socket.gethostname()}",
            "instance_type": None,
            "image": None,
            "emulator": {
                "brokers": cell.nodes,
                "cores": os.cpu_count(),
                "link_bandwidth": self.link_bandwidth,
                "link_latency": self.link_latency,
                "purge_target_size": self.purge_target_size,
                "cpu_costs_ms_per_mib": self._costs(),
                "calibration": self._calibrated().record(),
                # Which emulator ran (its code): with the costs and scale, its fidelity's key.
                "emulator_source": emulator_source_hash(),
                **({"cpu_scale": self.cpu_scale} if self.cpu_scale != 1.0 else {}),
                "fidelity": LINKS_FIDELITY
                if self.link_bandwidth or self.link_latency
                else fidelity_here(FIDELITY, self.fidelity_key()),
                # Injected on purpose (--emulator-fault): the cell tests a template, it
                # measures nothing.
                "faults": list(self.faults),
                "wall_seconds": round(wall, 3),
                "messages": messages[-20:],
            },
        }
        return RunResult(
            log=out.decode("utf-8", "replace"),
            rc=rc,
            timed_out=timed_out,
            error=error,
            provenance=provenance,
        )


# The share of all cores other work may keep busy before an emulator cell says its times
# are stretched: the emulator's brokers are processes on these cores, and a 4M block
# took 0.38 s on an idle machine and 1.14 s beside another job (issue 60, item 12).
LOADED = 0.25


def loaded_warning(cell_id: str, others: float) -> str:
    return (
        f"warning: {cell_id}: other work kept {others:.0%} of this machine's cores busy "
        "while it ran; the emulator's times stretch with that (up to 3x seen), so compare "
        "it with cells run on an idle machine only with care (run.json: emulator.other_load)"
    )


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop the instance and everything it started: SIGTERM, a grace period, then SIGKILL."""
    pgid = proc.pid
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)  # the launcher tears its brokers down
            proc.wait(timeout=_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    if proc.poll() is None:
        proc.wait()
    deadline = time.monotonic() + _REAP_S
    while group_members(pgid) and time.monotonic() < deadline:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            break
        time.sleep(0.02)
