"""Odd gcloud output (empty, garbage, the wrong shape) at every place kary reads it.

One line naming the command and what kary expected, exit 2, never a
traceback; what was made before the odd output is still deleted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from experiments.cli import app

runner = CliRunner()
GKE_30 = Path(__file__).resolve().parents[2] / "clusters" / "gke-30.yaml"
NAME = "kary-topology-30"
ZONE = "us-central1-a"
DESCRIBE = f"gcloud container clusters describe {NAME} --zone {ZONE} --format json"
LIST = f"gcloud container clusters list --zone {ZONE} --format json"
JOB = f"gcloud scheduler jobs describe kary-expire-{NAME} --location us-central1 --format json"
GARBAGE = "WARNING: Python 3.8 is no longer supported\nERROR: gcloud crashed (TypeError)\n"


def _odd(wrong_shape: str) -> list[Any]:
    return [
        pytest.param("", id="empty"),
        pytest.param(GARBAGE, id="garbage"),
        pytest.param(wrong_shape, id="wrong-shape"),
    ]


def _one_line_error(result: Any) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    last = result.stderr.splitlines()[-1]
    assert last.startswith("kary: error: ")
    return last


def _cli(*args: str) -> Any:
    return runner.invoke(app, ["cluster", args[0], str(GKE_30), *args[1:]])


def _creates(fake_cloud: Any) -> list[list[str]]:
    return [c for c in fake_cloud.calls("gcloud") if c[1:4] == ["container", "clusters", "create"]]


@pytest.mark.parametrize("text", _odd('{"status": "RUNNING"}'))
def test_describe_before_create_stops_before_anything_is_made(fake_cloud: Any, text: str) -> None:
    fake_cloud.prints("gcloud container clusters describe", text)
    last = _one_line_error(_cli("up", "--yes"))
    assert last.startswith(f"kary: error: `{DESCRIBE}` printed ")
    assert "an object with name (text), status (text), " in last
    assert _creates(fake_cloud) == []
    assert fake_cloud.running() == []
    assert _one_line_error(_cli("status")) == last


@pytest.mark.parametrize("text", _odd('[{"name": "a", "resourceLabels": "owner=me"}]'))
def test_reap_with_an_odd_cluster_list_deletes_nothing(fake_cloud: Any, text: str) -> None:
    assert _cli("up", "--yes", "--no-operator").exit_code == 0
    fake_cloud.prints("gcloud container clusters list", text)
    last = _one_line_error(_cli("reap"))
    assert last.startswith(f"kary: error: `{LIST}` printed ")
    assert "a list, each an object with name (text), " in last
    assert f"gke:{NAME}" in fake_cloud.running()


@pytest.mark.parametrize(
    ("call", "text", "expected"),
    [
        ("gcloud config get-value project", "", "a project id"),
        ("gcloud config get-value project", GARBAGE, "a project id"),
        ("gcloud config get-value project", "Fake_Project", "a project id"),
        ("gcloud projects describe", "", "a project number"),
        ("gcloud projects describe", GARBAGE, "a project number"),
        ("gcloud projects describe", "12ab", "a project number"),
    ],
)
def test_odd_project_answers_stop_before_anything_is_made(
    fake_cloud: Any, call: str, text: str, expected: str
) -> None:
    fake_cloud.prints(call, text)
    last = _one_line_error(_cli("up", "--yes"))
    assert last.startswith(f"kary: error: `{call}")
    assert f"(expected {expected}" in last
    # The project is read by the checks before the switch: nothing was made to delete.
    assert "what was made" not in last
    assert _creates(fake_cloud) == []
    assert fake_cloud.state()["jobs"] == {}
    assert fake_cloud.running() == []


@pytest.mark.parametrize("text", _odd('{"scheduleTime": 1782588600}'))
def test_status_with_an_odd_switch_says_it_could_not_read_it(fake_cloud: Any, text: str) -> None:
    assert _cli("up", "--yes", "--no-operator").exit_code == 0
    fake_cloud.prints("gcloud scheduler jobs describe", text)
    result = _cli("status")
    assert result.exit_code == 0, result.output
    switch = result.stdout.splitlines()[2]
    assert switch.startswith(f"dead-man switch: could not read the dead-man switch: `{JOB}` ")


def test_a_schedule_time_that_is_not_a_time_is_said(fake_cloud: Any) -> None:
    assert _cli("up", "--yes", "--no-operator").exit_code == 0
    fake_cloud.prints("gcloud scheduler jobs describe", '{"scheduleTime": "soon", "state": "ON"}')
    switch = _cli("status").stdout.splitlines()[2]
    assert switch == (
        f"dead-man switch: Cloud Scheduler job kary-expire-{NAME} (ON) resizes default-pool to 0 "
        "(its scheduleTime 'soon' is not a time)"
    )


@pytest.mark.parametrize("text", _odd("[]"))
def test_an_odd_check_after_a_failed_delete_says_it_could_not_check(
    fake_cloud: Any, text: str
) -> None:
    assert _cli("up", "--yes", "--no-operator").exit_code == 0
    fake_cloud.fail("GCLOUD_DELETE", "fail-once")
    # `down` asks first (answered), deletes (fails), then checks what is left: odd.
    fake_cloud.prints("gcloud container clusters describe", text, skip=1)
    last = _one_line_error(_cli("down"))
    assert last.startswith(
        f"kary: error: could not check what is left of {NAME}: `{DESCRIBE}` printed "
    )
    assert last.endswith(f"check with `kary cluster status {GKE_30}` or in the console")


@pytest.mark.parametrize("text", _odd('{"name": 7}'))
def test_an_odd_check_while_cleaning_up_a_failed_create_still_deletes(
    fake_cloud: Any, text: str
) -> None:
    fake_cloud.fail("GCLOUD_CREATE", "fail-halfway")
    fake_cloud.prints("gcloud container clusters describe", text, skip=1)
    last = _one_line_error(_cli("up", "--yes"))
    assert last.startswith(f"kary: error: creating cluster {NAME} failed (`gcloud container ")
    assert "and deleting what was made did not finish: could not check what is left" in last
    # The delete ran; only its check was odd.  Unsure the cluster is gone, kary keeps
    # its dead-man switch (harmless without a cluster, the guard if one is left).
    assert fake_cloud.running() == [f"job:kary-expire-{NAME}"]
