"""`kary network ...` in-process: exact output where practical, one-line errors with exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from botocore.stub import Stubber
from typer.testing import CliRunner

import experiments.cli.network as network_cli
from experiments.cli import app

runner = CliRunner()

MAP_TABLE = """\
kary:2 over 18 instances (16 with network topology): 17 TBON edges
TBON edges                                  input  proposed
same layer-3 switch                             1        10
same layer-2 only                               4         1
same layer-1 only                               8         4
no shared network node                          0         0
unknown (no topology)                           4         2
cross_l3 (not under one closest switch)        16         7
proposed order: small switch groups first, depth-first preorder, then swaps
"""


def test_map_prints_before_and_after_and_writes_the_order(example: Path, tmp_path: Path) -> None:
    out = tmp_path / "hosts.txt"
    result = runner.invoke(
        app, ["network", "map", str(example), "--topo", "kary:2", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == MAP_TABLE + (
        f"wrote the proposed order (rank 0 first, one host per line) to {out}\n"
    )
    hosts = out.read_text().splitlines()
    assert len(hosts) == 18 and hosts[0] == "i-0ceaf2ffbf3e0b6e9"


def test_map_json_with_names_and_a_hostlist(
    example: Path, node_names_file: Path, tmp_path: Path
) -> None:
    hostlist = tmp_path / "flux-hosts"
    hostlist.write_text("hpc7g-[01-16]\n")
    out = tmp_path / "order.txt"
    args = ["network", "map", str(example), "--topo", "kary:2", "--json", "--out", str(out)]
    args += ["--node-names", str(node_names_file), "--hostlist", str(hostlist), "--nodes", "16"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["cross_l3_before"], report["cross_l3_after"]) == (12, 5)
    assert report["nodes"] == 16 and report["edges"] == 15
    assert out.read_text().splitlines() == report["hosts"]
    assert sorted(report["hosts"]) == [f"hpc7g-{n:02d}" for n in range(1, 17)]
    assert all(i.startswith("i-0") for i in report["order"])
    assert report["before"]["layer-3"] + report["before"]["layer-2"] == 8
    # The MAP names two login nodes too; the hostlist leaves them out silently.
    assert result.stderr == ""


def test_graph_prints_the_switch_table(example: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["network", "graph", str(example), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "layer  switch                parent                switches  instances\n"
        "1      nn-a84bba07931db9253  -                            2         16\n"
        "2      nn-06a0799dc6ebd718b  nn-a84bba07931db9253         3         10\n"
        "2      nn-8c764d1c0acb3dea1  nn-a84bba07931db9253         2          6\n"
        "3      nn-3519a60a077bbd142  nn-06a0799dc6ebd718b         0          4\n"
        "3      nn-5fd55911ea2cbd390  nn-06a0799dc6ebd718b         0          2\n"
        "3      nn-880e8427abeec1297  nn-06a0799dc6ebd718b         0          4\n"
        "3      nn-97d529975dcb6de07  nn-8c764d1c0acb3dea1         0          2\n"
        "3      nn-b656a4d2bad821df9  nn-8c764d1c0acb3dea1         0          4\n"
        "2 instance(s) without network topology (type not supported, or not running): "
        "i-06593d1b61b4b171b (m6i.xlarge), i-02f3a9f889eeaf77e (m6i.xlarge)\n"
        f"wrote {tmp_path}/topology.html, {tmp_path}/topology.png and {tmp_path}/switches.csv\n"
    )


def test_export_to_stdout_matches_the_golden_file(example: Path, node_names_file: Path) -> None:
    args = ["network", "export", str(example), "--format", "slurm-block"]
    result = runner.invoke(app, [*args, "--node-names", str(node_names_file)])
    assert result.exit_code == 0, result.output
    golden = Path(__file__).parent / "golden" / "example.named.slurm-block.txt"
    assert result.stdout == golden.read_text()
    assert result.stderr == (
        "2 instance(s) without network topology (type not supported, or not running): "
        "login1 (m6i.xlarge), login2 (m6i.xlarge); left out\n"
    )


def test_export_reports_instances_the_map_leaves_out(example: Path, tmp_path: Path) -> None:
    names = tmp_path / "names.json"
    names.write_text('{"i-0468c6414ce9da201": "gpu-1", "i-01a714a16e81c1aad": "gpu-2"}')
    out = tmp_path / "topology.conf"
    args = ["network", "export", str(example), "--format", "slurm-tree", "--out", str(out)]
    result = runner.invoke(app, [*args, "--node-names", str(names)])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"wrote slurm-tree for 2 nodes to {out}\n"
    assert result.stderr == f"left out 16 instance(s) not named in {names}\n"
    assert out.read_text().splitlines()[-1] == "SwitchName=nn-b656a4d2bad821df9 Nodes=gpu-[1-2]"


def test_fetch_writes_the_aws_cli_shape(
    monkeypatch: pytest.MonkeyPatch, ec2: tuple[Any, Stubber], tmp_path: Path
) -> None:
    client, stubber = ec2
    answer = [
        {"InstanceId": "i-1", "InstanceType": "p5.48xlarge", "NetworkNodes": ["a", "b", "c"]},
        {"InstanceId": "i-2", "InstanceType": "t3.micro", "NetworkNodes": []},
    ]
    stubber.add_response(
        "describe_instance_topology",
        {"Instances": answer},
        {"InstanceIds": ["i-1", "i-2"]},
    )
    monkeypatch.setattr(network_cli, "ec2_client", lambda region: client)
    out = tmp_path / "topology.json"
    args = ["network", "fetch", "--region", "us-east-1", "--instance-ids", "i-1,i-2", "--out"]
    result = runner.invoke(app, [*args, str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text()) == {"Instances": answer}
    assert result.stdout == f"wrote 2 instances (1 with network topology) to {out}\n"
    assert result.stderr == (
        "1 instance(s) without network topology (type not supported, or not running): "
        "i-2 (t3.micro)\n"
    )
    # What fetch wrote is an input like any AWS CLI output.
    graph = runner.invoke(app, ["network", "map", str(out), "--topo", "kary:1", "--json",
                                "--out", str(tmp_path / "h")])  # fmt: skip
    assert json.loads(graph.stdout)["cross_l3_before"] == 1


def test_fetch_without_credentials_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(name, raising=False)
    real_client = network_cli.ec2_client

    def guarded(region: str | None) -> Any:
        client = real_client(region)

        def never_send(**_: Any) -> None:
            raise AssertionError("a request was about to leave the machine")

        client.meta.events.register("before-send.ec2.*", never_send)
        return client

    monkeypatch.setattr(network_cli, "ec2_client", guarded)
    out = tmp_path / "t.json"
    result = runner.invoke(app, ["network", "fetch", "--region", "us-east-1", "--out", str(out)])
    assert result.exit_code == 2
    assert result.stderr == (
        "kary: error: no AWS credentials found: run `aws configure`, set AWS_PROFILE, "
        "or export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY\n"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["map", "{ex}", "--topo", "kary:x"], "invalid topology 'kary:x'"),
        (["map", "{ex}", "--topo", "kary:2", "--nodes", "40"], "--nodes 40: there are 18"),
        (["map", "{missing}", "--topo", "kary:2"], "cannot read {missing}"),
        (["export", "{ex}", "--format", "slurm"], "unknown export format 'slurm'"),
        (["graph", "{missing}", "--out", "{tmp}"], "cannot read {missing}"),
        (["graph", "{empty}", "--out", "{tmp}"], "{empty} lists no instances"),
    ],
)
def test_user_errors_are_one_line(
    example: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text('{"Instances": []}')
    where = {"ex": str(example), "missing": str(tmp_path / "nope.json"), "tmp": str(tmp_path)}
    where["empty"] = str(empty)
    argv = ["network", *(a.format(**where) for a in args)]
    result = runner.invoke(
        app, [*argv, *(["--out", str(tmp_path / "o")] if args[0] == "map" else [])]
    )
    assert result.exit_code == 2
    assert result.stderr.startswith("kary: error: " + message.format(**where))
    assert result.stderr.count("\n") == 1


def test_every_network_command_has_help_with_an_example() -> None:
    for command in ("fetch", "graph", "export", "map"):
        result = runner.invoke(app, ["network", command, "--help"])
        assert result.exit_code == 0
        assert "Example:" in result.stdout and f"kary network {command}" in result.stdout
