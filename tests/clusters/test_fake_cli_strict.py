"""The fake CLIs accept only what the real ones document, and fail as they do otherwise,
so a misspelt flag in a command kary builds fails its test instead of a real cluster."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from experiments.cli import app
from experiments.clusters.gke import GkeProvider
from experiments.clusters.shell import Command

GKE_30 = Path(__file__).resolve().parents[2] / "clusters" / "gke-30.yaml"


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (
            ["gcloud", "container", "clusters", "create", "c", "--zon", "us-central1-a"],
            2,
            "ERROR: (gcloud.container.clusters.create) unrecognized arguments: --zon",
        ),
        (
            ["gcloud", "container", "clusters", "crate", "c"],
            2,
            "ERROR: (gcloud.container.clusters) Invalid choice: 'crate'.",
        ),
        (
            ["gcloud", "scheduler", "jobs", "create", "http", "j", "--oauth-scope", "x"],
            2,
            "ERROR: (gcloud.scheduler.jobs.create.http) unrecognized arguments: --oauth-scope",
        ),
        (
            ["eksctl", "delete", "cluster", "--name", "c", "--regoin", "us-east-2"],
            1,
            "Error: unknown flag: --regoin",
        ),
        (["eksctl", "create", "clusters", "-f", "x"], 1, 'Error: unknown command "clusters" '
         'for "eksctl create"'),
        (
            ["kubectl", "-n", "operator-system", "rollout", "status", "d", "--timeout-s=1"],
            1,
            "error: unknown flag: --timeout-s",
        ),
        (["kubectl", "version", "-c"], 1, "error: unknown shorthand flag: 'c' in -c"),
    ],
)  # fmt: skip
def test_an_undocumented_flag_or_command_fails_as_the_real_tool_does(
    fake_cloud: Any, argv: list[str], code: int, message: str
) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr.strip()) == (code, message)
    assert fake_cloud.state()["gke"] == {} and fake_cloud.state()["eks"] == {}


def test_the_documented_spellings_are_accepted(fake_cloud: Any) -> None:
    done = subprocess.run(
        ["kubectl", "version", "--client", "--output=json", "--request-timeout=5s"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert '"clientVersion"' in done.stdout


def test_aws_refuses_what_its_reference_does_not_list() -> None:
    # Not through the fixture, which asserts kary never calls aws: the table itself.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fakes"))
    import cli_reference

    cli_reference.check("aws", ["eks", "get-token", "--cluster-name", "c", "--region", "r"])
    with pytest.raises(cli_reference.Refused) as refused:
        cli_reference.check("aws", ["eks", "get-token", "--cluster", "c"])
    assert (str(refused.value), refused.value.code) == (
        "aws: error: unknown options: --cluster",
        252,
    )


def test_a_misspelt_flag_in_a_command_kary_builds_fails_its_test(
    fake_cloud: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = GkeProvider.create_command

    def misspelt(self: GkeProvider, lease: Any) -> Command:
        command = built(self, lease)
        argv = tuple("--machine-typ" if a == "--machine-type" else a for a in command.argv)
        return Command(argv, command.timeout, command.what)

    monkeypatch.setattr(GkeProvider, "create_command", misspelt)
    result = CliRunner().invoke(app, ["cluster", "up", str(GKE_30), "--yes", "--no-operator"])
    assert result.exit_code == 2
    assert (
        "ERROR: (gcloud.container.clusters.create) unrecognized arguments: --machine-typ"
        in result.stderr
    )
    assert fake_cloud.running() == []  # the switch armed before it is deleted again
