"""Cost: the time model, its fit on flux-distribute's EKS history, and pricing."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from experiments.errors import UserError
from experiments.estimate.defaults import default_time_model
from experiments.estimate.fit import fit_environment
from experiments.estimate.history import load_sweeps
from experiments.estimate.plan_estimate import estimate_for
from experiments.estimate.prices import load_price_catalog
from experiments.estimate.time_model import predict_cell
from experiments.model.cluster_spec import load_cluster_spec
from experiments.model.plan import Cell, ExperimentSpec, plan_experiment
from experiments.resources import resource_path

GIB = 2**30
SEED_EKS_WALL_SECONDS = 9716  # flux-distribute's README: the whole EKS 6-node sweep


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
    # kary makes its blobs in the run (flux-distribute baked them into its image), so
    # the comparable figure leaves generation out.
    comparable = estimate.seconds - estimate.parts["generate"]
    assert abs(comparable - SEED_EKS_WALL_SECONDS) / SEED_EKS_WALL_SECONDS < 0.05
    assert estimate.parts["generate"] == pytest.approx(55 * 12 * 1.0, rel=1e-3)
    # eks-6.yaml's EKS 1.35 is in standard support until 2027-03-27: $0.10/h for the control
    # plane; each node's 150 GB gp2 disk at $0.10 per GB-month (730 h); eksctl's NAT gateway
    # ($0.045/h) and 7 public IPv4 addresses at $0.005/h (6 nodes' and the gateway's):
    # 3.696 + 0.10 + 0.1233 + 0.08 = $3.9993/h.
    network = 0.045 + 7 * 0.005
    assert estimate.hourly_usd == pytest.approx(6 * 0.616 + 0.10 + 6 * 150 * 0.10 / 730 + network)
    assert estimate.cost_usd == pytest.approx(estimate.hourly_usd * estimate.seconds / 3600)


def test_the_eks_fit_keeps_its_per_gb_rates_and_leaves_the_overhead_a_default(
    flux_distribute: Path,
) -> None:
    fit = fit_environment(
        load_sweeps(flux_distribute / "parsed-eks-exact-6"), default_time_model("kubernetes")
    )
    assert fit.rows == 480
    assert 8.0 < fit.parameters["create_s_per_gb"] < 11.0
    assert 2.0 < fit.parameters["extract_s_per_gb"] < 3.0
    # One node count, no run.json: what history cannot tell keeps its default.
    assert {"run_overhead_s", "broker_start_s", "shared_cpu_s_per_gb"}.isdisjoint(fit.informed)
    assert {"create_s_per_gb", "extract_s_per_gb", "clean_s_per_gb"} <= fit.informed
    assert fit.parameters["run_overhead_s"] == 100.0
    assert fit.coverage.nodes == (6, 6) and fit.coverage.sizes == (GIB, 10 * GIB)


def test_a_known_sweep_total_informs_the_overhead(tmp_path: Path, flux_distribute: Path) -> None:
    folder = flux_distribute / "parsed-eks-exact-6"
    plain = fit_environment(load_sweeps(folder), default_time_model("kubernetes"))
    told = fit_environment(
        load_sweeps(folder, {str(folder): 9716.0 + 1200.0}), default_time_model("kubernetes")
    )
    assert "run_overhead_s" not in plain.informed
    assert "run_overhead_s" in told.informed
    # What the total leaves after the timed steps, shared over the 12 cells.
    steps = sum(v for c in load_sweeps(folder)[0].cells for v in c.seconds.values())
    per_cell = told.parameters["run_overhead_s"] + 6 * told.parameters["broker_start_s"]
    per_cell += 6 * 10 * told.parameters["cold_cache_s_per_rank"]
    assert per_cell == pytest.approx((9716 + 1200 - steps) / 12, rel=0.02)


def test_failed_seed_steps_recorded_as_timings_are_dropped(tmp_path: Path) -> None:
    rows = [("create-archive", "ok", 8.0 + i / 10) for i in range(5)]
    rows.append(("create-archive", "ok", 0.015))  # flux-distribute's failed step
    _parsed_dir(tmp_path / "seed", rows)
    (sweep,) = load_sweeps(tmp_path)
    assert sorted(sweep.cells[0].seconds.values()) == pytest.approx([8.4])
    # The last (ok) value per key wins; the 0.015 s row never gets there.
    assert 0.015 not in sweep.cells[0].seconds.values()


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
    # EKS 1.35: standard ($0.10/h); each group's disk: 4 x 500 GiB gp3 and the m5's eksctl
    # default 80 GB gp3, at $0.08 per GB-month (730 h): 2080 x 0.08 / 730 = $0.2279/h;
    # eksctl's NAT gateway ($0.045/h) and 2 public IPv4 addresses ($0.005/h): the system
    # node's and the gateway's (the p5s are private): $0.055/h.
    disks = (4 * 500 + 80) * 0.08 / 730
    network = 0.045 + 2 * 0.005
    assert estimate.hourly_usd == pytest.approx(4 * p5 + m5 + 0.10 + disks + network)
    assert estimate.disk_usd_per_hour == pytest.approx(disks)
    assert estimate.parts["provision"] == 1200 and estimate.parts["teardown"] == 600


def test_unknown_price_says_how_to_add_it(tmp_path: Path) -> None:
    catalog = load_price_catalog()
    with pytest.raises(UserError, match="kary prices refresh --region eu-north-1"):
        catalog.instance_price("eu-north-1", "c5a.4xlarge")


def test_history_without_events_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no topologies-events.csv"):
        load_sweeps(tmp_path)
    (tmp_path / "topologies-events.csv").write_text("a,b\n1,2\n")
    with pytest.raises(UserError, match="lacks columns"):
        load_sweeps(tmp_path)


def _parsed_dir(folder: Path, rows: list[tuple[str, str, float]], fmt: int = 1) -> Path:
    """A kary parsed directory of 4-node kary:2 events at 1 GiB: (event, status, seconds)."""
    folder.mkdir(parents=True)
    events = pd.DataFrame(
        [
            ("kary-2-4", "kary-2", 0, 4, event, 1, seconds, GIB, status, "kary:2", "all")
            for event, status, seconds in rows
        ],
        columns=[
            "uid", "topology", "iteration", "nodes", "event", "size_gb",
            "time_seconds", "size_bytes", "status", "topo", "strategy",
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
    # flux-distribute's ping table has no events: the loader reads it as none, not as an error.
    ping = tmp_path / "ping"
    ping.mkdir()
    ping.joinpath("topologies-events.csv").write_text(
        ",uid,topology,topology-uid,iteration,nodes,rank,service,message_size_bytes,"
        "message_size_mb,time_ms,time_seconds,hops\n"
        "0,flux-ping-broker-size-0-rank-0,kary-1,kary-1-6,0,6,0,broker,0,0,0.1,0.0001,3\n"
    )
    sweeps = load_sweeps(tmp_path)
    assert [len(s.cells) for s in sweeps] == [1, 1]  # the ping table: no sweep
    seconds = sorted(v for s in sweeps for v in s.cells[0].seconds.values())
    assert seconds == [8.0, 12.0]  # the failed step is left out
    assert {s.cells[0].cell.topo for s in sweeps} == {"kary:2"}
    # Pooled, the two sweeps' creates are 8 and 12 s at 1 GiB (the defaults' 4.5
    # pulls with the weight of one more observation).
    fit = fit_environment(sweeps, default_time_model("local"))
    create = fit.parameters["create_s"] + fit.parameters["create_s_per_gb"]
    assert fit.rows == 2 and 8.0 < create < 10.0


def test_history_in_a_newer_parsed_format_is_refused_in_one_line(tmp_path: Path) -> None:
    _parsed_dir(tmp_path / "new", [("create-archive", "ok", 8.0)], fmt=2)
    with pytest.raises(UserError) as caught:
        load_sweeps(tmp_path)
    message = str(caught.value)
    assert message.startswith("--history: ") and "upgrade kary" in message
    assert "\n" not in message
