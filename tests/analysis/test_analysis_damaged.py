"""`kary parse` on a damaged tree: never crashes, keeps good rows, lists every bad file."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from analysis_samples import kary_log, legacy_log, run_record, tree_digest, write_cell
from typer.testing import CliRunner

from analysis import load_parsed, parse_tree
from experiments.cli import app

runner = CliRunner()


@pytest.fixture
def damaged_tree(tmp_path: Path) -> Path:
    root = tmp_path / "raw"
    write_cell(root, "4/kary-2/0", kary_log(4, "kary:2", 0), run_record(4, "kary:2", 0))
    write_cell(
        root,
        "4/kary-2/1",
        kary_log(4, "kary:2", 1, rc={"distribute-all-nodes-64M": 1}),
        run_record(4, "kary:2", 1, state="failed", error="1 step failed"),
    )
    write_cell(
        root,
        "4/kary-2/2",
        kary_log(4, "kary:2", 2, stop_before="clean-all-nodes-64M", done=False),
        run_record(4, "kary:2", 2, state="timeout", finished=None),
    )
    write_cell(root, "4/kary-2/3", None, run_record(4, "kary:2", 3, state="pending"))
    crlf_ansi = legacy_log(4, "binomial", sizes=(1,)).replace("\n", "\r\n")
    write_cell(root, "4/binomial/0", "\x1b[33mWARNING\x1b[0m\r\n" + crlf_ansi)
    write_cell(root, "4/binomial/1", "")
    write_cell(root, "4/binomial/2", bytes(range(256)) * 64)
    write_cell(
        root,
        "4/kary-1/0",
        legacy_log(4, "kary:1", sizes=(1,), events=("create-archive", "create-archive")),
    )
    write_cell(
        root,
        "4/kary-1/1",
        legacy_log(4, "kary:1", sizes=(1,), events=("create-archive", "warm-up")),
    )
    failing = {
        "distribute-all-nodes-1": "[1-3]: Exit 1\n\nreal\t0m0.017s\n",
        "clean-all-nodes-1": "\nuser\t0m0.000s\n",
    }
    write_cell(root, "4/kary-1/2", legacy_log(4, "kary:1", sizes=(1,), blocks=failing))
    cut = legacy_log(4, "kary:1", sizes=(1,), ended=False)
    write_cell(root, "4/kary-1/3", cut[: cut.rindex("real")])
    # Odd directory names: the log says who it is; a bare folder cannot.
    write_cell(root, "4/kary 1 (copy)/2", legacy_log(4, "kary:1", sizes=(1,)))
    write_cell(root, "misc", legacy_log(4, "kary:2", sizes=(1,)))
    (root / "notes.txt").write_text("ran on my laptop\n")
    (root / "4/kary-1/2/topology-experiment.out.bak").write_text("old\n")
    (root / ".cache").mkdir()
    (root / ".cache/topology-experiment.out").write_text("hidden\n")
    return root


EXPECTED_STDERR = [
    "kary parse: skipped 4/binomial/1/topology-experiment.out: empty file",
    "kary parse: skipped 4/binomial/2/topology-experiment.out: binary file (not a text log)",
    "kary parse: skipped 4/kary-2/3: no topology-experiment.out (run state: pending)",
    "kary parse: skipped misc/topology-experiment.out: "
    "cannot tell nodes, topology and iteration from the path or files",
    "kary parse: partial 4/kary-1/0/topology-experiment.out: "
    "duplicate events ignored (first kept): create-archive-1",
    "kary parse: partial 4/kary-1/1/topology-experiment.out: unknown events ignored: warm-up-1",
    "kary parse: partial 4/kary-1/3/topology-experiment.out: log ends inside a step (truncated)",
    "kary parse: partial 4/kary-2/2/topology-experiment.out: "
    "no KARY done line: the run was cut short (truncated log)",
    "kary parse: warning 4/kary 1 (copy)/2/topology-experiment.out: same nodes, topology and "
    "iteration as 4/kary-1/2: both kept (a copied folder counts twice)",
    "kary parse: ignored 4/kary-1/2/topology-experiment.out.bak: not a kary file",
    "kary parse: ignored notes.txt: not a kary file",
]


def test_parse_lists_every_damaged_file_and_exits_0(damaged_tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "parsed"
    result = runner.invoke(
        app, ["parse", "--data", str(damaged_tree), "--out", str(out), "--no-plots"]
    )
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == EXPECTED_STDERR
    # 12 logs found; 3 of them gave no rows (empty, binary, a folder of no cell).
    assert result.stdout == (
        "parsed 9 of 12 logs in 13 cells: 50 steps (5 failed, 22 void); 3 cells not succeeded "
        "(1 failed, 1 pending, 1 timeout): no timing from them; "
        f"4 files skipped, 4 partly parsed (see stderr); wrote {out}\n"
    )


def test_the_parse_line_counts_what_was_parsed_and_says_one_as_one(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    write_cell(raw, "4/kary-1/0", legacy_log(4, "kary:1", sizes=(1,), events=("create-archive",)))
    write_cell(raw, "4/kary-1/1", "")  # found, and skipped: not parsed
    out = tmp_path / "parsed"
    result = runner.invoke(app, ["parse", "--data", str(raw), "--out", str(out), "--no-plots"])
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "parsed 1 of 2 logs in 2 cells: 1 step (0 failed); "
        f"1 file skipped, 0 partly parsed (see stderr); wrote {out}\n"
    )
    one = tmp_path / "one"
    write_cell(one, "4/kary-1/0", legacy_log(4, "kary:1", sizes=(1,), events=("create-archive",)))
    result = runner.invoke(app, ["parse", "--data", str(one), "--out", str(out), "--no-plots"])
    assert result.stdout == f"parsed 1 log in 1 cell: 1 step (0 failed); wrote {out}\n"


def test_strict_exits_1_when_anything_was_skipped(damaged_tree: Path, tmp_path: Path) -> None:
    args = ["parse", "--data", str(damaged_tree), "--out", str(tmp_path / "p"), "--no-plots"]
    result = runner.invoke(app, [*args, "--strict"])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == EXPECTED_STDERR


def test_good_rows_are_kept_and_failures_carry_reasons(damaged_tree: Path, tmp_path: Path) -> None:
    parse_tree(damaged_tree, tmp_path / "parsed", plots=False)
    parsed = load_parsed(tmp_path / "parsed")
    events = parsed.events
    failed = events[events["status"] == "failed"]
    assert failed[["source", "event", "size_label", "reason"]].values.tolist() == [
        ["4/kary-1/2/topology-experiment.out", "distribute-all-nodes", "1", "[1-3]: Exit 1"],
        ["4/kary-1/2/topology-experiment.out", "clean-all-nodes", "1", "no 'real' timing line"],
        ["4/kary-1/3/topology-experiment.out", "clean-all-nodes", "1",
         "log ends inside this step (truncated)"],
        ["4/kary-2/1/topology-experiment.out", "distribute-all-nodes", "64M",
         "exit status 1: [1-3]: Exit 1"],
        ["4/kary-2/2/topology-experiment.out", "clean-all-nodes", "64M",
         "log ends inside this step (truncated)"],
    ]  # fmt: skip
    assert failed["time_seconds"].isna().all()
    assert events.loc[events["status"] == "ok", "time_seconds"].notna().all()
    # The CRLF + ANSI legacy log and the odd-named folder still count.
    by_source = events.groupby("source").size().to_dict()
    assert by_source["4/binomial/0/topology-experiment.out"] == 3
    assert by_source["4/kary 1 (copy)/2/topology-experiment.out"] == 3
    # kary's own cells carry their run facts; the timeout cell gives no timing: what its
    # log timed is void, with the cell's state.
    cell = events[events["source"] == "4/kary-2/2/topology-experiment.out"]
    assert set(cell["run_state"]) == {"timeout"}
    assert set(cell["backend"]) == {"local"}
    assert (cell["status"] == "ok").sum() == 0
    assert (cell["status"] == "void: cell timeout").sum() == 11
    assert cell["time_seconds"].isna().all()


def test_summary_counts_failures_and_never_averages_them(
    damaged_tree: Path, tmp_path: Path
) -> None:
    parse_tree(damaged_tree, tmp_path, plots=False)
    summary = pd.read_csv(tmp_path / "summary.csv")
    row = summary[
        (summary["topo"] == "kary:2")
        & (summary["backend"] == "local")
        & (summary["event"] == "distribute-all-nodes")
        & (summary["size_label"] == "64M")
    ]
    # three iterations: one timed (8.0 s), one failed (rc=1), and the timeout cell's
    # 8.0 s is no timing (its steps are void, left out)
    assert row[["n", "failed", "median", "min", "max"]].values.tolist() == [[1, 1, 8.0, 8.0, 8.0]]
    assert row[["ci_low", "ci_high", "ci_coverage"]].isna().all(axis=None)
    blob = summary[(summary["event"] == "generate-blob") & (summary["size_label"] == "16M")]
    assert blob[["strategy", "n", "median"]].values.tolist() == [["setup", 1, 0.25]]


def test_the_raw_tree_is_never_modified(damaged_tree: Path, tmp_path: Path) -> None:
    before = tree_digest(damaged_tree)
    parse_tree(damaged_tree, tmp_path / "parsed", plots=False)
    assert tree_digest(damaged_tree) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["parsed", "raw"]


def test_parse_json_records_problems_and_format(damaged_tree: Path, tmp_path: Path) -> None:
    parse_tree(damaged_tree, tmp_path, plots=False)
    meta = json.loads((tmp_path / "parse.json").read_text())
    assert meta["format"] == 1
    assert (meta["logs"], meta["steps"], meta["steps_failed"]) == (12, 50, 5)
    assert {"path": "notes.txt", "kind": "ignored", "reason": "not a kary file"} in meta["problems"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--data", "{tmp}/nope"], "kary: error: --data {tmp}/nope: no such directory\n"),
        (
            ["--data", "{tmp}/raw", "--out", "{tmp}/raw/parsed"],
            "kary: error: --out {tmp}/raw/parsed is inside --data {tmp}/raw: "
            "the raw tree is read-only\n",
        ),
        (
            ["--data", "{tmp}/empty"],
            "kary: error: --data {tmp}/empty: no cells found "
            "(no topology-experiment.out or run.json below it)\n",
        ),
    ],
)
def test_bad_flags_are_one_line_errors(
    damaged_tree: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "empty").mkdir()
    argv = ["parse", "--out", str(tmp_path / "out"), *[a.format(tmp=tmp_path) for a in args]]
    result = runner.invoke(app, argv)
    assert (result.exit_code, result.stderr) == (2, message.format(tmp=tmp_path))
    assert not (damaged_tree / "parsed").exists()


def test_a_mislabelled_cell_is_warned_about(tmp_path: Path) -> None:
    root = tmp_path / "raw"
    write_cell(root, "4/kary-1/0", legacy_log(4, "kary:2", sizes=(1,)).replace("kary:2\n", "?\n"))
    result = runner.invoke(
        app, ["parse", "--data", str(root), "--out", str(tmp_path / "o"), "--no-plots"]
    )
    assert result.exit_code == 0
    assert result.stderr == (
        "kary parse: warning 4/kary-1/0/topology-experiment.out: "
        "printed overlay is not kary:1 on 4 nodes\n"
    )


_PARSE_FORKED = """
import pickle, sys
from pathlib import Path
import analysis.tree as parse
import analysis.tree_slices as slices
slices.CELLS_PER_JOB = 1  # fork even for a small tree
forked = []
real = slices.Forked
def counted(tasks, workers, **options):
    forked.append((len(tasks), workers))
    return real(tasks, workers, **options)
slices.Forked = counted
result = parse.read_tree(Path(sys.argv[1]), jobs=3)
parse.usable_cores = lambda: 3
parse.parse_tree(Path(sys.argv[1]), Path(sys.argv[3]), plots=False)
Path(sys.argv[2]).write_bytes(pickle.dumps((result, forked, "pandas" in sys.modules)))
"""


def test_logs_parsed_in_forked_workers_give_the_same_tables_files_and_problems(
    damaged_tree: Path, tmp_path: Path
) -> None:
    import pickle
    import subprocess
    import sys

    from analysis import parse_tree, read_tree

    # A fresh interpreter has one thread, so it may fork (pytest's may not).
    out = tmp_path / "forked.pickle"
    forked_dir, serial_dir = tmp_path / "forked", tmp_path / "serial"
    subprocess.run(
        [sys.executable, "-c", _PARSE_FORKED, str(damaged_tree), str(out), str(forked_dir)],
        check=True,
    )
    (parsed, problems, cells, logs), forked, _ = pickle.loads(out.read_bytes())
    # Three workers shared more slices than workers, for both the read and the parse.
    assert [workers for _, workers in forked] == [3, 3]
    assert all(tasks > 3 for tasks, _ in forked)
    serial, serial_problems, serial_cells, serial_logs = read_tree(damaged_tree, jobs=1)
    for table in ("events", "ping", "runs", "summary"):
        pd.testing.assert_frame_equal(getattr(parsed, table), getattr(serial, table))
    assert (parsed.overlays, parsed.meta) == (serial.overlays, serial.meta)
    assert (problems, cells, logs) == (serial_problems, serial_cells, serial_logs)
    # The workers wrote the events rows as CSV text: the same bytes as the table's.
    parse_tree(damaged_tree, serial_dir, plots=False)
    written = sorted(p.name for p in forked_dir.iterdir())
    assert written == sorted(p.name for p in serial_dir.iterdir())
    for name in written:
        assert (forked_dir / name).read_bytes() == (serial_dir / name).read_bytes(), name
    assert any(p.kind == "warning" for p in problems)  # the copied folder, found across workers
