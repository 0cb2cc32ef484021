"""`kary run --cluster --up --down --max-cost`: the session around a sweep and the spending cap."""

from __future__ import annotations

import os
import signal
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from experiments.clusters import Lease, Shell, provider_for
from experiments.clusters.session import (
    SpendingCap,
    cluster_session,
    lease_hours,
    run_cluster_lines,
)
from experiments.errors import UserError
from experiments.model.cluster_spec import load_cluster_spec
from experiments.model.plan import Cell

CLUSTERS = Path(__file__).resolve().parents[2] / "clusters"
NAME = "kary-topology-30"
CELL = Cell(30, "kary:16", 0, (2**30,), ("all",))


def _provider() -> Any:
    return provider_for(load_cluster_spec(CLUSTERS / "eks-30.yaml"), Shell())


def test_the_lease_covers_the_plan_with_margin() -> None:
    assert lease_hours(600, None) == 4.0  # never below the default
    assert lease_hours(5 * 3600, None) == 9.0  # 5 h x 1.5 + 1, rounded up
    assert lease_hours(3600, 2.5) == 2.5
    with pytest.raises(UserError, match=r"--max-hours 1 is shorter than the plan \(about 2.0 h\)"):
        lease_hours(7200, 1)


def test_the_run_plan_shows_the_exact_create_and_delete_commands_with_cost() -> None:
    lease = Lease(
        "tester",
        datetime(2026, 6, 27, 15, 0, tzinfo=timezone.utc),
        datetime(2026, 6, 27, 19, 0, tzinfo=timezone.utc),
    )
    lines = run_cluster_lines(_provider(), lease, up=True, down=True)
    config = Path(os.environ["HOME"]) / ".local" / "state" / "kary" / "eksctl" / f"{NAME}.yaml"
    assert f"  eksctl create cluster -f {config}" in lines
    assert f"  eksctl delete cluster --name {NAME} --region us-east-2 --wait" in lines
    assert lines[0] == f"--up creates {NAME} first (lease until 2026-06-27 19:00 UTC):"
    assert lines[-4:] == [
        "cost: $19.60/h (30 x c5a.4xlarge at $0.6160/h + control plane $0.10/h + disks "
        "30 x 200 GiB gp2 at $0.0274/h + NAT gateway 1 x $0.0450/h + public IPv4 31 x "
        "$0.0050/h; prices as of 2025-07-01)",
        "create: about 20 min 0 s ($6.53)",
        "delete: about 10 min 0 s ($3.27)",
        "at most $78.41 if it lives until it expires (4 h, 2026-06-27 19:00 UTC)",
    ]


def test_a_plan_over_the_cap_is_refused_before_anything_starts() -> None:
    cap = SpendingCap(max_usd=50.0, hourly_usd=18.58, predicted_s=[])
    with pytest.raises(UserError) as caught:
        cap.check_plan(74.32)
    assert str(caught.value) == (
        "the plan is estimated at $74.32, more than --max-cost $50.00: run fewer cells or "
        "raise --max-cost"
    )
    cap.check_plan(49.99)
    SpendingCap(max_usd=None, hourly_usd=18.58, predicted_s=[]).check_plan(1e9)


def test_the_sweep_stops_before_a_cell_that_would_pass_the_cap() -> None:
    now = [0.0]
    cap = SpendingCap(
        max_usd=20.0, hourly_usd=36.0, predicted_s=[600.0, 600.0], teardown_s=300.0,
        clock=lambda: now[0],
    )  # fmt: skip
    assert cap.before_cell(0, CELL) is None  # $0 + $9 (cell + teardown) <= $20
    now[0] = 1800.0  # $18 spent
    assert cap.before_cell(1, CELL) == (
        "--max-cost $20.00: $18.00 spent so far and cell 30/kary-16/0 (with teardown) would "
        "add about $9.00"
    )


def _made(fake_cloud: Any) -> list[str]:
    return [c[1] for c in fake_cloud.calls("eksctl") if c[1] != "utils"]


def test_up_and_down_wrap_the_sweep_even_when_it_fails(fake_cloud: Any, aws: Any) -> None:
    aws(NAME, ["workers"])
    lease = Lease.new(4)
    lines: list[str] = []
    with pytest.raises(RuntimeError), cluster_session(_provider(), True, True, lease, lines.append):
        assert fake_cloud.running() != []  # the cluster is up inside
        raise RuntimeError("the sweep broke")
    assert _made(fake_cloud) == ["create", "delete"]
    assert fake_cloud.running() == []
    assert lines[-1] == f"kary: deleted cluster {NAME}"


def test_sigterm_during_the_sweep_still_deletes_the_cluster(fake_cloud: Any, aws: Any) -> None:
    # (SIGINT during a create is covered in test_cluster_eks.py.)
    aws(NAME, ["workers"])
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM))
    session = cluster_session(_provider(), True, True, Lease.new(4), lambda line: None)
    with pytest.raises(KeyboardInterrupt), session:
        timer.start()
        time.sleep(5)
    timer.cancel()
    assert fake_cloud.running() == []


def test_without_up_an_existing_cluster_is_used_and_down_deletes_it(fake_cloud: Any) -> None:
    state = fake_cloud.state()
    state["eks"][NAME] = {"region": "us-east-2", "status": "ACTIVE", "version": "1.33",
                          "tags": {}, "nodegroups": []}  # fmt: skip
    fake_cloud.write_state(state)
    with cluster_session(_provider(), False, True, None, lambda line: None):
        assert fake_cloud.running() == [f"eks:{NAME}"]
    assert _made(fake_cloud) == ["delete"]
    assert fake_cloud.running() == []


def test_a_failed_up_runs_no_sweep_and_leaves_nothing(fake_cloud: Any, aws: Any) -> None:
    fake_cloud.fail("EKSCTL_CREATE", "fail-halfway")
    ran = []
    with (
        pytest.raises(UserError),
        cluster_session(_provider(), True, True, Lease.new(4), lambda line: None),
    ):
        ran.append(True)
    assert ran == []
    assert fake_cloud.running() == []
