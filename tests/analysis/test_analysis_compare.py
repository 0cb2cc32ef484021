"""`kary compare`: ratio of medians with an interval, asv-style marks, exit 1 on regressions."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from analysis_samples import box_record, kary_log, run_record, write_cell, write_places_tree
from typer.testing import CliRunner

from analysis import compare_parsed, load_parsed, parse_tree
from analysis.page.builder import _comparison
from experiments.cli import app
from experiments.formats.cell_layout import cell_id

runner = CliRunner()


def _tree(
    root: Path,
    slow: float = 1.0,
    fail: dict[str, int] | None = None,
    record: Callable[[int, str, int], str] = run_record,
) -> Path:
    # Five iterations: with three a side, no difference can reach p < 0.05.
    for topo in ("kary:2", "binomial"):
        for it in range(5):
            rc = fail if (topo, it) == ("binomial", 1) else None
            seconds = (slow if topo == "kary:2" else 1.0) + 0.01 * it
            write_cell(
                root,
                cell_id(4, topo, it),
                kary_log(4, topo, it, sizes=("16M",), seconds=seconds, rc=rc),
                record(4, topo, it),
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
        "       before                  after  ratio  interval          test     event"
        "                        topology  nodes  size\n"
        "!  2.040s n=5  2.050s n=4 (1 failed)   1.00  [0.97, 1.03] 97%  p=0.901  "
        "distribute-all-nodes         binomial      4  16M\n"
        "+  1.020s n=5             1.520s n=5   1.49  [1.46, 1.52] 97%  p=0.008  create-archive"
        "               kary:2        4  16M\n"
        "+  2.040s n=5             3.040s n=5   1.49  [1.46, 1.52] 97%  p=0.008  "
        "distribute-all-nodes         kary:2        4  16M\n"
        "+  3.060s n=5             4.560s n=5   1.49  [1.46, 1.52] 97%  p=0.008  "
        "verify-distribute-all-nodes  kary:2        4  16M\n"
        "+  4.080s n=5             6.080s n=5   1.49  [1.46, 1.52] 97%  p=0.008  "
        "delete-archive-all-nodes     kary:2        4  16M\n"
        "+  5.100s n=5             7.600s n=5   1.49  [1.46, 1.52] 97%  p=0.008  clean-all-nodes"
        "              kary:2        4  16M\n"
        "test: Mann-Whitney U, two-sided, alpha 0.05; + and - need a ratio beyond x1.1 and "
        "p < 0.05; ? unsure: n < 3 on a side, or too few runs for p < 0.05 "
        "(3 vs 3 gives at best p = 0.1)\n"
        "5 slower, 0 faster, 1 newly failing, 0 not significant, 0 unsure, 6 within x1.1 "
        "(12 compared)\n"
    )
    assert csv.read_text().splitlines()[0].startswith("mark,event,topo,nodes,size_label,")


def test_the_reverse_direction_is_faster_and_exits_0(before_after: tuple[Path, Path]) -> None:
    a, b = before_after
    result = runner.invoke(app, ["compare", str(b), str(a), "--factor", "1.2", "--only-changed"])
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == (
        "0 slower, 5 faster, 0 newly failing, 0 not significant, 0 unsure, 7 within x1.2 "
        "(12 compared)"
    )


def test_identical_trees_compare_clean(before_after: tuple[Path, Path]) -> None:
    a, _ = before_after
    result = runner.invoke(app, ["compare", str(a), str(a)])
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == (
        "0 slower, 0 faster, 0 newly failing, 0 not significant, 0 unsure, 12 within x1.1 "
        "(12 compared)"
    )


def test_overlapping_noise_beyond_the_factor_is_not_significant(tmp_path: Path) -> None:
    # Enough runs for the test (5 a side), medians 36% apart, but the runs interleave.
    for name, times in (("a", (1.0, 1.0, 3.0, 1.1, 2.9)), ("b", (1.5, 1.5, 0.9, 1.6, 0.8))):
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


def _one_event_tree(root: Path, times: tuple[float, ...]) -> Path:
    """kary:2 on 4 nodes, one iteration per time; distribute-all-nodes takes 2 x time."""
    for it, seconds in enumerate(times):
        log = kary_log(4, "kary:2", it, sizes=("16M",), seconds=seconds)
        write_cell(root, f"4/kary-2/{it}", log, run_record(4, "kary:2", it))
    parse_tree(root, root.with_name(root.name + "-parsed"), plots=False)
    return root.with_name(root.name + "-parsed")


def _distribute_row(before: Path, after: Path) -> dict[str, object]:
    table = compare_parsed(load_parsed(before), load_parsed(after)).table
    row = table[table["event"] == "distribute-all-nodes"].iloc[0]
    return {k: row[k] for k in ("mark", "n_before", "n_after", "test")}


@pytest.mark.parametrize(
    ("before", "after", "mark", "test"),
    [
        # One run a side: twice as slow, but one sample says nothing about noise.
        ((1.0,), (2.0,), "?", "unsure (n=1)"),
        ((1.0, 1.01), (2.0,), "?", "unsure (n=2 vs 1)"),
        # 3 vs 3 all slower: the exact two-sided Mann-Whitney p is 0.1 at best.
        ((1.0, 1.01, 1.02), (2.0, 2.01, 2.02), "?", "p=0.100"),
        # 4 vs 4 all slower: p = 2/70 = 0.029 < 0.05, and beyond the factor.
        ((1.0, 1.01, 1.02, 1.03), (2.0, 2.01, 2.02, 2.03), "+", "p=0.029"),
        # Significant but within the factor is not a regression.
        ((1.0, 1.01, 1.02, 1.03), (1.05, 1.06, 1.07, 1.08), "", "p=0.029"),
    ],
)
def test_a_regression_needs_the_factor_and_the_test(
    tmp_path: Path, before: tuple[float, ...], after: tuple[float, ...], mark: str, test: str
) -> None:
    a = _one_event_tree(tmp_path / "a", before)
    b = _one_event_tree(tmp_path / "b", after)
    assert _distribute_row(a, b) == {
        "mark": mark, "n_before": len(before), "n_after": len(after), "test": test
    }  # fmt: skip
    result = runner.invoke(app, ["compare", str(a), str(b)])
    assert result.exit_code == (1 if mark == "+" else 0), result.output


def test_compare_help_documents_the_test_and_the_exit_codes() -> None:
    result = runner.invoke(app, ["compare", "--help"], terminal_width=200)
    text = " ".join(result.stdout.split())
    assert "Mann-Whitney U" in text and "0.05" in text
    assert "0: nothing got slower" in text
    assert "1: something got slower" in text
    assert "2: bad input" in text


def test_compare_reads_the_seed_parsed_csv(flux_distribute: Path, tmp_path: Path) -> None:
    parse_tree(flux_distribute / "raw-eks-exact-6", tmp_path, plots=False)
    seed = flux_distribute / "parsed-eks-exact-6"
    result = runner.invoke(app, ["compare", str(seed), str(tmp_path), "--only-changed"])
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == (
        "0 slower, 0 faster, 0 newly failing, 0 not significant, 0 unsure, 160 within x1.1 "
        "(160 compared)"
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


def _parsed(raw: Path) -> Path:
    parse_tree(raw, raw.with_name(raw.name + "-parsed"), plots=False)
    return raw.with_name(raw.name + "-parsed")


def test_real_flux_in_a_box_against_the_emulator_is_refused_in_one_line(tmp_path: Path) -> None:
    box = _parsed(_tree(tmp_path / "box", record=box_record))
    emulated = _parsed(_tree(tmp_path / "emulated"))
    result = runner.invoke(app, ["compare", str(box), str(emulated)])
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        "kary: error: before and after differ in backend (before flux; after local), "
        "place (before box; after not recorded), links (before 200Mbit, one FIFO; after unshaped), "
        "cluster (before flux:vm; after not recorded) "
        "and CPU-bound (before no; after not recorded) for 12 of 12 steps both ran, so "
        "their timings are not comparable; --allow-mixed compares them anyway, labelled\n"
    )
    mixed = runner.invoke(app, ["compare", str(box), str(emulated), "--allow-mixed"])
    assert mixed.exit_code == 0, mixed.output
    lines = mixed.stdout.splitlines()
    assert lines[0].endswith("  setting")
    assert lines[1].endswith(
        "  backend flux, place box, links 200Mbit, one FIFO, cluster flux:vm, CPU-bound no -> "
        "backend local, place not recorded, links unshaped, cluster not recorded, "
        "CPU-bound not recorded"
    )
    assert lines[-3].startswith(
        "mixed (--allow-mixed): before and after differ in backend (before flux; after local)"
    )
    assert lines[-3].endswith("; 12 rows compare different settings (setting: before -> after)")
    assert lines[-1].endswith("(12 compared, 12 of them mixed)")


def test_two_unrelated_trees_are_refused_in_one_line(
    before_after: tuple[Path, Path], tmp_path: Path
) -> None:
    a, _ = before_after
    raw = tmp_path / "other"
    write_cell(
        raw, "8/kary-1/0", kary_log(8, "kary:1", 0, sizes=("64M",)), run_record(8, "kary:1", 0)
    )
    other = _parsed(raw)
    result = runner.invoke(app, ["compare", str(a), str(other)])
    refusal = (
        "nothing to compare: no step of before (4 nodes; kary:2, binomial; 16M) is in after "
        "(8 nodes; kary:1; 64M); compare two parses of the same study"
    )
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", f"kary: error: {refusal}\n")
    # The report of both says so where its comparison would be, and shows the rest.
    section = _comparison("a", "other", load_parsed(a), load_parsed(other))
    assert section == {"base": "a", "other": "other", "refused": refusal}


def test_each_place_of_a_tree_is_compared_with_its_own_kind(tmp_path: Path) -> None:
    places = _parsed(write_places_tree(tmp_path / "places"))
    # 12 steps (6 events x 2 topologies) in a box and 12 in a test instance: 24, not 12 pooled.
    itself = compare_parsed(load_parsed(places), load_parsed(places))
    assert len(itself.table) == 24 and set(itself.table["n_before"]) == {3}
    box_only = _parsed(tmp_path / "places" / "box")
    result = runner.invoke(app, ["compare", str(places), str(box_only)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1].endswith("(12 compared; 12 only before, 0 only after)")


def _cloud_record(
    cluster: str, instance_type: str, flux: str, layout: str
) -> Callable[[int, str, int], str]:
    def record(nodes: int, topo: str, iteration: int) -> str:
        return run_record(
            nodes, topo, iteration, backend="kubernetes", cluster=cluster,
            instance_type=instance_type, flux_version=flux, layout=layout,
            image="ghcr.io/converged-computing/flux-view", identity={"layout": layout},
        )  # fmt: skip

    return record


def test_trees_of_another_cluster_layout_and_flux_are_refused_naming_each(
    tmp_path: Path,
) -> None:
    # Issue 42, item 3: an EKS per-cell tree on Flux 0.66 against a GKE nested tree on
    # Flux 0.88 is no regression: compare holds both to every field of the identity.
    eks = _cloud_record("kary-eks-6", "c5a.4xlarge", "0.66.0", "per-cell")
    gke = _cloud_record("kary-gke-30", "c2d-standard-32", "0.88.0", "nested")
    before = _parsed(_tree(tmp_path / "eks", record=eks))
    after = _parsed(_tree(tmp_path / "gke", slow=1.5, record=gke))
    result = runner.invoke(app, ["compare", str(before), str(after)])
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        "kary: error: before and after differ in layout (before per-cell; after nested), "
        "cluster (before kary-eks-6; after kary-gke-30), instance type (before c5a.4xlarge; "
        "after c2d-standard-32) and Flux version (before 0.66.0; after 0.88.0) for 12 of 12 "
        "steps both ran, so their timings are not comparable; --allow-mixed compares them "
        "anyway, labelled\n"
    )
    mixed = runner.invoke(app, ["compare", str(before), str(after), "--allow-mixed"])
    assert mixed.exit_code == 1, mixed.output  # kary:2 slower, labelled


def test_a_flux_version_one_tree_never_recorded_is_not_held_against_the_other(
    tmp_path: Path,
) -> None:
    old = _parsed(_tree(tmp_path / "old", record=_cloud_record("c", "m", "", "")))
    new = _parsed(_tree(tmp_path / "new", record=_cloud_record("c", "m", "0.88.0", "nested")))
    result = runner.invoke(app, ["compare", str(old), str(new)])
    assert result.exit_code == 0, result.output
    other = _parsed(_tree(tmp_path / "other", record=_cloud_record("c", "m", "0.66.0", "")))
    refused = runner.invoke(app, ["compare", str(other), str(new)])
    assert refused.exit_code == 2
    assert "Flux version (before 0.66.0; after 0.88.0)" in refused.stderr


def test_every_identity_field_is_a_compared_column_or_in_the_step() -> None:
    from analysis.compare_match import IDENTITY_COLUMNS
    from experiments.model.identity import RUN_IDENTITY_FIELDS

    assert set(IDENTITY_COLUMNS) == set(RUN_IDENTITY_FIELDS)
