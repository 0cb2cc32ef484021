"""The rendered entrypoint carries --chunksize, --mmap and the cache reload only when asked."""

from __future__ import annotations

import subprocess
from pathlib import Path

from typer.testing import CliRunner

from experiments.cli import app
from experiments.formats.cell_layout import NO_KNOBS, Knobs
from experiments.model.render import render_cell

MIB = 2**20


def _script(knobs: Knobs) -> str:
    """The entrypoint's commands, its comments left out."""
    script = render_cell(4, "kary:2", [MIB], ["all", "leaves"], "c", knobs=knobs).entrypoint_sh
    return "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("#"))


def _creates(script: str) -> list[str]:
    return [line.strip() for line in script.splitlines() if "flux archive create" in line]


def test_without_knobs_the_entrypoint_runs_fluxs_defaults() -> None:
    script = _script(NO_KNOBS)
    assert "--chunksize" not in script and "--mmap" not in script
    assert "module reload" not in script
    assert '"knobs"' not in script


def test_each_knob_appears_where_flux_takes_it(tmp_path: Path) -> None:
    script = _script(Knobs(chunksize=256 * 1024, mmap=True, purge_target_size=64 * MIB))
    creates = _creates(script)
    assert len(creates) == 2
    assert all("--chunksize=262144 --mmap --directory" in line for line in creates)
    assert "flux exec -r all flux module reload content purge-target-size=67108864" in script
    assert 'flux module reload "$backing"' in script  # rank 0's backing store re-registered
    assert '\\"knobs\\": {\\"chunksize\\": \\"256K\\", \\"mmap\\": \\"on\\", ' in script
    # --mmap is for the create on rank 0 only, never for an extract on other ranks.
    assert all("--mmap" not in line for line in script.splitlines() if "archive extract" in line)
    path = tmp_path / "entrypoint.sh"
    path.write_text(script)
    subprocess.run(["bash", "-n", str(path)], check=True)


def test_one_knob_brings_only_itself() -> None:
    script = _script(Knobs(mmap=False))
    assert "--mmap" not in script and "--chunksize" not in script
    assert "module reload" not in script
    assert '\\"knobs\\": {\\"mmap\\": \\"off\\"}' in script


def test_kary_render_takes_the_knob_flags(tmp_path: Path) -> None:
    args = ["render", "--nodes", "4", "--topo", "kary:2", "--sizes", "1M", "--out", str(tmp_path)]
    result = CliRunner().invoke(app, [*args, "--chunksize", "256K", "--mmap"])
    assert result.exit_code == 0, result.output
    script = (tmp_path / "entrypoint.sh").read_text()
    assert "cell 4/kary-2/chunksize-256K_mmap-on/0." in script
    assert "--chunksize=262144 --mmap --directory" in script
    bad = CliRunner().invoke(app, [*args, "--purge-target-size", "8G"])
    assert bad.exit_code == 2
    assert bad.stderr.startswith("kary: error: --purge-target-size: invalid purge-target-size '8G'")
