"""Cost: the time model, calibration on the seed's EKS history, and pricing."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from experiments.errors import UserError
from experiments.estimate.calibration import calibrate, load_history
from experiments.estimate.plan_estimate import estimate_for
from experiments.estimate.prices import load_price_catalog
from experiments.estimate.time_model import default_time_model, predict_cell
from experiments.model.cluster_spec import load_cluster_spec
from experiments.model.plan import Cell, ExperimentSpec, plan_experiment
from experiments.resources import resource_path

GIB = 2**30
SEED_EKS_WALL_SECONDS = 9716  # the seed's README: the whole EKS 6-node sweep


def _eks6_plan(tmp_path: Path, designs: Path):  # type: ignore[no-untyped-def]
    spec = ExperimentSpec(
        designs_file=designs,
        exact_nodes=6,
        min_size_gb=1,
        max_size_gb=10,
        iters=3,
        backend="kubernetes",
        data_dir=tmp_path,
    )
    return plan_experiment(spec)


def test_eks6_sweep_calibrated_on_its_own_history_lands_near_its_wall_time(
    tmp_path: Path, flux_distribute: Path
) -> None:
    plan = _eks6_plan(tmp_path, flux_distribute / "kary-designs.json")
    cluster = load_cluster_spec(resource_path("clusters", "eks-6.yaml"))
    estimate = estimate_for(
        plan.cells,
        "kubernetes",
        verify=False,
        cluster=cluster,
        history=flux_distribute / "parsed-eks-exact-6",
    )
    assert len(plan.cells) == 12
    # kary makes its blobs in the run (the seed baked them into its image), so
    # the comparable figure leaves generation out.
    comparable = estimate.seconds - estimate.parts["generate"]
    assert abs(comparable - SEED_EKS_WALL_SECONDS) / SEED_EKS_WALL_SECONDS < 0.05
    assert estimate.parts["generate"] == pytest.approx(55 * 12 * 1.0)
    assert estimate.hourly_usd == pytest.approx(6 * 0.616 + 0.10)
    assert estimate.cost_usd == pytest.approx(estimate.hourly_usd * estimate.seconds / 3600)


def test_calibration_drops_the_seeds_failed_steps_recorded_as_timings(
    tmp_path: Path, flux_distribute: Path
) -> None:
    model = calibrate(default_time_model("kubernetes"), flux_distribute / "parsed-eks-exact-6")
    assert model.calibrated_from == 480
    assert 9.0 < model.create_s_per_gb < 11.0
    assert set(model.design_s_per_gb) == {"6/binomial", "6/kary:1", "6/kary:2", "6/kary:3"}
    assert all(2.0 < v < 3.0 for v in model.design_s_per_gb.values())


def test_distribution_is_bounded_by_what_a_broker_can_feed() -> None:
    model = default_time_model("kubernetes", link_gbps=10.0)
    narrow = predict_cell(Cell(64, "kary:2", 0, (GIB,), ("all",)), model, verify=False)
    flat = predict_cell(Cell(64, "kary:0", 0, (GIB,), ("all",)), model, verify=False)
    # 63 children at 10 Gbit/s: 63 x 0.8 s per GB, far beyond one broker's extract rate.
    assert flat.parts["distribute"] == pytest.approx(63 * 0.8)
    assert narrow.parts["distribute"] == pytest.approx(model.extract_s_per_gb)


def test_plan_prices_every_node_group(tmp_path: Path) -> None:
    cluster = load_cluster_spec(resource_path("clusters", "eks-p5-efa.yaml"))
    plan = plan_experiment(
        ExperimentSpec(
            exact_nodes=4, topos=["kary:2"], backend="kubernetes", data_dir=tmp_path, sizes=[GIB]
        )
    )
    estimate = estimate_for(
        plan.cells, "kubernetes", verify=False, cluster=cluster, up=True, down=True
    )
    catalog = load_price_catalog()
    p5, _ = catalog.instance_price("us-east-2", "p5.48xlarge")
    m5, _ = catalog.instance_price("us-east-2", "m5.xlarge")
    assert estimate.hourly_usd == pytest.approx(4 * p5 + m5 + 0.10)
    assert estimate.parts["provision"] == 1200 and estimate.parts["teardown"] == 600


def test_unknown_price_says_how_to_add_it(tmp_path: Path) -> None:
    catalog = load_price_catalog()
    with pytest.raises(UserError, match="kary prices refresh --region eu-north-1"):
        catalog.instance_price("eu-north-1", "c5a.4xlarge")


def test_history_without_events_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no topologies-events.csv"):
        calibrate(default_time_model("local"), tmp_path)
    (tmp_path / "topologies-events.csv").write_text("a,b\n1,2\n")
    with pytest.raises(UserError, match="lacks columns"):
        calibrate(default_time_model("local"), tmp_path)


def _parsed_dir(folder: Path, rows: list[tuple[str, str, float]], fmt: int = 1) -> Path:
    """A kary parsed directory of 4-node kary:2 events at 1 GiB: (event, status, seconds)."""
    folder.mkdir(parents=True)
    events = pd.DataFrame(
        [
            ("kary-2-4", "kary-2", 0, 4, event, 1, seconds, GIB, status, "kary:2")
            for event, status, seconds in rows
        ],
        columns=[
            "uid", "topology", "iteration", "nodes", "event", "size_gb",
            "time_seconds", "size_bytes", "status", "topo",
        ],
    )  # fmt: skip
    events.to_csv(folder / "topologies-events.csv", index=False)
    (folder / "parse.json").write_text(json.dumps({"format": fmt}))
    return folder


def test_history_is_read_by_the_parsed_table_loader(tmp_path: Path) -> None:
    _parsed_dir(
        tmp_path / "sweep-a",
        [("create-archive", "ok", 8.0), ("create-archive", "failed", 0.01)],
    )
    _parsed_dir(tmp_path / "sweep-b", [("create-archive", "ok", 12.0)])
    # The seed's ping table has no events: the loader reads it as none, not as an error.
    ping = tmp_path / "ping"
    ping.mkdir()
    ping.joinpath("topologies-events.csv").write_text(
        ",uid,topology,topology-uid,iteration,nodes,rank,service,message_size_bytes,"
        "message_size_mb,time_ms,time_seconds,hops\n"
        "0,flux-ping-broker-size-0-rank-0,kary-1,kary-1-6,0,6,0,broker,0,0,0.1,0.0001,3\n"
    )
    rows = load_history(tmp_path)
    assert sorted(rows["time_seconds"]) == [8.0, 12.0]  # the failed step is left out
    assert set(rows["topology"]) == {"kary:2"}
    model = calibrate(default_time_model("local"), tmp_path)
    assert (model.calibrated_from, model.create_s_per_gb) == (2, 10.0)


def test_history_in_a_newer_parsed_format_is_refused_in_one_line(tmp_path: Path) -> None:
    _parsed_dir(tmp_path / "new", [("create-archive", "ok", 8.0)], fmt=2)
    with pytest.raises(UserError) as caught:
        load_history(tmp_path)
    message = str(caught.value)
    assert message.startswith("--history: ") and "upgrade kary" in message
    assert "\n" not in message
