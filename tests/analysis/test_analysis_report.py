"""kary report: the facts it states, who it says wins, and a page that stands alone."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from analysis_samples import kary_log, run_record, write_cell
from headless_chromium import chromium, page_requests
from typer.testing import CliRunner

from analysis import load_parsed, parse_tree
from analysis.page.builder import REPORT_NAME
from analysis.page.facts import Failure, collect_facts
from analysis.page.svg import tree_svg
from analysis.page.view import strategy_views
from analysis.tables.sources import source_label
from experiments.cli import app
from experiments.formats.cell_layout import cell_id
from experiments.model.topology import build_tree

runner = CliRunner()
FAILED_STEP = "distribute-all-nodes-64M"


def _sweep(root: Path, seconds: dict[str, float], iterations: int = 3) -> Path:
    """4 nodes, 3 iterations per topology; kary:1 has one more, which fails one distribute
    step (a failed cell gives no timing: its other steps are void)."""
    for topo, base in seconds.items():
        for it in range(iterations + (topo == "kary:1")):
            rc = {FAILED_STEP: 1} if (topo, it) == ("kary:1", iterations) else None
            write_cell(
                root,
                cell_id(4, topo, it),
                kary_log(4, topo, it, seconds=base + 0.01 * it, rc=rc),
                run_record(4, topo, it, state="failed" if rc else "succeeded"),
            )
    return root


@pytest.fixture(scope="module")
def parsed_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """kary:2 clearly fastest, binomial next, kary:1 slowest; parsed with plots and report."""
    base = tmp_path_factory.mktemp("report")
    raw = _sweep(base / "raw", {"kary:1": 3.0, "kary:2": 1.0, "binomial": 1.5})
    parse_tree(raw, base / "parsed")
    return base / "parsed"


def test_facts_count_cells_outcomes_and_the_failed_step(parsed_sweep: Path) -> None:
    facts = collect_facts(load_parsed(parsed_sweep))
    assert facts.cells == 10
    assert dict(facts.outcomes) == {"succeeded": 9, "failed": 1}
    # The failed cell's other 9 steps are void: a failed cell gives no timing.
    assert (facts.steps, facts.steps_failed, facts.steps_void) == (100, 1, 9)
    assert facts.failures[0] == Failure(
        4, "kary:1", "create-archive", "16M", "void: cell failed", ["3"]
    )
    assert (
        Failure(4, "kary:1", "distribute-all-nodes", "64M", "exit status 1: [1-3]: Exit 1", ["3"])
        in facts.failures
    )
    assert [b["cell"] for b in facts.bad_cells] == ["4/kary-1/3"]
    assert facts.sources == ["local"]
    assert facts.iterations == (3, 4)
    assert facts.sizes == ["16M", "64M"]
    # Dates come from run.json, carried into runs.csv by parse.
    assert (facts.started, facts.finished) == ("2026-01-01 00:00 UTC", "2026-01-01 00:01 UTC")
    assert dict(facts.provenance)["template hash"] == "abc123"


def test_the_winner_its_margin_and_the_failures_beside_it(parsed_sweep: Path) -> None:
    (view,) = strategy_views(load_parsed(parsed_sweep))
    assert (view["strategy"], view["sizes"]) == ("all", ["16M", "64M"])
    (group,) = view["groups"]
    small, large = group["matrix"]
    # Three runs each, [min, max] ranges apart: still not clear, since 3 vs 3 runs
    # cannot give Mann-Whitney p < 0.05. The margin says who took longer.
    assert small == {
        "status": "unsure",
        "design": "kary:2",
        "median": "2.02 s",
        "n": 3,
        "note": "binomial took 50% (1.00 s) longer, but 3 vs 3 runs cannot reach p < 0.05 "
        "(Mann-Whitney at best p=0.1)",
        "failed": "",
    }
    assert (view["n_clear"], view["n_tie"], view["n_unsure"]) == (0, 0, 2)
    assert (large["design"], large["failed"]) == ("kary:2", "kary:1: 1 failed")
    # kary:1 at 64M has three timed iterations and one failure, drawn as a cross, never a time.
    kary1 = next(row for row in group["rows"] if row["design"] == "kary:1")
    cell = kary1["cells"][1]
    assert (cell["n"], cell["failed"], cell["coverage"]) == (3, 1, "75%")
    assert "failed: iteration 3" in cell["svg"]
    # Three runs' interval is [min, max]: the strip says it covers the median 75% of the time.
    kary2 = next(row for row in group["rows"] if row["design"] == "kary:2")
    assert kary2["cells"][0]["coverage"] == "75%"
    assert "interval of the median (n=3, 75% coverage)" in kary2["cells"][0]["svg"]


def test_a_verdict_is_clear_only_where_mann_whitney_says_so(tmp_path: Path) -> None:
    # Four runs each, every kary:2 run below every other: p = 2 / C(8, 4) = 0.029 < 0.05.
    raw = _sweep(tmp_path / "raw", {"kary:1": 3.0, "kary:2": 1.0, "binomial": 1.5}, 4)
    parse_tree(raw, tmp_path / "parsed", plots=False)
    (view,) = strategy_views(load_parsed(tmp_path / "parsed"))
    small = view["groups"][0]["matrix"][0]
    assert small["status"] == "clear"
    assert small["note"] == (
        "binomial took 49% (1.00 s) longer; Mann-Whitney p ≤ 0.029 against every other (n=4)"
    )
    strip = view["groups"][0]["rows"][0]["cells"][0]
    assert (strip["n"], strip["coverage"]) == (4, "88%")


def test_a_tie_is_a_test_that_could_decide_and_did_not(tmp_path: Path) -> None:
    raw = _sweep(tmp_path / "raw", {"kary:1": 1.0, "kary:2": 1.005, "binomial": 1.0}, 4)
    parse_tree(raw, tmp_path / "parsed", plots=False)
    (view,) = strategy_views(load_parsed(tmp_path / "parsed"))
    small = view["groups"][0]["matrix"][0]
    assert small["status"] == "tie"
    assert small["note"].startswith("tie with binomial, kary:2: Mann-Whitney p=1.000 against ")
    assert small["note"].endswith("(n=4), not below 0.05")


def test_a_study_whose_every_run_failed_gets_its_report_listing_the_failures(
    tmp_path: Path,
) -> None:
    # Every run of the only design fails (as under `--emulator-fault corrupt:3`): the
    # verdict has no best, and the report still says which design failed and why.
    raw = tmp_path / "raw"
    for it in range(2):
        log = kary_log(4, "kary:2", it, seconds=1.0, rc={FAILED_STEP: 1})
        write_cell(raw, cell_id(4, "kary:2", it), log, run_record(4, "kary:2", it, state="failed"))
    result = runner.invoke(app, ["parse", "--data", str(raw), "--out", str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    (view,) = strategy_views(load_parsed(tmp_path / "p"))
    # Both cells failed, so their untouched steps are void (no timing from a failed
    # cell); the size whose distribution failed in its own right keeps its verdict.
    (large,) = view["groups"][0]["matrix"]
    assert (large["status"], large["failed"]) == ("failed", "kary:2: 2 failed")
    assert "void: cell failed" in html.unescape((tmp_path / "p" / REPORT_NAME).read_text())
    page = html.unescape((tmp_path / "p" / REPORT_NAME).read_text())
    assert "✗ kary:2: 2 failed" in page
    assert "exit status 1: [1-3]: Exit 1" in page and "4/kary-2/1" in page
    again = runner.invoke(app, ["report", str(tmp_path / "p"), "--out", str(tmp_path / "r.html")])
    assert again.exit_code == 0, again.output
    assert "kary:2: 2 failed" in html.unescape((tmp_path / "r.html").read_text())


def test_parse_writes_a_self_contained_report(parsed_sweep: Path) -> None:
    page = (parsed_sweep / REPORT_NAME).read_text()
    # n = 3: nothing is called clear, and the page says which test would be needed.
    assert 'class="win clear"' not in page
    assert "Mann-Whitney U, two-sided, p &lt; 0.05 against every other topology" in page
    assert "n=3 · 75%" in page
    assert "0 clear, 0 tied, 2 unsure of 2" in page
    # Nothing is fetched: no external references, no scripts, every image inline.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", page)
    assert "<script" not in page and "<link" not in page
    images = re.findall(r'<img[^>]+src="([^"]{0,30})', page)
    assert images and all(src.startswith("data:image/png;base64,") for src in images)
    for anchor in ("overview", "wins", "iterations", "plots", "designs", "failures", "provenance"):
        assert f'id="set0-{anchor}"' in page
    assert page.count('class="design"') == 3  # one drawn tree per design
    assert "exit status 1: [1-3]: Exit 1" in page
    assert "4/kary-1/3" in page


def test_parse_without_plots_writes_no_report(tmp_path: Path) -> None:
    raw = _sweep(tmp_path / "raw", {"kary:2": 1.0})
    result = runner.invoke(
        app, ["parse", "--data", str(raw), "--out", str(tmp_path / "p"), "--no-plots"]
    )
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "p" / REPORT_NAME).exists()
    assert not (tmp_path / "p" / "plots").exists()


def test_report_of_two_sweeps_marks_what_got_slower(tmp_path: Path) -> None:
    # Four runs a side: the fewest for which Mann-Whitney can reach p < 0.05.
    before = _sweep(tmp_path / "raw-a", {"kary:1": 3.0, "kary:2": 1.0, "binomial": 1.5}, 4)
    after = _sweep(tmp_path / "raw-b", {"kary:1": 3.0, "kary:2": 2.0, "binomial": 1.5}, 4)
    parse_tree(before, tmp_path / "before", plots=False)
    parse_tree(after, tmp_path / "after", plots=False)
    out = tmp_path / "compare.html"
    result = runner.invoke(
        app, ["report", str(tmp_path / "before"), str(tmp_path / "after"), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"wrote {out} (")
    page = out.read_text()
    assert '<section id="compare">' in page
    slower = re.findall(r'<tr class="bad">.*?</tr>', page, flags=re.S)
    assert slower and all("kary:2" in row and "slower" in row for row in slower)
    assert not any("binomial" in row for row in slower)


def test_report_of_two_sweeps_of_three_runs_is_unsure(parsed_sweep: Path, tmp_path: Path) -> None:
    # kary:2 doubled, but 3 vs 3 runs cannot reach p < 0.05: unsure, not slower.
    raw = _sweep(tmp_path / "raw", {"kary:1": 3.0, "kary:2": 2.0, "binomial": 1.5})
    parse_tree(raw, tmp_path / "after", plots=False)
    out = tmp_path / "compare.html"
    result = runner.invoke(
        app, ["report", str(parsed_sweep), str(tmp_path / "after"), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert not re.findall(r'<tr class="bad">.*?</tr>', page, flags=re.S)
    assert "unsure: too few runs" in page


def test_report_of_a_folder_that_is_not_parsed_is_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["report", str(tmp_path / "nowhere")])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("kary: error: ")
    assert "Traceback" not in result.output


@pytest.fixture(scope="module")
def gke_report(flux_distribute: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gke") / "parsed"
    parse_tree(flux_distribute / "raw-gke-max-6", out)
    return out / REPORT_NAME


def test_gke_reference_report_shows_strategies_iterations_and_no_failures(
    gke_report: Path,
) -> None:
    page = gke_report.read_text()
    for strategy, event in (
        ("all", "distribute-all-nodes"),
        ("leaves", "distribute-leaf-nodes"),
        ("middle", "distribute-middle-nodes-0 + -1"),
    ):
        assert f'<h3>{strategy} <span class="event">{event}</span></h3>' in page
    assert "No failures: all 1170 timed steps of 45 cells succeeded." in page
    # 9 designs x 5 iterations; each strip of the 1G and 2G columns shows n=5 and
    # its interval's coverage ([min, max] of five runs: 94%).
    assert page.count("n=5 · 94%") == 2 * (9 + 9 + 9)
    # Five runs a side can reach p < 0.05; on these timings Mann-Whitney separates one.
    assert "1 clear, 5 tied, 0 unsure of 6" in page
    assert page.count("matches the logged flux overlay status") == 9


def test_gke_reference_report_warns_that_its_times_are_disk_writes(gke_report: Path) -> None:
    page = html.unescape(gke_report.read_text())
    top = page.index('<h2 id="set0-overview">')
    assert page.index("Deduplicated data: all 45 cells had zero blobs (seed logs)") < top
    writes = (
        "zero blobs: these times measure each rank's disk writes: flux-distribute's image "
        "made every size with head -c N /dev/zero, so each archive held one distinct 1 MiB "
        "chunk (its "
        "logs do not count them)"
    )
    # Beside each verdict group and each group of strips of the three archive strategies.
    assert page.count(writes) == 2 * 3 * 3
    assert "data: seed logs, zero blobs (deduplicated: each rank's disk writes)" in page
    assert "distribute-all-nodes: time against size · zero blobs (deduplicated" in page


def test_gke_reference_report_in_a_real_browser(gke_report: Path, tmp_path: Path) -> None:
    """Headless Chromium opens the page from disk: it draws something, and asks for nothing."""
    from PIL import Image

    shot = tmp_path / "report.png"
    with chromium(tmp_path) as browser:
        browser.run(gke_report.as_uri(), f"--screenshot={shot}", "--window-size=1280,2400")
    assert page_requests(browser.requests) == []
    image = Image.open(shot).convert("RGB")
    assert image.size == (1280, 2400)
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None
    background = max(colours)[0] / (1280 * 2400)
    assert background < 0.9, "the page is (almost) one colour: blank"
    assert len(colours) > 500, "too few colours for text, cards and plots"


@pytest.mark.parametrize(
    ("topo", "nodes"), [("kary:16", 30), ("kary:2", 31), ("binomial", 48), ("kary:0", 30)]
)
def test_numbered_ranks_in_a_drawn_tree_never_overlap(topo: str, nodes: int) -> None:
    svg = tree_svg(build_tree(topo, nodes))
    circles = [
        (float(x), float(y), float(r))
        for x, y, r in re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)" r="([\d.]+)"', svg)
    ]
    assert len(circles) == nodes
    labels = re.findall(r"<text[^>]*>(\d+)</text>", svg)
    assert labels and sorted(map(int, labels)) == list(range(nodes))
    for i, (x1, y1, r1) in enumerate(circles):
        for x2, y2, r2 in circles[i + 1 :]:
            if y1 == y2:
                assert abs(x1 - x2) >= r1 + r2, (x1, x2)


def test_a_large_tree_is_drawn_as_dots_and_a_huge_one_not_at_all() -> None:
    dots = tree_svg(build_tree("kary:8", 500))
    assert dots.count("<circle") == 500 and "<text" not in dots
    assert tree_svg(build_tree("kary:8", 5000)) == ""


@pytest.mark.parametrize(
    ("backend", "cluster", "label"),
    [
        ("local", "local:vm", "local:vm"),
        ("kubernetes", "gke-30", "kubernetes/gke-30"),
        ("kubernetes", None, "kubernetes"),
        (None, None, "seed logs"),
    ],
)
def test_where_timings_come_from(backend: str | None, cluster: str | None, label: str) -> None:
    assert source_label(backend, cluster) == label


def test_a_local_sweep_costs_nothing_and_says_where_it_ran(parsed_sweep: Path) -> None:
    facts = collect_facts(load_parsed(parsed_sweep))
    assert facts.cost == "$0: ran on this machine (emulated Flux)"
