"""`kary plan` refuses what `kary run` would (issue 36): every check a backend makes when
it comes up is made when the sweep is planned, with the same one line, exit 2."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typer.testing import CliRunner

import experiments.api
from experiments.cli import app
from experiments.errors import UserError
from experiments.model.links import LinkSettings
from experiments.model.places import AllocationSize, FreeDisk, Here
from experiments.model.plan import Cell
from experiments.model.sweep import Sweep
from experiments.model.sweep_check import check_cells, check_sweep

runner = CliRunner()
NETEM_FAILED = "tc qdisc add dev kary-probe0 root handle 1: netem delay 1ms"


@dataclass
class Probes:
    """Probes that record what they were asked and refuse what they are told to."""

    box_refusal: str | None = None
    allocation_nodes: int | None = None
    asked: list[str] = field(default_factory=list)

    def check_flux(self, flux: str) -> None:
        self.asked.append(f"flux {flux}")

    def check_box(self, links: LinkSettings) -> None:
        self.asked.append(f"box latency={links.latency} bandwidth={links.bandwidth}")
        if self.box_refusal:
            raise UserError(self.box_refusal)

    def allocation(self, flux: str) -> AllocationSize | None:
        self.asked.append("allocation")
        if self.allocation_nodes is None:
            return None
        return AllocationSize(self.allocation_nodes, on_this_machine=False)

    def free_disk(self) -> FreeDisk | None:
        return None


def _here(probes: Probes, flux: str | None = "/opt/flux/bin/flux", **facts: bool) -> Here:
    return Here(flux=flux, in_allocation=facts.pop("in_allocation", False), probes=probes, **facts)


def test_a_box_plan_asks_this_machine_for_the_qdiscs_its_links_need() -> None:
    probes = Probes()
    check_sweep(Sweep(exact_nodes=4, link_latency="5ms"), _here(probes))
    assert probes.asked == ["flux /opt/flux/bin/flux", "box latency=0.005 bandwidth=None"]
    refusing = Probes(box_refusal="cannot build a box here: this kernel has no netem")
    with pytest.raises(UserError, match="this kernel has no netem"):
        check_sweep(Sweep(exact_nodes=4, link_latency="5ms"), _here(refusing))


def test_a_test_instance_asks_for_flux_core_and_nothing_of_the_box() -> None:
    probes = Probes()
    check_sweep(Sweep(exact_nodes=4, backend="flux"), _here(probes))
    assert probes.asked == ["flux /opt/flux/bin/flux"]
    with pytest.raises(UserError, match="--backend flux needs flux-core: put flux-core's `flux`"):
        check_sweep(Sweep(exact_nodes=4, place="test-instance"), _here(Probes(), flux=None))


def test_the_emulator_needs_bash_and_linux() -> None:
    with pytest.raises(UserError, match="runs the entrypoint with bash: install bash"):
        check_sweep(Sweep(exact_nodes=4, backend="local"), _here(Probes(), bash=False))
    with pytest.raises(UserError, match="needs Linux"):
        check_sweep(Sweep(exact_nodes=4, backend="local"), _here(Probes(), linux=False))


def test_an_allocation_too_small_for_the_biggest_cell_is_refused_by_the_plan() -> None:
    here = _here(Probes(allocation_nodes=4), in_allocation=True)
    checked = check_sweep(Sweep(exact_nodes=8), here)
    assert checked.allocation == AllocationSize(4, on_this_machine=False)
    with pytest.raises(
        UserError, match="cell 8/kary-2/0 needs 8 nodes but this Flux instance has 4"
    ):
        check_cells(checked, [Cell(8, "kary:2", 0, (1,), ("all",))], 8)


def _fake_tools(folder: Path) -> None:
    """flux-core's `flux` that answers its version, and an `unshare` whose probe namespace
    has no netem, as on a kernel built without CONFIG_NET_SCH_NETEM."""
    folder.mkdir()
    scripts = {
        "flux": "echo 'commands:    \t\t0.88.0'",
        "unshare": f"echo 'FAILED: {NETEM_FAILED}' >&2; exit 3",
        "ip": "exit 0",
        "tc": "exit 0",
    }
    for name, body in scripts.items():
        (folder / name).write_text(f"#!/bin/sh\n{body}\n")
        (folder / name).chmod(0o755)


@pytest.mark.parametrize("command", ["plan", "run"])
def test_latency_in_a_box_without_netem_is_refused_before_anything_starts(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_tools(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("FLUX_URI", raising=False)
    data = tmp_path / "raw"
    args = [command, "--exact-nodes", "4", "--topo", "kary:2", "--sizes", "16M"]
    result = runner.invoke(app, [*args, "--link-latency", "5ms", "--data-dir", str(data)])
    assert result.exit_code == 2, result.output
    # One line: `kary run` prints no header first, and nothing was made.
    assert result.stderr.splitlines() == [
        "kary: error: cannot build a box here: this kernel has no netem, which --link-latency "
        f"needs (CONFIG_NET_SCH_NETEM): `{NETEM_FAILED}` failed in a probe namespace"
    ]
    assert result.stdout == ""
    assert not data.exists()


def test_a_plan_that_falls_back_to_the_emulator_says_why_and_how_to_get_flux(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The README's box example, in a shell without flux-core on PATH (after `make demo`,
    # whose PATH was its own): one line says why it is the emulator.
    monkeypatch.setattr(experiments.api, "here_now", lambda: Here(flux=None, in_allocation=False))
    args = ["plan", "--exact-nodes", "8", "--topo", "kary:2", "--link-bandwidth", "200Mbit"]
    result = CliRunner().invoke(app, [*args, "--data-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    (note,) = [line for line in result.stdout.splitlines() if "no flux-core" in line]
    assert note.startswith(
        "note: no flux-core `flux` on PATH, so the cells run on kary's emulator, not real "
        "Flux (a box of shaped links needs it too); for real Flux, put flux-core's `flux` on "
        "PATH: "
    )
    # Asked for by name, the emulator needs no excuse.
    asked = CliRunner().invoke(app, [*args, "--backend", "local", "--data-dir", str(tmp_path)])
    assert asked.exit_code == 0 and "no flux-core" not in asked.stdout
