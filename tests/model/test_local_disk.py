"""A sweep run on this machine fits its free disk (issue 36): every rank extracts into a
folder of its own on the one disk, so 30 ranks of a 10 GiB cell hold about 300 GiB.
The plan refuses (exit 2, one line: need, free and where) what cannot fit and warns of
what comes close; the free space is read through one function, replaced here."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import experiments.machine_probes
from experiments.cli import app
from experiments.formats.run_record import NESTED, PER_CELL
from experiments.model.disk import local_disk_need
from experiments.model.plan import Cell

runner = CliRunner()
GIB = 2**30


def _cell(nodes: int, sizes: tuple[int, ...], iteration: int = 0) -> Cell:
    return Cell(nodes, "kary:16", iteration, sizes, ("all",))


def test_every_rank_holds_its_largest_size_beside_rank_0s_blob_and_store() -> None:
    need = local_disk_need([_cell(30, (GIB, 10 * GIB))], PER_CELL)
    # Rank 0: the 10 GiB blob and the content store's 1 + 10 GiB; 29 ranks x 10 GiB.
    assert (need.rank0, need.other_ranks, need.per_other_rank) == (21 * GIB, 29, 10 * GIB)
    assert need.total == 311 * GIB
    assert need.text() == (
        "311 GiB at its peak (cell 30/kary-16/0: rank 0 21 GiB + 29 other ranks x 10 GiB)"
    )
    # Nested, rank 0 caches every size of the node count as well.
    nested = local_disk_need([_cell(4, (GIB,)), _cell(4, (2 * GIB,), 1)], NESTED)
    assert (nested.rank0, nested.per_other_rank, nested.peak) == (
        5 * GIB,
        2 * GIB,
        "the 4-node group",
    )


def _plan(
    monkeypatch: pytest.MonkeyPatch, free_gb: float, *flags: str
) -> tuple[int, list[str], list[str]]:
    seen: list[str] = []

    def free_bytes(path: str) -> int:
        seen.append(path)
        return int(free_gb * GIB)

    monkeypatch.setattr(experiments.machine_probes, "free_bytes", free_bytes)
    monkeypatch.setenv("TMPDIR", "/tmp")
    args = ["plan", "--exact-nodes", "30", "--topo", "kary:16", "--sizes", "10G", *flags]
    result = runner.invoke(app, args)
    return result.exit_code, result.stdout.splitlines(), result.stderr.splitlines()


def test_a_local_plan_that_cannot_fit_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = _plan(monkeypatch, 77, "--backend", "local", "--data-dir", str(tmp_path))
    assert (code, out) == (2, [])
    assert err == [
        "kary: error: the sweep extracts 310 GiB at its peak (cell 30/kary-16/0: rank 0 20 GiB "
        "+ 29 other ranks x 10 GiB) onto the disk of /tmp, which has 77 GiB free: plan fewer "
        "nodes or smaller sizes, or set TMPDIR to a short folder on a bigger disk"
    ]


def test_a_local_plan_that_comes_close_is_warned_of(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = _plan(monkeypatch, 350, "--backend", "local", "--data-dir", str(tmp_path))
    assert code == 0
    assert (
        "warning: the sweep extracts 310 GiB at its peak (cell 30/kary-16/0: rank 0 20 GiB + 29 "
        "other ranks x 10 GiB) onto the disk of /tmp, 89% of its 350 GiB free (anything else "
        "writing there can fill it)"
    ) in out
    code, out, _ = _plan(monkeypatch, 1000, "--backend", "local", "--data-dir", str(tmp_path))
    assert code == 0 and not [line for line in out if "onto the disk" in line]


def test_a_test_instance_is_checked_too_and_a_cluster_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answering_flux: Path
) -> None:
    data = ["--data-dir", str(tmp_path / "raw")]
    code, _, err = _plan(monkeypatch, 77, "--place", "test-instance", *data)
    assert code == 2 and "onto the disk of /tmp, which has 77 GiB free" in err[0]
    cluster = Path(__file__).resolve().parents[2] / "clusters" / "eks-30.yaml"
    code, _, err = _plan(monkeypatch, 1, "--cluster", str(cluster), *data)
    assert code == 0, err
