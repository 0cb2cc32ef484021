"""kary's ping lines into ping-events.csv, and the report's baselines: direct and ping by depth."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
from analysis_samples import kary_log, ping_log, run_record, write_cell

from analysis import load_parsed, parse_tree
from analysis.page.baselines import direct_table, ping_tables
from analysis.page.builder import build_report
from experiments.formats.cell_layout import cell_id
from experiments.formats.parsed import PING_COLUMNS


def _parsed(tmp_path: Path, log: str) -> tuple[pd.DataFrame, list[str]]:
    raw = tmp_path / "raw"
    write_cell(raw, "4/kary-1/0", log, run_record(4, "kary:1", 0, experiment="ping"))
    result = parse_tree(raw, tmp_path / "parsed", plots=False)
    return load_parsed(tmp_path / "parsed").ping, [str(p) for p in result.problems]


def test_kary_pings_fill_ping_events_with_the_seeds_columns(tmp_path: Path) -> None:
    ping, problems = _parsed(tmp_path, ping_log())
    assert problems == []
    assert list(ping.columns) == PING_COLUMNS
    assert len(ping) == 16 and set(ping["status"]) == {"ok"}
    row = ping[(ping["rank"] == 3) & (ping["service"] == "kvs") & (ping["uid"].str.contains("4K"))]
    assert row[
        ["uid", "topology-uid", "message_size_bytes", "time_ms", "hops"]
    ].values.tolist() == [["flux-ping-kvs-size-4K-rank-3", "kary-1-4", 4096, 0.7, 7]]
    assert ping["time_seconds"].round(6).tolist() == (ping["time_ms"] / 1000).round(6).tolist()


def test_a_failed_ping_has_no_time_and_says_why(tmp_path: Path) -> None:
    ping, problems = _parsed(tmp_path, ping_log(failed_rank=2))
    failed = ping[ping["status"] == "failed"]
    assert len(failed) == 2 and failed["time_ms"].isna().all() and failed["hops"].isna().all()
    assert set(failed["reason"]) == {
        "exit status 1: flux-ping: 2!broker.ping: No route to host",
        "exit status 1: flux-ping: 2!kvs.ping: No route to host",
    }
    assert problems == []  # the done line counted both: nothing looks off


def test_a_ping_cut_short_is_a_failed_ping(tmp_path: Path) -> None:
    ping, problems = _parsed(tmp_path, ping_log(cut_at=1))
    last = ping.iloc[-1]
    assert (last["rank"], last["service"], last["status"]) == (1, "broker", "failed")
    assert last["reason"] == "log ends inside this ping (truncated)"
    assert any("no KARY done line" in p for p in problems)


def test_the_report_shows_ping_latency_by_depth(tmp_path: Path) -> None:
    ping, _ = _parsed(tmp_path, ping_log(failed_rank=3))
    (table,) = ping_tables(ping)
    assert (table["nodes"], table["topo"], table["depths"]) == (4, "kary:1", [0, 1, 2, 3])
    rows = {(r["service"], r["pad"]): r["cells"] for r in table["rows"]}
    assert [c["median"] for c in rows[("broker", "0")]] == ["0.1 ms", "0.3 ms", "0.5 ms", "0.7 ms"]
    assert rows[("kvs", "4K")][3] == {"median": "—", "n": 0, "failed": 1}
    html = build_report([tmp_path / "parsed"])
    assert "Ping latency by tree depth" in html and "Direct download" not in html


def test_the_seeds_ping_tree_reads_by_depth_too(flux_distribute: Path) -> None:
    ping = load_parsed(flux_distribute / "parsed-ping-kind").ping
    tables = {(t["nodes"], t["topo"]): t for t in ping_tables(ping)}
    chain = tables[(4, "kary:1")]
    assert chain["depths"] == [0, 1, 2, 3]
    big = next(r for r in chain["rows"] if (r["service"], r["pad"]) == ("broker", "200M"))
    seconds = [float(c["median"].split()[0]) for c in big["cells"]]
    assert seconds == sorted(seconds) and all(c["n"] == 3 for c in big["cells"])


def _slower_direct(log: str, factor: float) -> str:
    """The log with its direct download `factor` times slower than it was written."""
    return re.sub(
        r'("event": "distribute-direct", [^\n]*"seconds": )([0-9.]+)',
        lambda m: f"{m.group(1)}{float(m.group(2)) * factor:.6f}",
        log,
    )


def test_direct_is_compared_with_each_tree_strategy(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    for topo, seconds in (("kary:1", 2.0), ("kary:2", 1.0)):
        for it in range(4):
            log = kary_log(4, topo, it, ("16M",), ("all", "direct"), seconds=seconds + 0.01 * it)
            write_cell(raw, cell_id(4, topo, it), _slower_direct(log, 3), run_record(4, topo, it))
    parse_tree(raw, tmp_path / "parsed", plots=False)
    parsed = load_parsed(tmp_path / "parsed")
    assert set(parsed.events["strategy"]) == {"setup", "all", "direct"}
    table = direct_table(parsed.events)
    assert table is not None and table["strategies"] == ["all"]
    (row,) = table["rows"]
    assert (row["nodes"], row["size"]) == (4, "16M")
    # direct pools over the topologies it ran beside: 6.00-6.18 s (kary:2), 12.00-12.18 s
    # (kary:1); its median is (6.18 + 12.00) / 2.
    assert row["direct"] == "9.09 s (n=8)"
    (tree,) = row["trees"]
    assert (tree["design"], tree["median"]) == ("kary:2", "2.03 s (n=4)")
    assert tree["ratio"].startswith("×0.22 [")
    # All four tree runs below all eight direct ones: p = 2 / C(12, 4).
    assert tree["verdict"] == "the tree faster (p = 0.004)" and tree["tone"] == "good"
    html = build_report([tmp_path / "parsed"])
    assert "Direct download against the trees" in html and "the tree faster" in html


def test_without_direct_the_report_has_no_baseline(small_tree: Path, tmp_path: Path) -> None:
    parse_tree(small_tree, tmp_path / "parsed", plots=False)
    assert direct_table(load_parsed(tmp_path / "parsed").events) is None
    assert "Direct download" not in build_report([tmp_path / "parsed"])


def test_a_direct_download_whose_verify_failed_is_no_timing(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    log = kary_log(4, "kary:2", 0, ("16M",), ("direct",), rc={"verify-distribute-direct-16M": 1})
    write_cell(raw, cell_id(4, "kary:2", 0), log, run_record(4, "kary:2", 0))
    parse_tree(raw, tmp_path / "parsed", plots=False)
    events = load_parsed(tmp_path / "parsed").events
    (row,) = events[events["event"] == "distribute-direct"].to_dict("records")
    assert row["status"] == "failed" and pd.isna(row["time_seconds"])
    assert str(row["reason"]).startswith("verify failed")
