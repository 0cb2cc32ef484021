"""`kary --help` says where to start and fits its lines (issue 60, item 10): no command's
description is cut with "...", at the top level or in a command group, at 80 columns."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from experiments.cli import COMMAND_MODULES, app

GROUPS = ["designs", "model", "prices", "cluster", "network", "box"]


@pytest.mark.parametrize("command", [[], *([g] for g in GROUPS)])
def test_help_lists_every_command_whole_within_80_columns(command: list[str]) -> None:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    listed = lines[lines.index("Commands:") + 1 :]
    assert listed, result.stdout
    # "Usage: kary designs [OPTIONS] COMMAND [ARGS]..." is click's usage line, not a cut.
    assert not [line for line in listed if line.endswith("...")], listed
    assert not [line for line in lines if len(line) > 80]


def test_the_top_help_says_where_to_start_and_lists_the_everyday_path_first() -> None:
    out = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "80"}).stdout
    assert "Start with `kary plan" in " ".join(out.split())
    listed = [line.split()[0] for line in out[out.index("Commands:") :].splitlines()[1:]]
    assert listed[:4] == ["plan", "run", "race", "parse"]
    assert set(listed) == set(COMMAND_MODULES)
