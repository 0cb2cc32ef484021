"""`kary compare`: ratio of medians with an interval, asv-style marks, exit 1 on regressions."""

from __future__ import annotations

from pathlib import Path

import pytest
from analysis_samples import kary_log, run_record, write_cell
from typer.testing import CliRunner

from analysis import compare_parsed, load_parsed, parse_tree
from experiments.cli import app

runner = CliRunner()


def _tree(root: Path, slow: float = 1.0, fail: dict[str, int] | None = None) -> Path:
    for topo in ("kary:2", "binomial"):
        for it in range(3):
            rc = fail if (topo, it) == ("binomial", 1) else None
            seconds = (slow if topo == "kary:2" else 1.0) + 0.01 * it
            write_cell(
                root,
                f"4/{topo.replace(':', '-')}/{it}",
                kary_log(4, topo, it, sizes=("16M",), seconds=seconds, rc=rc),
                run_record(4, topo, it),
            )
    return root


@pytest.fixture
def before_after(tmp_path: Path) -> tuple[Path, Path]:
    parse_tree(_tree(tmp_path / "a"), tmp_path / "pa", plots=False)
    slower = _tree(tmp_path / "b", slow=1.5, fail={"distribute-all-nodes-16M": 1})
    parse_tree(slower, tmp_path / "pb", plots=False)
    return tmp_path / "pa", tmp_path / "pb"


def test_compare_marks_slower_and_newly_failing_and_exits_1(
    before_after: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = before_after
    csv = tmp_path / "cmp.csv"
    result = runner.invoke(app, ["compare", str(a), str(b), "--only-changed", "--csv", str(csv)])
    assert result.exit_code == 1
    assert result.stdout == (
        "   before              after  ratio  interval          event"
        "                        topology  nodes  size\n"
        "!  2.020s  2.020s (1 failed)   1.00  [0.98, 1.02] 80%  distribute-all-nodes"
        "         binomial      4  16M\n"
        "+  1.010s             1.510s   1.50  [1.47, 1.52] 90%  create-archive"
        "               kary:2        4  16M\n"
        "+  2.020s             3.020s   1.50  [1.47, 1.52] 90%  distribute-all-nodes"
        "         kary:2        4  16M\n"
        "+  3.030s             4.530s   1.50  [1.47, 1.52] 90%  verify-distribute-all-nodes"
        "  kary:2        4  16M\n"
        "+  4.040s             6.040s   1.50  [1.47, 1.52] 90%  delete-archive-all-nodes"
        "     kary:2        4  16M\n"
        "+  5.050s             7.550s   1.50  [1.47, 1.52] 90%  clean-all-nodes"
        "              kary:2        4  16M\n"
        "5 slower, 0 faster, 1 newly failing, 0 not significant, 6 within x1.1 (12 compared)\n"
    )
    assert csv.read_text().splitlines()[0].startswith("mark,event,topo,nodes,size_label,")


def test_the_reverse_direction_is_faster_and_exits_0(before_after: tuple[Path, Path]) -> None:
    a, b = before_after
    result = runner.invoke(app, ["compare", str(b), str(a), "--factor", "1.2", "--only-changed"])
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == (
        "0 slower, 5 faster, 0 newly failing, 0 not significant, 7 within x1.2 (12 compared)"
    )


def test_identical_trees_compare_clean(before_after: tuple[Path, Path]) -> None:
    a, _ = before_after
    result = runner.invoke(app, ["compare", str(a), str(a)])
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == (
        "0 slower, 0 faster, 0 newly failing, 0 not significant, 12 within x1.1 (12 compared)"
    )


def test_overlapping_noise_beyond_the_factor_is_not_significant(tmp_path: Path) -> None:
    for name, times in (("a", (1.0, 1.0, 3.0)), ("b", (1.5, 1.5, 0.9))):
        root = tmp_path / name
        for it, seconds in enumerate(times):
            write_cell(
                root, f"4/kary-2/{it}", kary_log(4, "kary:2", it, sizes=("16M",), seconds=seconds)
            )
        parse_tree(root, tmp_path / f"p{name}", plots=False)
    comparison = compare_parsed(load_parsed(tmp_path / "pa"), load_parsed(tmp_path / "pb"))
    marks = dict(zip(comparison.table["event"], comparison.table["mark"], strict=True))
    assert marks["distribute-all-nodes"] == "~"
    assert comparison.exit_code == 0


def test_compare_reads_the_seed_parsed_csv(flux_distribute: Path, tmp_path: Path) -> None:
    parse_tree(flux_distribute / "raw-eks-exact-6", tmp_path, plots=False)
    seed = flux_distribute / "parsed-eks-exact-6"
    result = runner.invoke(app, ["compare", str(seed), str(tmp_path), "--only-changed"])
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == (
        "0 slower, 0 faster, 0 newly failing, 0 not significant, 160 within x1.1 (160 compared)"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{tmp}", "{tmp}"], "kary: error: {tmp} is not a parsed directory: "
         "no topologies-events.csv (run kary parse)\n"),
        (["{a}", "{a}", "--factor", "0.9"],
         "kary: error: invalid --factor 0.9: must be greater than 1, e.g. 1.10\n"),
    ],
)  # fmt: skip
def test_compare_errors_are_one_line(
    before_after: tuple[Path, Path], tmp_path: Path, args: list[str], message: str
) -> None:
    a, _ = before_after
    empty = tmp_path / "empty"
    empty.mkdir()
    argv = [x.format(tmp=empty, a=a) for x in args]
    result = runner.invoke(app, ["compare", *argv])
    assert (result.exit_code, result.stderr) == (2, message.format(tmp=empty))


def test_a_newer_parsed_format_is_refused(before_after: tuple[Path, Path]) -> None:
    a, _ = before_after
    (a / "parse.json").write_text('{"format": 99}\n')
    result = runner.invoke(app, ["compare", str(a), str(a)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"kary: error: {a} has parsed format 99; this kary reads format 1: "
        "upgrade kary or parse the raw tree again\n"
    )
