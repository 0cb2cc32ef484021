"""Box cells that would measure the cores, not the links, are named before they run."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from experiments.cli import app
from experiments.estimate.bottleneck import bottleneck
from experiments.estimate.defaults import default_time_model
from experiments.model.links import LinkSettings

MIB = 2**20
runner = CliRunner()


def test_the_cores_share_against_the_links_floor_says_cpu_bound() -> None:
    model = default_time_model("flux", place="box")
    # 15 receiving ranks at 5 s/GB each: 4.69 s of CPU for 64 MiB.
    chain = bottleneck(16, "kary:1", 64 * MIB, model, LinkSettings(bandwidth=12.5e6))
    assert chain.link_s == pytest.approx(64 * MIB / 12.5e6)  # 5.37 s: one copy
    assert chain.cpu_s == pytest.approx(15 * 5.0 * 64 / 1024)
    assert chain.cpu_bound  # 4.69 s >= half of 5.37 s
    flat = bottleneck(16, "kary:15", 64 * MIB, model, LinkSettings(bandwidth=12.5e6))
    assert flat.link_s == pytest.approx(15 * 64 * MIB / 12.5e6)  # 80.5 s
    assert not flat.cpu_bound
    # A fast rank 0: the floor is its 15 copies at 1 Gbit/s (8.1 s); CPU 4.69 s is over half.
    fast_root = LinkSettings(bandwidth=12.5e6, root_bandwidth=125e6)
    assert bottleneck(16, "kary:15", 64 * MIB, model, fast_root).link_s == pytest.approx(8.05, 0.01)
    assert bottleneck(16, "kary:15", 64 * MIB, model, fast_root).cpu_bound
    # Slow leaves under that fast root: each receives its copy at 10 Mbit/s (53.7 s), which
    # a floor of senders alone (8.1 s) would miss; CPU is then far under half.
    slow_leaves = LinkSettings(bandwidth=1.25e6, root_bandwidth=125e6)
    receive = bottleneck(16, "kary:15", 64 * MIB, model, slow_leaves)
    assert receive.link_s == pytest.approx(53.69, 0.01)
    assert not receive.cpu_bound
    # Unshaped links set no floor: the cores are all there is.
    assert bottleneck(4, "kary:1", MIB, model, LinkSettings()).cpu_bound


@pytest.mark.usefixtures("flux_box_here")
def test_the_plan_warns_of_cpu_bound_box_cells(tmp_path: object) -> None:
    args = ["plan", "--place", "box", "--exact-nodes", "16", "--sizes", "64M"]
    args += ["--topo", "kary:1", "--topo", "kary:15", "--link-bandwidth", "100Mbit"]
    result = runner.invoke(app, [*args, "--data-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "warning: 1 cell of 2 would be CPU-bound in the box" in result.stdout
    assert "real Flux in a box on this machine" in result.stdout
    slow = runner.invoke(app, [*args[:-1], "20Mbit", "--data-dir", str(tmp_path)])
    assert "CPU-bound" not in slow.stdout
