"""Fidelity on flux-distribute's real trees: every row of its own parse appears in ours."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from analysis_samples import tree_digest

from analysis import load_parsed, parse_tree, read_tree

ARCHIVE_TREES = [("raw-eks-exact-6", "parsed-eks-exact-6"), ("raw-gke-max-6", "parsed-gke-max-6")]
SEED_KEYS = ["uid", "topology", "iteration", "nodes", "event", "size_gb"]
PING_KEYS = [
    "uid", "topology", "topology-uid", "iteration", "nodes", "rank", "service",
    "message_size_bytes", "message_size_mb",
]  # fmt: skip


def _seed(path: Path) -> pd.DataFrame:
    return pd.read_csv(path / "topologies-events.csv", index_col=0)


def _assert_seed_rows_present(seed: pd.DataFrame, mine: pd.DataFrame, keys: list[str]) -> None:
    """Every seed row is in ours with the same time (1 ms), unless we marked it failed."""
    assert not mine.duplicated(keys).any()
    merged = seed.merge(mine, on=keys, how="left", suffixes=("_seed", ""), indicator=True)
    missing = merged[merged["_merge"] != "both"]
    assert missing.empty, missing[keys].head().to_string()
    ok = merged["status"] == "ok"
    delta = (merged.loc[ok, "time_seconds"] - merged.loc[ok, "time_seconds_seed"]).abs()
    assert (delta <= 0.001).all(), merged.loc[ok][delta > 0.001].head().to_string()
    assert merged.loc[~ok, "time_seconds"].isna().all()


@pytest.mark.parametrize(("raw", "parsed"), ARCHIVE_TREES)
def test_every_seed_row_appears_with_its_time(flux_distribute: Path, raw: str, parsed: str) -> None:
    tables, problems, cells, logs = read_tree(flux_distribute / raw)
    seed = _seed(flux_distribute / parsed)
    _assert_seed_rows_present(seed, tables.events, SEED_KEYS)
    assert len(tables.events) == len(seed)
    assert [p for p in problems if p.kind != "ignored"] == []
    assert cells == logs


def test_ping_rows_match_the_seed_and_keep_the_one_it_dropped(flux_distribute: Path) -> None:
    tables, _, _, _ = read_tree(flux_distribute / "raw-ping-kind")
    seed = _seed(flux_distribute / "parsed-ping-kind")
    _assert_seed_rows_present(seed, tables.ping, PING_KEYS)
    hops = seed.merge(tables.ping, on=PING_KEYS, suffixes=("_seed", ""))
    assert (hops["hops"] == hops["hops_seed"]).all()
    # flux-distribute lost the ping whose block also held broker.err lines (an unresponsive
    # broker, 103 s); it did reply, so it is kept and timed.
    extra = tables.ping.merge(seed[PING_KEYS], on=PING_KEYS, how="left", indicator=True)
    kept = extra[extra["_merge"] == "left_only"]
    assert kept[["topology-uid", "iteration", "uid", "status"]].values.tolist() == [
        ["binomial-4", 0, "flux-ping-broker-size-1000-rank-1", "ok"]
    ]
    assert kept["time_ms"].tolist() == [103519.185]


@pytest.mark.parametrize("name", ["eks-exact-6", "gke-max-6", "ping-kind"])
def test_overlays_equal_the_seed_topologies_json(flux_distribute: Path, name: str) -> None:
    tables, _, _, _ = read_tree(flux_distribute / f"raw-{name}")
    seed = json.loads((flux_distribute / f"parsed-{name}" / "topologies.json").read_text())
    assert tables.overlays == seed


def test_failed_steps_in_the_reference_trees_are_counted(flux_distribute: Path) -> None:
    # Every step block of flux-distribute's archive trees has a `real` line and no error
    # output, and every ping got its reply: the reference data holds no failure
    # that its logs can show (exit status was never printed by flux-distribute).
    counts = {}
    for raw in ("raw-eks-exact-6", "raw-gke-max-6", "raw-kind", "raw-ping-kind"):
        tables, _, _, _ = read_tree(flux_distribute / raw)
        counts[raw] = (
            len(tables.events),
            int((tables.events["status"] == "failed").sum()),
            len(tables.ping),
            int((tables.ping["status"] == "failed").sum()),
        )
    assert counts == {
        "raw-eks-exact-6": (480, 0, 0, 0),
        "raw-gke-max-6": (1170, 0, 0, 0),
        "raw-kind": (1170, 0, 0, 0),
        "raw-ping-kind": (0, 0, 924, 0),
    }


def test_the_ping_tree_reports_its_cell_without_a_log(flux_distribute: Path) -> None:
    _, problems, cells, logs = read_tree(flux_distribute / "raw-ping-kind")
    assert (cells, logs) == (17, 16)
    assert [str(p) for p in problems] == ["skipped 7/kary-1/0: no topology-experiment.out"]


def test_parse_writes_only_into_out_and_leaves_the_raw_tree_alone(
    flux_distribute: Path, tmp_path: Path
) -> None:
    raw = flux_distribute / "raw-eks-exact-6"
    before = tree_digest(raw)
    out = tmp_path / "parsed"
    result = parse_tree(raw, out, plots=False)
    assert tree_digest(raw) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["parsed"]
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in result.written)
    assert sorted(p.name for p in out.iterdir()) == [
        "parse.json", "ping-events.csv", "runs.csv", "summary.csv",
        "topologies-events.csv", "topologies.json",
    ]  # fmt: skip


def test_the_seed_columns_come_first_and_keep_their_values(
    flux_distribute: Path, tmp_path: Path
) -> None:
    parse_tree(flux_distribute / "raw-eks-exact-6", tmp_path, plots=False)
    text = (tmp_path / "topologies-events.csv").read_text().splitlines()
    assert text[0].startswith("uid,topology,iteration,nodes,event,size_gb,time_seconds,size_bytes,")
    assert text[1] == (
        "kary-1-6,kary-1,0,6,create-archive,1,9.255,1073741824,ok,,,,"
        # No Flux knob set; no run.json, so no place, links or CPU-bound; flux-distribute's
        # blobs were zeros; its log has no archive line, so no chunks or store growth.
        "6/kary-1/0/topology-experiment.out,kary:1,all,1,,,,,,,,zeros,,,,"
    )


@pytest.mark.parametrize("raw", ["raw-eks-exact-6", "raw-gke-max-6", "raw-kind"])
def test_every_row_of_the_seeds_trees_is_zeros(flux_distribute: Path, raw: str) -> None:
    # flux-distribute's image made every size with head -c N /dev/zero (formats/blobs.py).
    tables, _, _, _ = read_tree(flux_distribute / raw)
    assert set(tables.events["blob"]) == set(tables.runs["blob"]) == {"zeros"}
    assert set(tables.summary["blob"]) == {"zeros"}
    assert tables.events["archive_chunks"].isna().all()


def test_the_seeds_own_parsed_csv_is_zeros(flux_distribute: Path) -> None:
    parsed = load_parsed(flux_distribute / "parsed-eks-exact-6")
    assert set(parsed.events["blob"]) == set(parsed.summary["blob"]) == {"zeros"}


def test_the_kind_tree_parses_with_three_strategies(flux_distribute: Path) -> None:
    tables, problems, _, _ = read_tree(flux_distribute / "raw-kind")
    assert [p for p in problems if p.kind != "ignored"] == []
    assert set(tables.events["strategy"]) == {"all", "leaves", "middle"}
    summary = tables.summary
    row = summary[
        (summary["nodes"] == 6)
        & (summary["topo"] == "kary:2")
        & (summary["event"] == "distribute-all-nodes")
        & (summary["size_label"] == "1")
    ]
    assert row[["n", "failed"]].values.tolist() == [[5, 0]]
    assert row["ci_coverage"].tolist() == [0.9375]
