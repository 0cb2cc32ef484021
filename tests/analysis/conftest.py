"""Fixtures for the analysis tests; the log and tree builders live in analysis_samples."""

from __future__ import annotations

from pathlib import Path

import pytest
from analysis_samples import kary_log, run_record, write_cell

from experiments.formats.cell_layout import cell_id


@pytest.fixture
def small_tree(tmp_path: Path) -> Path:
    """A healthy kary tree: 4 nodes, kary:1 / kary:2 / binomial, 3 iterations, one failure."""
    root = tmp_path / "raw"
    for topo in ("kary:2", "binomial", "kary:1"):
        for it in range(3):
            rc = {"distribute-all-nodes-64M": 1} if (topo, it) == ("kary:1", 2) else None
            state = "failed" if rc else "succeeded"
            write_cell(
                root,
                cell_id(4, topo, it),
                kary_log(4, topo, it, seconds=1.0 + 0.01 * it, rc=rc),
                run_record(4, topo, it, state=state),
            )
    return root
