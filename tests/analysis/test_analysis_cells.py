"""Who a cell is: run.json, the KARY cell line, the folder names, the log header, in that order."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from analysis_samples import kary_log, legacy_log, run_record, write_cell

from analysis import read_tree


def _problems(root: Path) -> list[str]:
    return [str(p) for p in read_tree(root)[1]]


def test_run_json_facts_reach_every_row(tmp_path: Path) -> None:
    record = run_record(
        6, "kary:3", 2, backend="kubernetes", cluster="eks-kary-1", instance_type="c5a.4xlarge"
    )
    write_cell(tmp_path, "6/kary-3/2", kary_log(6, "kary:3", 2, sizes=("1G",)), record)
    parsed, problems, _, _ = read_tree(tmp_path)
    assert problems == []
    row = parsed.events.iloc[1]
    assert row[["uid", "topology", "iteration", "nodes", "event", "size_gb"]].tolist() == [
        "kary-3-6", "kary-3", 2, 6, "create-archive", 1,
    ]  # fmt: skip
    assert row[["backend", "cluster", "topo", "strategy", "size_label", "run_state"]].tolist() == [
        "kubernetes", "eks-kary-1", "kary:3", "all", "1G", "succeeded",
    ]  # fmt: skip
    run = parsed.runs.iloc[0]
    columns = ["log_format", "complete", "instance_type", "steps_ok", "steps_failed"]
    assert run[columns].tolist() == ["kary", True, "c5a.4xlarge", 6, 0]
    assert parsed.overlays["kary-3-6"][:2] == ["0 flux-sample-0: full", "├─ 1 flux-sample-1: full"]


def test_a_cell_found_at_any_depth_and_named_by_its_files(tmp_path: Path) -> None:
    # Deep under the root, in a folder whose names say nothing: run.json says who it is.
    write_cell(
        tmp_path,
        "sweeps/2026-01/run-a/cell",
        kary_log(4, "binomial", 1, sizes=("16M",)),
        run_record(4, "binomial", 1),
    )
    parsed, problems, _, _ = read_tree(tmp_path)
    assert problems == []
    assert set(parsed.events["uid"]) == {"binomial-4"}
    assert set(parsed.events["iteration"]) == {1}


def test_disagreeing_sources_are_warned_about(tmp_path: Path) -> None:
    write_cell(tmp_path, "5/kary-2/0", kary_log(4, "kary:2", 0, sizes=("16M",)))
    assert _problems(tmp_path) == [
        "warning 5/kary-2/0/topology-experiment.out: "
        "the directory says nodes 5, the KARY cell line says 4 (used)"
    ]


def test_a_damaged_run_json_is_a_warning_and_the_log_still_counts(tmp_path: Path) -> None:
    write_cell(tmp_path, "4/kary-2/0", kary_log(4, "kary:2", 0, sizes=("16M",)), "{not json")
    parsed, problems, _, _ = read_tree(tmp_path)
    assert [str(p) for p in problems] == [
        "warning 4/kary-2/0/run.json: run.json ignored: not readable JSON "
        "(Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"
    ]
    assert len(parsed.events) == 6


def test_a_failed_cell_without_a_log_says_why(tmp_path: Path) -> None:
    record = run_record(4, "kary:2", 0, state="failed", error="ImagePullBackOff")
    write_cell(tmp_path, "4/kary-2/0", None, record)
    write_cell(tmp_path, "4/kary-2/1", legacy_log(4, "kary:2", sizes=(1,)))
    assert _problems(tmp_path) == [
        "skipped 4/kary-2/0: no topology-experiment.out (run state: failed): ImagePullBackOff"
    ]


def test_an_unidentifiable_empty_log_is_reported_once(tmp_path: Path) -> None:
    write_cell(tmp_path, "x", "")
    write_cell(tmp_path, "4/kary-2/0", legacy_log(4, "kary:2", sizes=(1,)))
    assert _problems(tmp_path) == ["skipped x/topology-experiment.out: empty file"]


def test_a_log_without_events_is_skipped(tmp_path: Path) -> None:
    write_cell(tmp_path, "4/kary-2/0", "broker.err[0]: pod evicted\n")
    write_cell(tmp_path, "4/kary-2/1", legacy_log(4, "kary:2", sizes=(1,)))
    assert _problems(tmp_path) == [
        "skipped 4/kary-2/0/topology-experiment.out: no benchmark events in the log"
    ]


def test_the_same_cell_on_another_backend_is_no_duplicate(tmp_path: Path) -> None:
    write_cell(tmp_path, "local/4/kary-2/0", kary_log(4, "kary:2", 0), run_record(4, "kary:2", 0))
    write_cell(tmp_path, "seed/4/kary-2/0", legacy_log(4, "kary:2", sizes=(1,)))
    assert _problems(tmp_path) == []
    write_cell(tmp_path, "again/4/kary-2/0", legacy_log(4, "kary:2", sizes=(1,)))
    assert _problems(tmp_path) == [
        "warning seed/4/kary-2/0/topology-experiment.out: same nodes, topology and iteration "
        "as again/4/kary-2/0: both kept (a copied folder counts twice)"
    ]


def test_an_unlistable_directory_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_cell(tmp_path, "4/kary-2/0", legacy_log(4, "kary:2", sizes=(1,)))
    (tmp_path / "4/kary-3").mkdir()
    real_scandir = os.scandir

    def scandir(path: str):  # type: ignore[no-untyped-def]
        if str(path).endswith("kary-3"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    assert _problems(tmp_path) == ["skipped 4/kary-3: unreadable directory (Permission denied)"]


def test_each_cell_is_warned_about_its_overlay_though_the_check_is_cached(
    tmp_path: Path,
) -> None:
    """One design's cells print the same overlay: it is judged once (cached), and
    every mislabelled cell is still warned about, every correct one not."""
    from analysis.read.cell import _overlay_matches

    root = tmp_path / "raw"
    for iteration in range(3):
        write_cell(root, f"4/kary-1/{iteration}", legacy_log(4, "kary:2", sizes=(1,)))
        write_cell(root, f"4/kary-2/{iteration}", legacy_log(4, "kary:2", sizes=(1,)))
    _overlay_matches.cache_clear()
    overlay_warnings = [p for p in _problems(root) if "overlay" in p]
    assert overlay_warnings == [
        f"warning 4/kary-1/{i}/topology-experiment.out: printed overlay is not kary:1 on 4 nodes"
        for i in range(3)
    ]
    assert _overlay_matches.cache_info().misses == 2  # one per (overlay, design), not per cell
