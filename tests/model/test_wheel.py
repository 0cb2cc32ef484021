"""Resources are found from an installed wheel, not only from a clone."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_wheel_carries_templates_designs_and_clusters(tmp_path: Path) -> None:
    hatchling_build = pytest.importorskip("hatchling.build")
    cwd = Path.cwd()
    os.chdir(REPO)
    try:
        wheel = Path(hatchling_build.build_wheel(str(tmp_path)))
    finally:
        os.chdir(cwd)
    site = tmp_path / "site"
    with zipfile.ZipFile(tmp_path / wheel.name) as archive:
        names = archive.namelist()
        archive.extractall(site)
    for resource in (
        "templates/entrypoint.sh.j2",
        "designs/kary-designs.json",
        "clusters/prices.yaml",
        "clusters/eks-30.yaml",
    ):
        assert f"experiments/_resources/{resource}" in names
    probe = (
        "from experiments.resources import resource_dir;"
        "from experiments.model.render import render_cell;"
        "print(resource_dir('templates'));"
        "print(len(render_cell(4, 'kary:2', [1048576], ['all'], 'c').entrypoint_sh) > 0)"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    assert out == [str(site / "experiments" / "_resources" / "templates"), "True"]
