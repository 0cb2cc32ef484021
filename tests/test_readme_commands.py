"""The README's commands run as printed, as far as a test can run them (issue 60, done
when: "the README's commands run from a fresh clone in CI as far as they can run
there"): every `kary ...` line of "The CLI at a glance" that names no placeholder
(`...`, `a|b`, a sweep file or a cloud) runs here, a run or race as its --dry-run
(nothing starts), into a temporary folder; each must exit 0."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from experiments.cli import app

REPO = Path(__file__).resolve().parent.parent


def _commands() -> list[str]:
    readme = (REPO / "README.md").read_text()
    block = readme[readme.index("## The CLI at a glance") :]
    block = block[block.index("```bash") + 7 : block.index("```\n", block.index("```bash") + 7)]
    found = []
    for line in block.splitlines():
        command = line.split("  #")[0].strip()
        if not command.startswith("kary ") or "..." in command or "|" in command:
            continue
        if any(word in command for word in ("study.yaml", "--up", "prices refresh", "compare")):
            continue  # a file of your own, a cloud, the price API, two parsed trees
        found.append(command)
    return found


def test_the_readme_lists_the_commands_this_test_runs() -> None:
    commands = _commands()
    assert any(c.startswith("kary race --exact-nodes 16") for c in commands)
    assert any(c.startswith("kary plan --exact-nodes 6") for c in commands)
    assert len(commands) >= 8, commands


@pytest.mark.parametrize("command", _commands())
def test_a_readme_command_runs_as_printed(command: str, tmp_path: Path) -> None:
    args = shlex.split(command)[1:]
    args = [str(tmp_path / Path(a).name) if a.startswith(("/tmp/", "designs/")) else a
            for a in args]  # fmt: skip
    # data/... and report.html: the README's folders, here under tmp_path.
    args = [str(tmp_path / a) if a.startswith("data/") or a == "report.html" else a for a in args]
    if args[0] in ("run", "race", "plan"):
        args += ["--data-dir", str(tmp_path / "raw")]
    if args[0] in ("run", "race"):
        args.append("--dry-run")
    runner = CliRunner()
    if args[0] in ("parse", "report"):
        # A raw tree as the main job leaves one (the emulator, one small cell), and its parse.
        raw = ["--backend", "local", "--exact-nodes", "4", "--topo", "kary:2", "--sizes", "1M"]
        made = runner.invoke(app, ["run", *raw, "--data-dir", str(tmp_path / "data" / "raw")])
        assert made.exit_code == 0, made.output
        if args[0] == "report":
            data = ["--data", str(tmp_path / "data/raw"), "--out", str(tmp_path / "data/parsed")]
            assert runner.invoke(app, ["parse", *data]).exit_code == 0
    result = runner.invoke(app, args)
    assert result.exit_code == 0, (command, result.output)
