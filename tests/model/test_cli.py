"""The CLI in-process: exact outputs, one-line errors with exit 2, every command documented."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from experiments.cli import app

runner = CliRunner()


def _commands(command: object, prefix: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    children = getattr(command, "commands", None)
    if not children:
        yield prefix, command
        return
    for name, child in children.items():
        yield from _commands(child, (*prefix, name))


def test_every_command_has_a_summary_and_an_example() -> None:
    commands = list(_commands(typer.main.get_command(app)))
    assert len(commands) >= 5
    undocumented = [
        " ".join(path)
        for path, command in commands
        if not (command.help or "").strip() or "Example:" not in (command.help or "")
    ]
    assert undocumented == []


def test_designs_show_prints_the_overlay() -> None:
    result = runner.invoke(
        app, ["designs", "show", "--nodes", "4", "--topo", "binomial", "--hostname", "node"]
    )
    assert result.exit_code == 0
    assert result.stdout == ("0 node: full\n├─ 1 node: full\n└─ 2 node: full\n   └─ 3 node: full\n")


def test_designs_generate_writes_the_seed_rule(tmp_path: Path) -> None:
    out = tmp_path / "d.json"
    result = runner.invoke(
        app, ["designs", "generate", "--min-nodes", "4", "--max-nodes", "5", "--out", str(out)]
    )
    assert result.exit_code == 0
    assert result.stdout == f"wrote 5 designs for 4..5 nodes to {out}\n"
    assert [d["topo"] for d in json.loads(out.read_text())] == [
        "binomial",
        "kary:1",
        "kary:2",
        "kary:1",
        "kary:2",
    ]


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["designs", "show", "--nodes", "6", "--topo", "kary:2;id"],
            "kary: error: invalid topology 'kary:2;id': expected kary:K (K >= 0), binomial or "
            "mincrit[:K]\n",
        ),
        (
            ["designs", "show", "--nodes", "0"],
            "kary: error: invalid --nodes 0: must be a whole number from 1 to 100000\n",
        ),
        (
            ["plan", "--exact-nodes", "30", "--topo", "kary:16", "--backend", "slurm"],
            "kary: error: unknown backend 'slurm': choose from flux, local, kubernetes\n",
        ),
        (
            ["plan", "--exact-nodes", "30", "--topo", "kary:16", "--sizes", "2"],
            "kary: error: invalid size '2': give a unit (K, M, G or T), e.g. 2G\n",
        ),
        (
            ["plan", "--exact-nodes", "30", "--topo", "kary:16", "--name", "x;reboot"],
            "kary: error: invalid --name 'x;reboot': use lower-case letters, digits and '-', "
            "start and end with a letter or digit, at most 63 characters\n",
        ),
        (
            ["plan", "--exact-nodes", "6", "--cluster", "/nonexistent.yaml"],
            "kary: error: cluster file /nonexistent.yaml does not exist\n",
        ),
        (
            ["render", "--nodes", "4", "--topo", "binomial:1", "--out", "/tmp/x"],
            "kary: error: invalid topology 'binomial:1': binomial takes no argument\n",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], line: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert result.stderr == line
    assert result.stdout == ""


def test_plan_for_the_main_job(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            *("plan", "--exact-nodes", "30", "--topo", "kary:16"),
            *("--backend", "local", "--data-dir", str(tmp_path)),
        ],
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "kary plan: 1 cell to run, 0 already done (skipped)"
    assert lines[1] == (
        "backend local · sizes 16M,64M · strategies all · iterations 1 · order given"
    )
    # Issue 60, item 7: the sizes in bytes, and the convention that made them.
    assert lines[2] == (
        "sizes in bytes: 16M = 16,777,216; 64M = 67,108,864 (K, M, G, T are binary: "
        "1G = 2^30 bytes)"
    )
    assert lines[3] == "designs: 1 topology at 30 nodes, from --topo"
    assert lines[4].split() == ["cell", "nodes", "topology", "predicted"]
    assert lines[5].split()[:3] == ["30/kary-16/0", "30", "kary:16"]
    assert lines[-1] == "cost: $0.00 (nothing billed: emulated Flux on this machine)"


def test_plan_json_on_a_cluster_prices_the_sweep(tmp_path: Path, flux_distribute: Path) -> None:
    result = runner.invoke(
        app,
        [
            "plan",
            "--json",
            "--cluster",
            "clusters/eks-6.yaml",
            "--exact-nodes",
            "6",
            "--min-size",
            "1",
            "--max-size",
            "10",
            "--iters",
            "3",
            "--data-dir",
            str(tmp_path),
            "--history",
            str(flux_distribute / "parsed-eks-exact-6"),
            "--up",
            "--down",
        ],
    )
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert len(plan["cells"]) == 12
    assert plan["backend"] == "kubernetes" and plan["instance_type"] == "c5a.4xlarge"
    # 6 x $0.616 + the control plane at the standard rate: eks-6.yaml's EKS 1.35 is in
    # standard support until 2027-03-27 (clusters/prices.yaml); + 6 disks of 150 GB gp2
    # at $0.10 per GB-month (730 h); + eksctl's NAT gateway ($0.045/h) and 7 public IPv4
    # addresses ($0.005/h each: 6 nodes' and the gateway's): 3.696 + 0.10 + 0.1233 + 0.08
    # = $3.9993/h.
    network = 0.045 + 7 * 0.005
    assert plan["hourly_usd"] == pytest.approx(
        6 * 0.616 + 0.10 + 6 * 150 * 0.10 / 730 + network, abs=1e-4
    )
    assert plan["disk_usd_per_hour"] == pytest.approx(6 * 150 * 0.10 / 730, abs=1e-4)
    assert plan["breakdown_seconds"]["provision"] == 1200
    assert plan["estimated_cost_usd"] == pytest.approx(
        plan["hourly_usd"] * plan["estimated_seconds"] / 3600, abs=0.01
    )
    assert plan["cells"][0]["raw_dir"] == str(tmp_path / "6" / "binomial" / "0")


def test_render_writes_both_files(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "render",
            "--nodes",
            "6",
            "--topo",
            "kary:2",
            "--sizes",
            "512M,2G",
            "--strategy",
            "all,middle",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[:2] == [
        f"wrote {tmp_path / 'minicluster.yaml'}",
        f"wrote {tmp_path / 'entrypoint.sh'}",
    ]
    script = (tmp_path / "entrypoint.sh").read_text()
    assert "kary_step distribute-middle-nodes-1 2G 2147483648" in script
    assert (tmp_path / "entrypoint.sh").stat().st_mode & 0o111


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["designs", "show", "--nodes", "abc"],
            "kary: error: Invalid value for '--exact-nodes' / '--nodes': Input should be a valid "
            "integer, unable to "
            "parse string as an integer (see 'kary designs show --help')\n",
        ),
        (["plan", "--zzz"], "kary: error: No such option: --zzz (see 'kary plan --help')\n"),
    ],
)
def test_flag_mistakes_are_one_line_too(args: list[str], line: str) -> None:
    result = runner.invoke(app, args)
    assert (result.exit_code, result.stderr) == (2, line)
