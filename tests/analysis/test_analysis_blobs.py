"""Every row knows its blob (issue 34, items 1-2): `random` or `zeros` in the parsed tables,
the archive's chunks beside each step, zeros never ranked or compared against random, and
the report says what zero-blob times measure."""

from __future__ import annotations

import shutil
import struct
import zlib
from pathlib import Path

import pandas as pd
import pytest
from analysis_samples import kary_log, legacy_log, run_record, write_cell
from typer.testing import CliRunner

from analysis import compare_parsed, load_parsed, parse_tree, read_tree
from analysis.page.baselines import direct_table
from analysis.page.facts import collect_facts
from analysis.page.inline_plots import collect_plots
from analysis.page.view import strategy_views
from analysis.plots.parts import data_note, with_source
from analysis.tables.sources import source_label
from experiments.cli import app
from experiments.errors import UserError
from experiments.formats.blobs import distinct_chunks
from experiments.formats.cell_layout import cell_id
from experiments.formats.parsed import EVENTS_CSV, RUNS_CSV, SUMMARY_CSV

runner = CliRunner()
ZEROS = "local:vm, zero blobs"
WRITES_16_64 = (
    "these times measure each rank's disk writes: "
    "the archive had 1 distinct chunk of 16 at 16M, of 64 at 64M"
)
SEED_REASON = (
    "these times measure each rank's disk writes: flux-distribute's image made every size with "
    "head -c N /dev/zero, so each archive held one distinct 1 MiB chunk (its logs do not "
    "count them)"
)


def _record(nodes: int, topo: str, iteration: int, blob: str | None) -> str:
    extra = {"blob": blob, "cell": cell_id(nodes, topo, iteration, blob=blob)} if blob else {}
    return run_record(nodes, topo, iteration, cluster="local:vm", **extra)


def write_blob_tree(raw: Path) -> Path:
    """kary:1 and kary:2 on 4 nodes, three iterations each, with random blobs and with zero
    blobs (`all` and `direct`; zeros twice as fast, as a write beats a transfer)."""
    for topo in ("kary:1", "kary:2"):
        for it in range(3):
            for blob, seconds in (("random", 1.0), ("zeros", 0.5)):
                log = kary_log(
                    4, topo, it, strategies=("all", "direct"), seconds=seconds + 0.01 * it,
                    blob=blob,
                )  # fmt: skip
                rel = cell_id(4, topo, it, blob=blob)
                write_cell(raw, rel, log, _record(4, topo, it, blob))
    return raw


@pytest.fixture(scope="module")
def blobs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("blobs")
    parse_tree(write_blob_tree(base / "raw"), base / "parsed", plots=False)
    return base / "parsed"


def _texts(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, keep_default_na=False, dtype=str)


# ---- the tables --------------------------------------------------------------------


def test_each_cell_says_its_blob_in_events_runs_and_summary(blobs: Path) -> None:
    events = _texts(blobs / EVENTS_CSV)
    kinds = dict(zip(events["source"], events["blob"], strict=True))
    assert kinds["4/kary-2/0/topology-experiment.out"] == "random"
    assert kinds["4/kary-2/blob-zeros/0/topology-experiment.out"] == "zeros"
    runs = _texts(blobs / RUNS_CSV)
    cells = dict(zip(runs["source"], runs["blob"], strict=True))
    assert (cells["4/kary-1/0"], cells["4/kary-1/blob-zeros/0"]) == ("random", "zeros")
    summary = _texts(blobs / SUMMARY_CSV)
    assert list(summary.columns[:7]) == [
        "backend", "cluster", "place", "links", "cpu_bound", "blob", "nodes",
    ]  # fmt: skip
    rows = summary[(summary["event"] == "distribute-all-nodes") & (summary["topo"] == "kary:2")]
    # One group per kind, each of its own three runs: never six pooled.
    assert list(zip(rows["blob"], rows["size_label"], rows["n"], rows["median"], strict=True)) == [
        ("random", "16M", "3", "2.02"),
        ("random", "64M", "3", "8.08"),
        ("zeros", "16M", "3", "1.02"),
        ("zeros", "64M", "3", "4.08"),
    ]


def test_the_archive_line_is_on_every_step_of_its_strategy_and_size(blobs: Path) -> None:
    events = _texts(blobs / EVENTS_CSV)
    cell = events[events["source"] == "4/kary-1/blob-zeros/1/topology-experiment.out"]
    counted = {
        (e, size): (chunks, added)
        for e, size, chunks, added in zip(
            cell["event"], cell["size_label"], cell["archive_chunks"],
            cell["store_objects_added"], strict=True,
        )
    }  # fmt: skip
    # 16 zero chunks are one: the store gained it and the archive's own 3 objects; at
    # 64M the chunk was stored already.
    assert counted[("create-archive", "16M")] == ("16", "4")
    assert counted[("distribute-all-nodes", "16M")] == ("16", "4")
    assert counted[("clean-all-nodes", "64M")] == ("64", "3")
    # direct makes no archive, and generating the blob is no archive either.
    assert counted[("distribute-direct", "16M")] == ("", "")
    assert counted[("generate-blob", "16M")] == ("", "")
    random = events[events["source"] == "4/kary-1/1/topology-experiment.out"]
    create = random[random["event"] == "create-archive"]
    assert list(create["store_objects_added"]) == ["19", "67"]
    parsed = load_parsed(blobs)
    assert str(parsed.events["store_objects_added"].dtype) == "Int64"


def test_rows_write_the_bytes_pandas_writes_with_blobs_and_archives(tmp_path: Path) -> None:
    from analysis.tables.parsed_dir import write_parsed

    result = parse_tree(write_blob_tree(tmp_path / "raw"), tmp_path / "rows", plots=False)
    written = {path.name: path.read_bytes() for path in result.written}
    assert (
        written[EVENTS_CSV]
        .split(b"\n", 1)[0]
        .endswith(b",blob,archive_chunks,store_objects_added,flux_version,template_hash")
    )
    write_parsed(tmp_path / "pandas", result.parsed, jobs=1)
    assert written == {p.name: p.read_bytes() for p in sorted((tmp_path / "pandas").iterdir())}


def test_blob_comes_from_run_json_the_cell_line_the_path_or_the_log_format(
    tmp_path: Path,
) -> None:
    raw = tmp_path / "raw"
    # run.json says zeros where nothing else does.
    write_cell(raw, "4/kary-1/0", kary_log(4, "kary:1", 0), _record(4, "kary:1", 0, "zeros"))
    # No run.json: the cell line says zeros.
    write_cell(raw, "4/kary-1/1", kary_log(4, "kary:1", 1, blob="zeros"))
    # Only its folder says zeros.
    write_cell(raw, "4/kary-1/blob-zeros/2", kary_log(4, "kary:1", 2))
    # kary before it said: random, the only kind it made.
    write_cell(raw, "4/kary-1/3", kary_log(4, "kary:1", 3), _record(4, "kary:1", 3, None))
    # A seed-format log and no run.json: flux-distribute's zeros.
    write_cell(raw, "4/kary-1/4", legacy_log(4, "kary:1", sizes=(1,)))
    # run.json and the cell line disagree: run.json is used, and the parse says so.
    write_cell(
        raw, "4/kary-1/5", kary_log(4, "kary:1", 5, blob="random"),
        _record(4, "kary:1", 5, "zeros"),
    )  # fmt: skip
    tables, problems, _, _ = read_tree(raw)
    runs = tables.runs.sort_values("iteration")
    assert list(runs["blob"]) == ["zeros", "zeros", "zeros", "random", "zeros", "zeros"]
    assert set(zip(tables.events["iteration"], tables.events["blob"], strict=True)) == {
        (0, "zeros"), (1, "zeros"), (2, "zeros"), (3, "random"), (4, "zeros"), (5, "zeros"),
    }  # fmt: skip
    assert [(p.path, p.reason) for p in problems if p.kind == "warning"] == [
        (
            "4/kary-1/5/topology-experiment.out",
            "the KARY cell line says blob random, run.json says zeros (used)",
        )
    ]


def test_only_blob_zeros_keeps_the_zero_blob_cells(tmp_path: Path) -> None:
    raw = write_blob_tree(tmp_path / "raw")
    out = tmp_path / "parsed"
    args = ["parse", "--data", str(raw), "--out", str(out), "--no-plots", "--only", "blob=zeros"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("parsed 6 logs in 6 cells: ")
    parsed = load_parsed(out)
    assert set(parsed.runs["blob"]) == {"zeros"}
    assert set(parsed.events["blob"]) == {"zeros"}
    assert parsed.meta["only"] == "blob=zeros"


# ---- an older parse ----------------------------------------------------------------


def _as_older_parse(parsed: Path, old: Path) -> Path:
    """`parsed` as a kary before the blob and archive columns wrote it."""
    shutil.copytree(parsed, old)
    for name in (EVENTS_CSV, RUNS_CSV, SUMMARY_CSV):
        table = _texts(old / name)
        table = table.drop(columns=[c for c in ("blob", "archive_chunks", "store_objects_added")
                                    if c in table.columns])  # fmt: skip
        table.to_csv(old / name, index=False)
    return old


def test_an_older_parse_gets_its_blob_from_its_paths_and_log_formats(
    blobs: Path, tmp_path: Path
) -> None:
    raw = tmp_path / "raw"
    write_cell(raw, "4/kary-1/0", legacy_log(4, "kary:1", sizes=(1,)))
    log = kary_log(4, "kary:1", 1, sizes=("1G",))
    write_cell(raw, "4/kary-1/1", log, _record(4, "kary:1", 1, None))
    parse_tree(raw, tmp_path / "mixed", plots=False)
    old = load_parsed(_as_older_parse(tmp_path / "mixed", tmp_path / "old-mixed"))
    assert list(old.runs["blob"]) == ["zeros", "random"]
    assert set(zip(old.events["iteration"], old.events["blob"], strict=True)) == {
        (0, "zeros"), (1, "random"),
    }  # fmt: skip
    # Two kinds in one older summary: it is made again, one group per kind.
    rows = old.summary[old.summary["event"] == "create-archive"]
    assert list(zip(rows["blob"], rows["n"], strict=True)) == [("zeros", 1), ("random", 1)]
    assert old.events["store_objects_added"].isna().all()
    # A tree of blob directories tells its kinds by its paths alone.
    older = load_parsed(_as_older_parse(blobs, tmp_path / "old-blobs"))
    new = load_parsed(blobs)
    assert list(older.events["blob"]) == list(new.events["blob"])
    assert list(older.runs["blob"]) == list(new.runs["blob"])


# ---- never ranked or compared across kinds -----------------------------------------


def _split(tmp_path: Path) -> tuple[Path, Path]:
    """The blob tree's random and zero cells as two parses."""
    raw = tmp_path / "raw"
    write_blob_tree(raw)
    random, zeros = tmp_path / "random", tmp_path / "zeros"
    parse_tree(raw, random, plots=False, only=_only("blob=random"))
    parse_tree(raw, zeros, plots=False, only=_only("blob=zeros"))
    return random, zeros


def _only(text: str):  # type: ignore[no-untyped-def]
    from experiments.model.cell_filter import parse_only

    return parse_only(text)


def test_compare_refuses_zeros_against_random_old_parse_or_new(blobs: Path, tmp_path: Path) -> None:
    random, zeros = _split(tmp_path)
    result = runner.invoke(app, ["compare", str(random), str(zeros)])
    assert result.exit_code == 2
    assert "before and after differ in blob (before random; after zeros) for 44 of 44 steps" in (
        result.output
    )
    # An older parse of the random cells, which never said its blob, is refused the same.
    old = _as_older_parse(random, tmp_path / "old-random")
    with pytest.raises(UserError, match=r"blob \(before random; after zeros\)"):
        compare_parsed(load_parsed(old), load_parsed(zeros))
    # And compares as ever with a new parse of the same cells.
    same = compare_parsed(load_parsed(old), load_parsed(random))
    assert len(same.table) == 44 and same.mixed == ""
    mixed = runner.invoke(app, ["compare", str(random), str(zeros), "--allow-mixed"])
    assert mixed.exit_code in (0, 1)
    assert "blob random -> blob zeros" in mixed.output
    assert "44 of them mixed" in mixed.output.splitlines()[-1]


def test_verdicts_rank_each_kind_apart_and_say_what_zeros_measure(blobs: Path) -> None:
    parsed = load_parsed(blobs)
    all_view, direct_view = strategy_views(parsed)
    assert [g["source"] for g in all_view["groups"]] == ["local:vm", ZEROS]
    random, zeros = all_view["groups"]
    assert random["warning"] == ""
    assert zeros["warning"] == WRITES_16_64
    assert all_view["data"] == (
        f"data: local:vm (emulated Flux); {ZEROS} (emulated Flux; deduplicated: each rank's "
        "disk writes)"
    )
    # direct's HTTP moves every byte of a zero blob: named, but no such warning.
    assert [g["warning"] for g in direct_view["groups"]] == ["", ""]
    assert direct_view["data"] == f"data: local:vm (emulated Flux); {ZEROS} (emulated Flux)"
    table = direct_table(parsed.events)
    assert table is not None
    assert [r["source"] for r in table["rows"]] == ["local:vm"] * 2 + [ZEROS] * 2
    assert table["blob_note"].startswith(f"{ZEROS}: the trees' archives held one distinct chunk")


def test_the_report_warns_first_when_any_cell_had_zero_blobs(blobs: Path) -> None:
    facts = collect_facts(load_parsed(blobs))
    assert facts.blob_note == (
        "Deduplicated data: 6 of 12 cells had zero blobs (local:vm): an archive of one moves "
        "about one distinct chunk through the tree, not the blob, so these cells are ranked "
        f"and compared only among themselves. T{WRITES_16_64[1:]}."
    )
    assert ("blobs", "random: 6 cells; zeros: 6 cells (deduplicated: one distinct chunk per "
            "archive)") in facts.provenance  # fmt: skip
    assert "local:vm, zero blobs" in facts.sources


def test_a_random_tree_has_no_blob_warning(tmp_path: Path, small_tree: Path) -> None:
    parse_tree(small_tree, tmp_path / "parsed", plots=False)
    parsed = load_parsed(tmp_path / "parsed")
    assert set(parsed.events["blob"]) == {"random"}
    assert collect_facts(parsed).blob_note is None
    assert [g["warning"] for g in strategy_views(parsed)[0]["groups"]] == [""]


def test_a_seed_tree_is_zeros_and_the_report_gives_the_seeds_reason(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    for it in range(3):
        write_cell(raw, f"4/kary-1/{it}", legacy_log(4, "kary:1", sizes=(1, 2)))
    parse_tree(raw, tmp_path / "parsed", plots=False)
    parsed = load_parsed(tmp_path / "parsed")
    assert set(parsed.events["blob"]) == set(parsed.summary["blob"]) == {"zeros"}
    facts = collect_facts(parsed)
    assert facts.blob_note is not None
    assert facts.blob_note.startswith("Deduplicated data: all 3 cells had zero blobs (seed logs)")
    assert facts.blob_note.endswith(f"T{SEED_REASON[1:]}.")
    (view,) = strategy_views(parsed)
    assert [g["warning"] for g in view["groups"]] == [SEED_REASON]


def test_plot_captions_name_zero_blobs(blobs: Path, tmp_path: Path) -> None:
    summary = load_parsed(blobs).summary
    sources = sorted(set(with_source(summary)["source_name"]))
    assert sources == ["local:vm", ZEROS]
    assert data_note(sources, archive=True).endswith(
        f"{ZEROS} (emulated Flux; deduplicated: each rank's disk writes)"
    )
    # The report's captions of the parse's PNGs say so too.
    plots = tmp_path / "parsed" / "plots"
    shutil.copytree(blobs, tmp_path / "parsed")
    plots.mkdir()
    for name in ("time-vs-size-distribute-all-nodes", "time-vs-size-create-archive", "failures"):
        (plots / f"{name}.png").write_bytes(_png())
    titles = [plot.title for plot in collect_plots(load_parsed(tmp_path / "parsed"), plots.parent)]
    assert titles == [
        "failed steps",
        "distribute-all-nodes: time against size · zero blobs on lines of their own "
        "(deduplicated: each rank's disk writes)",
        "create-archive: time against size · zero blobs on lines of their own",
    ]


def _png() -> bytes:
    """A 1x1 PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\x00")) + chunk(b"IEND", b"")
    )  # fmt: skip


@pytest.mark.parametrize(
    ("blob", "label"),
    [("", "local:vm"), ("random", "local:vm"), ("zeros", "local:vm, zero blobs")],
)
def test_a_source_label_names_zero_blobs_only(blob: str, label: str) -> None:
    assert source_label("local", "local:vm", blob=blob) == label
    assert source_label("", "", blob="zeros") == "seed logs, zero blobs"


@pytest.mark.parametrize(
    ("added", "chunks", "distinct"),
    [(4, 16, 1), (3, 64, 1), (2, 16, 1), (19, 16, 16), (67, 64, 64), (0, 0, 0)],
)
def test_distinct_chunks_from_the_store_growth(added: int, chunks: int, distinct: int) -> None:
    assert distinct_chunks(added, chunks) == distinct
