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
