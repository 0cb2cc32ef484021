"""The nested driver's disk check finds the blobs the entrypoint kept (issue 42, item 2).

The plan counts a node count's blobs once in rank 0's blob cache; the driver, before
each cell, asks for each size again only when no blob of it is kept.  Both must read
the kept blob by one name (formats/blobs.kept_blob_name), else from the second cell on
the driver asks for every size twice and refuses a disk the plan accepted: flux-distribute's
30-node sweep (1-10 GB) on 150 GB, where the plan said 134 GB and the second cell
found about 84 GiB free against 111 GiB asked.

The driver also keeps free the share of the disk the kubelet evicts under (issue 44,
item 2): 15% of the disk, long before its own 1 GiB margin runs out.

The driver runs on a fake `flux` whose job runs the cell's script (here: the rendered
entrypoint's own kary_keep_blob over sparse blobs of each size), and a fake `df` that
sees a disk of the cluster file's size holding the node's own files and the blob cache.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import yaml

from experiments.formats.blobs import kept_blob_name
from experiments.formats.nested_frame import split_frames
from experiments.model.cluster_spec import load_cluster_spec
from experiments.model.disk import check_disk, disk_need
from experiments.model.plan import ExperimentSpec, plan_experiment
from experiments.model.render import render_cell
from experiments.model.render_nested import NestedCell, render_nested
from experiments.resources import resource_path

GIB = 2**30
DISK_GB = 150

_FAKE_FLUX = """#!/bin/bash
case "$1 $2" in
  "version "*) echo "commands:    		0.88.0" ;;
  "exec -r") shift 3; "$@" ;;
  "batch "*) for arg; do script=$arg; done; echo "$script" >"$FAKE_JOB"; echo f1 ;;
  "job attach") bash "$(cat "$FAKE_JOB")" ;;
  "job wait-event") exit 0 ;;
  "jobs -no") [ "$3" = "{result}" ] && echo COMPLETED; [ "$3" = "{nodelist}" ] && echo "x[0-29]" ;;
esac
"""

# df -P -B1 PATH on a disk of FAKE_DISK bytes: the node's own files (FAKE_USED) and
# whatever the blob cache holds (sparse files: their apparent size) are taken.
_FAKE_DF = """#!/bin/bash
cache=$(du -s -B1 --apparent-size "$KARY_BLOB_CACHE" 2>/dev/null | cut -f1)
echo "Filesystem 1-blocks Used Available Capacity Mounted on"
echo "fake $FAKE_DISK 0 $((FAKE_DISK - FAKE_USED - ${cache:-0})) 0% /"
"""


def _fake_bin(tmp_path: Path) -> Path:
    """A folder of the fake `flux` and `df` above, to put first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("flux", _FAKE_FLUX), ("df", _FAKE_DF)):
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    return bin_dir


def _keep_function(entrypoint: str) -> str:
    match = re.search(r"^kary_keep_blob\(\) \{\n.*?^\}\n", entrypoint, re.M | re.S)
    assert match is not None
    return match.group(0)


def _cell_script(entrypoint: str, sizes: tuple[int, ...], scratch: Path) -> str:
    """What a cell's job does to rank 0's disk here: makes each size's blob (sparse) and
    keeps it with the entrypoint's own kary_keep_blob, as a first cell does."""
    keep = "".join(
        f'truncate -s {size} "{scratch}" && kary_keep_blob "{scratch}" {size} sum{size}'
        f' && rm -f "{scratch}"\n'
        for size in sizes
    )
    return _keep_function(entrypoint) + keep


def test_a_disk_the_plan_accepts_passes_the_driver_s_check_on_the_second_cell(
    tmp_path: Path,
) -> None:
    cluster_file = tmp_path / "eks-30-spot.yaml"
    text = resource_path("clusters", "eks-30-spot.yaml").read_text()
    cluster_file.write_text(re.sub(r"volumeSize: \d+", f"volumeSize: {DISK_GB}", text))
    cells = plan_experiment(
        ExperimentSpec(exact_nodes=30, topos=["kary:1", "kary:2"], backend="kubernetes")
    ).cells
    need = disk_need(cells, "nested")
    # The plan accepts the disk: 146 GB on rank 0 fits 150.
    assert need.rank0 <= DISK_GB * GIB
    check_disk(load_cluster_spec(cluster_file), need)

    bin_dir = _fake_bin(tmp_path)
    nested_cells = []
    for k, cell in enumerate(cells):
        entrypoint = render_cell(
            cell.nodes, cell.topo, list(cell.sizes), list(cell.strategies), cell.id
        ).entrypoint_sh
        script = _cell_script(entrypoint, tuple(cell.sizes), tmp_path / f"scratch-{k}")
        (tmp_path / f"cell-{k}.sh").write_text(script)
        nested_cells.append(NestedCell(cell.id, cell.topo, 600, script, tuple(cell.sizes)))
    base = render_cell(30, "kary:1", [GIB], ["all"], cells[0].id).minicluster_yaml
    driver = render_nested(yaml.safe_load(base), 30, nested_cells).driver_sh
    (tmp_path / "driver.sh").write_text(driver)
    cache = tmp_path / "blobs"
    env = dict(
        os.environ,
        PATH=f"{bin_dir}:{os.environ['PATH']}",
        KARY_BLOB_CACHE=str(cache),
        KARY_NESTED_STATE=str(tmp_path / "state"),
        FAKE_JOB=str(tmp_path / "job"),
        FAKE_DISK=str(DISK_GB * GIB),
        FAKE_USED=str(need.images + need.system + need.view),
    )
    out = subprocess.run(
        ["bash", str(tmp_path / "driver.sh")], capture_output=True, text=True, env=env, check=True
    ).stdout
    frames = split_frames(out)
    first, second = (frames.cells[cell.id] for cell in cells)
    # The first cell kept every size under the name the driver looks for ...
    assert first.end is not None and first.end["rc"] == 0, out
    kept = sorted(p.name for p in cache.iterdir() if not p.name.endswith(".sha256"))
    assert kept == sorted(kept_blob_name("random", size) for size in cells[0].sizes)
    # ... so the second cell, with 55 GB kept, asks for its content store only, and runs.
    assert second.end is not None and second.end.get("kind") != "disk", second.end
    assert second.end["rc"] == 0


def test_the_driver_keeps_the_kubelet_s_eviction_reserve_free(tmp_path: Path) -> None:
    """On a 200 GiB disk with 20 GiB free a 1 GiB cell fits kary's own margin (it needs
    2 GiB + 1 GiB) but would take the disk under the kubelet's 15% (30 GiB): the kubelet
    would evict the pod mid-cell, so the driver refuses the cell at its start."""
    disk, free = 200 * GIB, 20 * GIB
    cell = NestedCell("30/kary-1/0", "kary:1", 600, "echo CELL-RAN\n", (GIB,))
    base = render_cell(30, "kary:1", [GIB], ["all"], cell.cell_id).minicluster_yaml
    (tmp_path / "cell-0.sh").write_text(cell.entrypoint_sh)
    driver = render_nested(yaml.safe_load(base), 30, [cell]).driver_sh
    (tmp_path / "driver.sh").write_text(driver)
    env = dict(
        os.environ,
        PATH=f"{_fake_bin(tmp_path)}:{os.environ['PATH']}",
        KARY_BLOB_CACHE=str(tmp_path / "blobs"),
        KARY_NESTED_STATE=str(tmp_path / "state"),
        FAKE_JOB=str(tmp_path / "job"),
        FAKE_DISK=str(disk),
        FAKE_USED=str(disk - free),
    )
    out = subprocess.run(
        ["bash", str(tmp_path / "driver.sh")], capture_output=True, text=True, env=env, check=True
    ).stdout
    end = split_frames(out).cells[cell.cell_id].end
    assert end is not None and end.get("kind") == "disk", out
    assert "CELL-RAN" not in out
    assert end["eviction_reserve_bytes"] == 30 * GIB
    assert end["need_bytes"] == 2 * GIB + (1 << 30) + 30 * GIB
    assert "the kubelet's eviction reserve" in end["error"]
