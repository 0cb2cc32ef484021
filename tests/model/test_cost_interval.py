"""A plan's interval: it holds the truth inside the history, widens and says so
where the plan reaches beyond it, names what it assumes, and --max-cost
checks its high end."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from cost_history_samples import MIB, TRUE_FLUX, truth_seconds, write_sweep
from typer.testing import CliRunner

from experiments.cli import app
from experiments.estimate.plan_estimate import estimate_for
from experiments.model.plan import Cell
from experiments.resources import resource_path

runner = CliRunner()
HOST = socket.gethostname()  # a plan on flux runs here: history from here matches it


def _history(root: Path, nodes: tuple[int, ...], host: str = HOST) -> Path:
    for n in nodes:
        write_sweep(root / f"parsed-{n}", TRUE_FLUX, n, seed=n, host=host)
    return root


def _cells(nodes: int, topos: tuple[str, ...] = ("kary:1", "kary:2", "kary:0")) -> list[Cell]:
    return [
        Cell(nodes, topo, i, (16 * MIB, 64 * MIB), ("all",)) for i in range(2) for topo in topos
    ]


def test_a_plan_inside_its_history_holds_the_truth_in_a_narrow_interval(tmp_path: Path) -> None:
    history = _history(tmp_path / "history", (4, 8, 16))
    truth = truth_seconds(write_sweep(tmp_path / "held" / "parsed-12", TRUE_FLUX, 12, seed=99))
    estimate = estimate_for(_cells(12), "flux", verify=True, history=history)
    assert estimate.seconds_low < truth < estimate.seconds_high
    assert estimate.seconds_low < estimate.seconds < estimate.seconds_high
    assert estimate.seconds_high / estimate.seconds_low < 2
    assert estimate.extrapolated == []


def test_more_nodes_than_the_history_widens_the_interval_and_says_so(tmp_path: Path) -> None:
    history = _history(tmp_path, (4, 6))
    inside = estimate_for(_cells(6, ("kary:1", "kary:2")), "flux", verify=True, history=history)
    beyond = estimate_for(_cells(30, ("kary:1", "kary:2")), "flux", verify=True, history=history)
    (nodes,) = [t for t in beyond.extrapolated if t.startswith("30 nodes, history has 4-6: ")]
    # Issue 60, item 13: which terms the distance moves, how far, and what it does.
    assert "start-up, distribute and verify (" in nodes
    assert "5.0x beyond it: the 80% interval " in nodes and "x wider each way" in nodes
    assert not any("nodes" in text for text in inside.extrapolated)
    width = [e.seconds_high / e.seconds_low for e in (inside, beyond)]
    assert width[1] > 1.3 * width[0]


def test_a_bigger_size_and_another_fan_out_are_extrapolations(tmp_path: Path) -> None:
    history = _history(tmp_path, (8, 12))
    cells = [Cell(30, "kary:29", 0, (2**30,), ("all",))]
    estimate = estimate_for(cells, "flux", verify=True, history=history)
    texts = " | ".join(estimate.extrapolated)
    assert "size 1G, history has 16M-64M" in texts
    assert "fan-out 29 depth 1, history has fan-out 1-11" in texts


def test_history_from_another_machine_is_another_environment(tmp_path: Path) -> None:
    history = _history(tmp_path / "history", (4, 8), host="elsewhere")
    here = _history(tmp_path / "here", (4, 8))
    other = estimate_for(_cells(8), "flux", verify=True, history=history)
    same = estimate_for(_cells(8), "flux", verify=True, history=here)
    assert any(
        t.startswith("another environment: flux test-instance on ") for t in other.extrapolated
    )
    assert other.seconds_high / other.seconds_low > same.seconds_high / same.seconds_low


def test_without_history_the_defaults_are_the_one_assumption(tmp_path: Path) -> None:
    estimate = estimate_for(_cells(8), "flux", verify=True)
    (assumption,) = estimate.assumptions
    assert assumption.term == "defaults" and assumption.share == 1.0
    assert "no history for this environment" in assumption.detail


def test_terms_history_cannot_tell_are_assumptions_with_their_share(tmp_path: Path) -> None:
    # One node count: the per-broker start-up cannot be told from the per-cell one.
    history = _history(tmp_path, (8,))
    estimate = estimate_for(_cells(16), "flux", verify=True, history=history)
    terms = {a.term: a for a in estimate.assumptions}
    assert "broker_start_s" in terms and "shared_cpu_s_per_gb" in terms
    assert 0 < terms["shared_cpu_s_per_gb"].share < 1
    assert "cannot tell it apart" in terms["shared_cpu_s_per_gb"].detail


@pytest.mark.usefixtures("answering_flux")  # a flux plan checks that `flux` is flux-core's
def test_plan_json_adds_the_interval_beside_the_old_keys(tmp_path: Path) -> None:
    history = _history(tmp_path / "history", (4, 8))
    result = runner.invoke(
        app,
        [
            *("plan", "--backend", "flux", "--exact-nodes", "30", "--topo", "kary:2"),
            *("--sizes", "16M,64M", "--history", str(history), "--json"),
            *("--data-dir", str(tmp_path / "raw")),
        ],
    )
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    for key in ("estimated_seconds", "estimated_cost_usd", "breakdown_seconds", "time_model"):
        assert key in plan
    assert plan["estimated_seconds_low"] < plan["estimated_seconds"]
    assert plan["estimated_seconds"] < plan["estimated_seconds_high"]
    assert plan["estimated_cost_usd_low"] == plan["estimated_cost_usd_high"] == 0.0
    assert any(t.startswith("30 nodes, history has 4-8: ") for t in plan["extrapolated"])
    assert all({"term", "detail", "share"} == set(a) for a in plan["assumptions"])


@pytest.mark.usefixtures("answering_flux")
def test_plan_text_shows_the_range_and_the_extrapolation(tmp_path: Path) -> None:
    history = _history(tmp_path / "history", (4, 8))
    result = runner.invoke(
        app,
        [
            *("plan", "--backend", "flux", "--exact-nodes", "30", "--topo", "kary:2"),
            *("--sizes", "16M", "--history", str(history), "--data-dir", str(tmp_path / "r")),
        ],
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    (time_line,) = [line for line in lines if line.startswith("time: ")]
    assert " - " in time_line and "80% interval" in time_line
    assert any(line.startswith("extrapolated: 30 nodes, history has 4-8: ") for line in lines)


def test_max_cost_is_checked_against_the_high_end(tmp_path: Path, flux_distribute: Path) -> None:
    args = [
        *("plan", "--exact-nodes", "6", "--topo", "kary:2", "--sizes", "1G", "--json"),
        *("--cluster", str(resource_path("clusters", "eks-6.yaml"))),
        *("--history", str(flux_distribute / "parsed-eks-exact-6")),
        "--no-smoke",  # the study's interval alone (the smoke cell's: test_cluster_smoke.py)
        *("--data-dir", str(tmp_path / "raw")),
    ]
    plan = json.loads(runner.invoke(app, args).stdout)
    point, high = plan["estimated_cost_usd"], plan["estimated_cost_usd_high"]
    assert high > point > 0
    between = f"{(point + high) / 2:.2f}"
    refused = runner.invoke(app, [*args[:-1], str(tmp_path / "raw"), "--max-cost", between])
    assert refused.exit_code == 2
    # The figure is the high end, said as the plan's `--max-cost holds` line says it.
    guarded = plan["max_cost_holds_to"]["usd"]
    assert guarded >= high
    assert f"estimated at ${guarded:,.2f} at most ({plan['max_cost_holds_to']['what']})" in (
        refused.stderr
    )
    assert "high end" in refused.stderr and "more than --max-cost" in refused.stderr
    allowed = runner.invoke(app, [*args, "--max-cost", f"{guarded + 0.01:.2f}"])
    assert allowed.exit_code == 0, allowed.output


def test_the_seed_eks_history_is_an_assumption_about_machines(flux_distribute: Path) -> None:
    from experiments.model.cluster_spec import load_cluster_spec

    estimate = estimate_for(
        [Cell(6, "kary:2", 0, (2**30,), ("all",))],
        "kubernetes",
        verify=False,
        cluster=load_cluster_spec(resource_path("clusters", "eks-6.yaml")),
        history=flux_distribute / "parsed-eks-exact-6",
    )
    details = " | ".join(a.detail for a in estimate.assumptions)
    assert "history does not record its machines: taken as the plan's" in details
    assert estimate.extrapolated == []


def test_the_farther_beyond_the_history_the_wider_the_interval(tmp_path: Path) -> None:
    """Issue 60, item 13: 8x, 64x and 512x the history's nodes, each wider than the last,
    relative to its own point."""
    history = _history(tmp_path, (4, 6))
    widths = []
    for nodes in (6, 48, 384, 3072):
        estimate = estimate_for(_cells(nodes, ("kary:2",)), "flux", verify=True, history=history)
        widths.append(estimate.seconds_high / estimate.seconds_low)
    assert widths == sorted(widths) and len(set(widths)) == 4, widths
