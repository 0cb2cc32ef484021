"""`kary <command>` imports only the module of that command (start-up time of `kary parse`)."""

from __future__ import annotations

import subprocess
import sys

import typer

from experiments.cli import COMMAND_MODULES, app, build_app


def test_every_top_level_command_is_mapped_to_the_module_that_registers_it() -> None:
    everything = typer.main.get_command(app)
    assert sorted(everything.commands) == sorted(COMMAND_MODULES)  # type: ignore[attr-defined]
    for name, module in COMMAND_MODULES.items():
        alone = typer.main.get_command(build_app([module]))
        assert name in alone.commands  # type: ignore[attr-defined]


def test_kary_parse_starts_without_the_sweep_and_cluster_machinery() -> None:
    code = (
        "import sys\n"
        "from experiments.cli import main\n"
        "try:\n"
        "    main(['parse', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith(('experiments.', 'pandas'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    loaded = out.strip().splitlines()[-1]
    assert "experiments.cli.analysis" in loaded
    for heavy in (
        "experiments.model.sweep",
        "experiments.clusters",
        "experiments.cli.run",
        "pandas",
    ):
        assert f"'{heavy}'" not in loaded, heavy


def test_an_unknown_command_still_lists_every_command() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "from experiments.cli import main; main(['nosuch'])"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert "No such command 'nosuch'" in out.stderr


def _modules_after(statement: str, *flags: str) -> set[str]:
    """The modules a fresh interpreter holds after `statement` (with `flags`)."""
    code = f"import sys\n{statement}\nprint(' '.join(sorted(sys.modules)))\n"
    out = subprocess.run(
        [sys.executable, *flags, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return set(out.split())


def test_the_programs_kary_starts_per_cell_load_only_what_they_use() -> None:
    """The emulator's `flux` runs on every rank for every step, as `python -S`
    (experiments/emulator/instance.py); the emulated instance and the session guard
    start once a cell.  None of them may pull in the plan's pydantic models, and the
    flux client not even typing or dataclasses (they were two thirds of its start)."""
    client = _modules_after("import experiments.emulator.flux", "-S")
    assert client.isdisjoint({"typing", "dataclasses", "inspect", "subprocess", "pydantic"})
    for program in ("experiments.emulator.instance", "experiments.backends.flux.session_guard"):
        loaded = _modules_after(f"import {program}")
        assert program in loaded
        assert "pydantic" not in loaded and "experiments.model.plan" not in loaded, program
