"""The disk a sweep needs on a node (model/disk.py), the plan's check against the cluster
file's disks, and the disks' price in the plan (issue 32, finding 1)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from experiments.cli import app
from experiments.errors import UserError
from experiments.model.cluster_spec import load_cluster_spec
from experiments.model.disk import check_disk, disk_line, disk_need
from experiments.model.plan import Cell, ExperimentSpec, plan_experiment
from experiments.resources import resource_path

runner = CliRunner()
GIB = 2**30
# The default image's pull (ubuntu:noble 29,751,109 B + its flux view, 500 MB estimated):
# what a node keeps of it on disk, by the catalog in model/render.py.
IMAGES = 29_751_109 + 500_000_000
# The operator's two copies of the flux view's tree (1.5 GiB estimated) on the node.
VIEW = 2 * 1_500_000_000
GKE_30 = resource_path("clusters", "gke-30.yaml")
EKS_30 = resource_path("clusters", "eks-30.yaml")


def _seed_cells() -> list[Cell]:
    """flux-distribute's sweep on 30 nodes: two topologies, sizes 1-10 GiB (kary's cloud
    default)."""
    spec = ExperimentSpec(exact_nodes=30, topos=["kary:1", "kary:2"], backend="kubernetes")
    return plan_experiment(spec).cells


def _whole(used: int) -> int:
    """What `used` bytes need so the kubelet still sees 15% of the disk free: on one file
    system its imagefs.available<15% binds before nodefs.available<10%."""
    return math.ceil(used / 0.85)


def test_the_seed_sweep_nested_needs_its_blobs_twice_on_rank_0() -> None:
    need = disk_need(_seed_cells(), "nested")
    # 1 + 2 + ... + 10 GiB = 55 GiB of blobs kept, and 55 GiB in the last cell's content store;
    # the scratch blob is a link to the kept one.
    assert (need.blob_cache, need.scratch, need.content_store) == (55 * GIB, 0, 55 * GIB)
    used = 110 * GIB + 10 * GIB + IMAGES + VIEW  # + the node's own 10 GiB, images, view
    assert need.rank0 == _whole(used)
    assert need.margin == _whole(used) - 110 * GIB
    assert need.eviction_reserve == _whole(used) - used
    assert round(need.rank0 / GIB, 1) == 145.0
    # Every other rank holds the largest size at a time.
    assert need.other_ranks == _whole(10 * GIB + 10 * GIB + IMAGES + VIEW)
    assert need.text() == (
        "146 GiB on rank 0 (nested, the 30-node group: blob cache 55 GiB + scratch 0 GiB + "
        "content store 55 GiB + flux view copies 3 GiB + images 1 GiB + the node's own 10 GiB "
        "+ the kubelet's eviction reserve 22 GiB, 15% of 146 GiB: the kubelet's default "
        "imagefs.available<15%)"
    )


def test_per_cell_needs_one_cell_s_share() -> None:
    need = disk_need(_seed_cells(), "per-cell")
    assert (need.blob_cache, need.scratch, need.content_store) == (0, 10 * GIB, 55 * GIB)
    assert need.rank0 == _whole(65 * GIB + 10 * GIB + IMAGES + VIEW)
    assert round(need.rank0 / GIB, 1) == 92.1  # more than eksctl's 80 GiB default


def test_a_size_is_stored_once_per_cell_and_direct_and_mmap_store_nothing() -> None:
    both = Cell(4, "kary:2", 0, (GIB, 3 * GIB), ("all", "leaves"))
    direct = Cell(4, "kary:1", 0, (GIB, 3 * GIB), ("direct",))
    mapped = Cell(4, "kary:3", 0, (GIB, 3 * GIB), ("all",), knobs=_mmap())
    # Two strategies archive the same blob: its bytes are stored once.
    assert disk_need([both], "per-cell").content_store == 4 * GIB
    assert disk_need([direct], "per-cell").content_store == 0
    assert disk_need([mapped], "per-cell").content_store == 0
    assert disk_need([direct, mapped], "nested").blob_cache == 4 * GIB


def _mmap():  # type: ignore[no-untyped-def]
    from experiments.formats.cell_layout import Knobs

    return Knobs(mmap=True)


def test_nested_peaks_in_the_group_that_keeps_the_most() -> None:
    small = [Cell(8, "kary:2", 0, (GIB,), ("all",)), Cell(8, "kary:1", 0, (2 * GIB,), ("all",))]
    big = [Cell(4, "kary:2", 0, (5 * GIB,), ("all",))]
    need = disk_need(small + big, "nested")
    # 8 nodes: 3 GiB kept + the biggest cell's 2 GiB store = 5; 4 nodes: 5 + 5 = 10.
    assert (need.blob_cache, need.content_store, need.peak) == (
        5 * GIB,
        5 * GIB,
        "the 4-node group",
    )


def test_a_disk_that_is_too_small_is_refused_with_need_have_and_the_fix(tmp_path: Path) -> None:
    small = tmp_path / "gke.yaml"
    small.write_text(GKE_30.read_text().replace("diskSize: 200", "diskSize: 120"))
    result = runner.invoke(app, ["plan", "--cluster", str(small), "--exact-nodes", "30"])
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output
    assert lines[0].startswith("kary: error: the sweep needs 146 GiB on rank 0 (nested")
    assert f"but {small} gives each worker 120 GiB pd-balanced: set diskSize: 146 (GB)" in lines[0]
    assert "or --layout per-cell (needs 93 GiB)" in lines[0]
    # Per cell it fits: the same file plans.
    per_cell = ["plan", "--cluster", str(small), "--exact-nodes", "30", "--layout", "per-cell"]
    assert runner.invoke(app, per_cell).exit_code == 0


def test_an_unset_disk_is_the_provider_s_default(tmp_path: Path) -> None:
    gke = tmp_path / "gke.yaml"
    gke.write_text(GKE_30.read_text().replace("diskSize: 200\n", "").replace("diskType:", "#"))
    assert (
        load_cluster_spec(gke).worker_disk.text
        == "100 GiB pd-balanced (the provider's default size)"
    )
    eks = tmp_path / "eks.yaml"
    eks.write_text(EKS_30.read_text().replace("volumeSize: 200", "").replace("volumeType:", "#"))
    spec = load_cluster_spec(eks)
    assert (spec.worker_disk.gb, spec.worker_disk.type) == (80, "gp3")  # eksctl's defaults
    with pytest.raises(
        UserError,
        match=r"80 GiB gp3 \(the provider's default size\): set "
        r"volumeSize: 146 \(GiB\) or more on node group 'workers'",
    ):
        check_disk(spec, disk_need(_seed_cells(), "nested"))


@pytest.mark.parametrize(
    ("replace", "message"),
    [
        (("diskSize: 200", "diskSize: 5"), "diskSize: Input should be greater than or equal to 10"),
        (("diskSize: 200", "diskSize: big"), "diskSize: Input should be a valid integer"),
        (("diskSize: 200", "diskSize: 200.5"), "diskSize: Input should be a valid integer"),
        (
            ("diskType: pd-balanced", "diskType: ssd"),
            "diskType: Input should be 'pd-balanced', 'pd-standard', 'pd-ssd' or "
            "'hyperdisk-balanced'",
        ),
        (("diskSize: 200", "diskSizeGb: 200"), "diskSizeGb: Extra inputs are not permitted"),
    ],
)
def test_bad_gke_disk_values_are_one_line(
    tmp_path: Path, replace: tuple[str, str], message: str
) -> None:
    path = tmp_path / "gke.yaml"
    path.write_text(GKE_30.read_text().replace(*replace))
    result = runner.invoke(app, ["plan", "--cluster", str(path), "--exact-nodes", "4"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [f"kary: error: cluster file {path}: {message}"]


@pytest.mark.parametrize(
    ("replace", "message"),
    [
        (("volumeSize: 200", "volumeSize: -1"), "volumeSize -1 is not a whole number of GiB"),
        (("volumeSize: 200", 'volumeSize: "200"'), "volumeSize '200' is not a whole number"),
        (("volumeSize: 200", "volumeSize: true"), "volumeSize True is not a whole number"),
        (("volumeType: gp2", "volumeType: fast"), "volumeType 'fast' is not one of gp3, gp2"),
    ],
)
def test_bad_eks_disk_values_are_one_line(
    tmp_path: Path, replace: tuple[str, str], message: str
) -> None:
    path = tmp_path / "eks.yaml"
    path.write_text(EKS_30.read_text().replace(*replace))
    result = runner.invoke(app, ["plan", "--cluster", str(path), "--exact-nodes", "4"])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"kary: error: {path}: node group 'workers': {message}")


def test_the_plan_prices_the_disks_on_their_own(tmp_path: Path) -> None:
    args = ["plan", "--cluster", str(GKE_30), "--exact-nodes", "30", "--data-dir", str(tmp_path)]
    text = runner.invoke(app, args)
    assert text.exit_code == 0, text.output
    # 30 disks of 200 GiB at pd-balanced's $0.10 per GB-month, 730 h a month.
    per_node = 200 * 0.10 / 730
    assert f"  disks: 30 x 200 GiB pd-balanced at ${per_node:.4f}/h = $0.82/h" in text.stdout
    plan = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    assert plan["disk_usd_per_hour"] == pytest.approx(30 * per_node, abs=1e-4)
    assert plan["hourly_usd"] == pytest.approx(30 * 1.4528 + 0.10 + 30 * per_node, abs=1e-4)


def test_an_unpriced_disk_type_says_how_to_add_it(tmp_path: Path) -> None:
    path = tmp_path / "eks.yaml"
    path.write_text(EKS_30.read_text().replace("volumeType: gp2", "volumeType: st1"))
    result = runner.invoke(app, ["plan", "--cluster", str(path), "--exact-nodes", "4"])
    assert result.exit_code == 2
    assert "no price for st1 disks in us-east-2" in result.stderr
    assert "disk_usd_per_gb_month.regions.us-east-2" in result.stderr


def test_the_disk_line_names_both_ranks_and_the_workers_disk() -> None:
    line = disk_line(load_cluster_spec(EKS_30), _seed_cells(), "nested")
    # EKS: nodeadm's nodefs.available<10% binds (no imagefs signal), not the kubelet's 15%.
    assert line is not None and line.startswith("disk: 137 GiB on rank 0 (nested")
    assert line.endswith("; 26 GiB on every other rank; each worker has 200 GiB gp2")
    assert disk_line(None, _seed_cells(), "nested") is None


@pytest.mark.parametrize(
    ("cluster", "reserve"),
    [
        (EKS_30, "14 GiB, 10% of 137 GiB: EKS nodeadm's nodefs.available<10%)"),
        (GKE_30, "22 GiB, 15% of 146 GiB: the kubelet's default imagefs.available<15%, assumed "
                 "for GKE)"),
    ],
)  # fmt: skip
def test_the_plan_s_disk_figure_includes_the_kubelet_s_eviction_threshold(
    cluster: Path, reserve: str, tmp_path: Path
) -> None:
    """The kubelet evicts a pod once its node's disk falls under its threshold, long before
    kary's 1 GiB margin: the plan counts that reserve, and the flux view the operator
    copies, and says so.  EKS AL2023's nodeadm sets nodefs.available<10% and no imagefs
    signal (issue 59, 2); GKE's cannot be read without a node (the kubelet's 15%)."""
    args = ["plan", "--cluster", str(cluster), "--exact-nodes", "30", "--data-dir", str(tmp_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("disk: ")]
    assert "+ flux view copies 3 GiB +" in line
    assert f"+ the kubelet's eviction reserve {reserve}" in line
