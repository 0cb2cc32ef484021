"""benchmarks/nested_manifest.py: flux-distribute's 30-node study in one nested MiniCluster, far
under the 1 MiB a ConfigMap holds, and the same bytes on every run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _run() -> str:
    script = [sys.executable, str(REPO / "benchmarks" / "nested_manifest.py")]
    return subprocess.run(script, capture_output=True, text=True, check=True, timeout=300).stdout


def test_the_seeds_study_packs_into_one_small_manifest_deterministically() -> None:
    out = _run()
    assert out == _run()
    lines = out.splitlines()
    assert lines[0].startswith("16 cells at 30 nodes (binomial, kary:1, kary:2, ")
    assert "10 sizes each (1-10 GiB)" in lines[0]
    shown = re.fullmatch(r"entrypoints: ([\d,]+) bytes \(\d+ KB\)", lines[1])
    assert shown is not None, lines[1]
    scripts = int(shown[1].replace(",", ""))
    found = re.match(r"nested MiniCluster: ([\d,]+) bytes .* bundle .* ([\d,]+) bytes;", lines[2])
    assert found is not None, lines[2]
    manifest, bundle = (int(g.replace(",", "")) for g in found.groups())
    assert bundle < manifest < scripts / 10  # near-identical entrypoints pack tightly
    assert manifest < 2**20 / 10
