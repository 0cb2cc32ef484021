"""Every README and docs/ figure is a golden file that a command re-makes (`make figures`):
the pages show the golden files byte for byte, and each check can fail."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import figure_files  # noqa: E402
import figures  # noqa: E402

PY = sys.executable


def _figure(name: str, text: str) -> figures.Figure:
    return figures.Figure(name, [PY, "-c", f"print({text!r}, end='')"], "here")


def _page(name: str, body: str) -> str:
    return f"# page\n\nbefore\n<!-- figure {name} -->\n{body}<!-- /figure {name} -->\nafter\n"


def test_the_committed_pages_show_every_figure_as_its_golden_file() -> None:
    # The cheap half of `make figures` (no command runs): a block edited by hand, a
    # golden file re-made without its block, or a figure no page shows fails here.
    results = figures.check_pages(figures.FIGURES)
    assert [r for r in results if r.ok is not True] == []
    assert {r.name for r in results} >= {f.name for f in figures.FIGURES}


def test_every_figure_has_a_golden_file_and_a_command_in_the_repository() -> None:
    for figure in figures.FIGURES:
        assert figures.golden_path(REPO, figure.name, figure.markdown).is_file(), figure.name
        script = next((p for p in figure.command if p.startswith("benchmarks/")), None)
        assert script is None or (REPO / script).is_file(), (figure.name, script)


def test_a_figure_whose_command_now_makes_other_text_fails_with_a_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(figures, "REPO", tmp_path)
    golden = figure_files.golden_path(tmp_path, "holdout", markdown=True)
    golden.parent.mkdir(parents=True)
    golden.write_text("10 of 12 inside\nn=12\n")
    figure_files.write_exit_codes(tmp_path, {"holdout": 0})
    same = figures.check_golden(_figure("holdout", ""), "10 of 12 inside\nn=12\n", 0)
    assert (same.ok, same.seen) == (True, "2 lines, same, exit 0")
    drifted = figures.check_golden(_figure("holdout", ""), "9 of 12 inside\nn=12\n", 0)
    assert drifted.ok is False
    assert "-10 of 12 inside" in drifted.detail and "+9 of 12 inside" in drifted.detail
    # A whole table is compared, not an excerpt: an extra line alone fails too.
    longer = figures.check_golden(_figure("holdout", ""), "10 of 12 inside\nn=12\nextra\n", 0)
    assert longer.ok is False
    missing = figures.check_golden(_figure("other", ""), "x\n", 0)
    assert (missing.ok, missing.seen) == (False, "no golden file docs/figures/other.md")


def test_a_page_block_that_differs_from_its_golden_file_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(figures, "REPO", tmp_path)
    shown, hidden = _figure("shown", "a\n"), _figure("hidden", "b\n")
    (tmp_path / "docs").mkdir()
    assert figures.update([shown, hidden])  # golden files from the commands
    assert (tmp_path / "docs/figures/shown.md").read_text() == "a\n"
    right = figures.expected_body(shown)
    (tmp_path / "README.md").write_text(_page("shown", right))
    results = {r.name: r for r in figures.check_pages([shown, hidden])}
    assert results["shown"].ok is True and results["shown"].seen == "shown in README.md:4"
    assert results["hidden"].ok is False  # no page shows it
    (tmp_path / "docs/box.md").write_text(_page("shown", right.replace("a\n", "a edited\n", 1)))
    (tmp_path / "docs/money.md").write_text(_page("gone", "x\n"))
    results = {r.name: r for r in figures.check_pages([shown, hidden])}
    assert results["docs/box.md:4"].ok is False
    assert results["docs/box.md:4"].seen == "shown differs from its golden file"
    assert results["docs/money.md:4"].seen == "no figure is named 'gone'"


def test_update_rewrites_the_blocks_from_the_golden_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(figures, "REPO", tmp_path)
    figure = _figure("plan", "cost $41.32\n")
    (tmp_path / "README.md").write_text(_page("plan", "stale text\n"))
    figures.update([figure])
    page = (tmp_path / "README.md").read_text()
    assert "stale text" not in page
    assert "cost $41.32\n" in page and page.startswith("# page\n\nbefore\n")
    assert page.endswith("<!-- /figure plan -->\nafter\n")
    assert all(r.ok for r in figures.check_pages([figure]))
    assert figures.listing([figure]).splitlines()[2] == (
        "| plan | README.md | `python -c print('cost $41.32\\n', end='')` |"
    )


def test_markers_that_do_not_pair_up_are_refused() -> None:
    with pytest.raises(figure_files.BlockError, match="closed as 'b'"):
        figure_files.blocks_in("<!-- figure a -->\nx\n<!-- /figure b -->\n", "p.md")
    with pytest.raises(figure_files.BlockError, match="1 figure markers open, 0 close"):
        figure_files.blocks_in("<!-- figure a -->\nx\n", "p.md")


def test_a_figure_name_the_markers_cannot_hold_is_refused_by_name() -> None:
    """An upper-case name once showed only as "markers open 5, close 4"."""
    with pytest.raises(ValueError, match="'race-64M': a figure's name is lower-case"):
        _figure("race-64M", "x")
    with pytest.raises(figure_files.BlockError, match="p.md: figure 'race-64M'"):
        figure_files.blocks_in("<!-- figure race-64M -->\nx\n<!-- /figure race-64M -->\n", "p.md")


def test_a_kary_figure_is_fenced_text_and_a_script_figure_markdown() -> None:
    plan = next(f for f in figures.FIGURES if f.name == "plan-spot")
    assert not plan.markdown and plan.env["SOURCE_DATE_EPOCH"]
    body = figures.expected_body(plan)
    assert body.startswith("```text\n") and "`kary plan --cluster clusters/eks-30-spot.yaml" in body
    assert "--history ../shared/reference/flux-distribute/parsed-eks-exact-6" in body


def test_the_timed_demo_fails_when_slow_on_an_idle_machine_and_is_unsure_when_busy() -> None:
    demo = figures.Timed("demo", ["true"], "here", seconds=20.0, factor=1.5)
    assert figures.judge_time(demo, 25.0, busy=0.05).ok is True
    assert figures.judge_time(demo, 40.0, busy=0.05).ok is False
    assert figures.judge_time(demo, 12.0, busy=0.05).ok is False  # faster than stated, too
    assert figures.judge_time(demo, 40.0, busy=0.60).ok is None


def test_a_figure_whose_command_now_exits_otherwise_fails(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The fidelity check exits 1 (cells outside x1.5): the same table with exit 0 would
    # say the emulator passed, so the figure is no longer the one the page shows.
    figure = next(f for f in figures.FIGURES if f.name == "emulator-fidelity")
    kept = figures.golden_path(REPO, figure.name, figure.markdown).read_text()
    assert figure_files.read_exit_codes(REPO)["emulator-fidelity"] == 1
    monkeypatch.setattr(figures, "make", lambda f: (kept, 0))
    assert figures.main(["--only", "emulator-fidelity"]) == 1
    rows = capsys.readouterr().out.splitlines()
    assert "| emulator-fidelity | FAIL | exit 0, its golden file says exit 1 |" in rows
    monkeypatch.setattr(figures, "make", lambda f: (kept, 1))
    assert figures.main(["--only", "emulator-fidelity"]) == 0


def test_every_figure_keeps_its_exit_status_and_a_caption_says_a_failing_one() -> None:
    codes = figure_files.read_exit_codes(REPO)
    assert set(codes) == {f.name for f in figures.FIGURES}
    held_out = next(f for f in figures.FIGURES if f.name == "emulator-fidelity-mis-calibrated")
    assert codes[held_out.name] == 1
    assert "fidelity-miscalibrated-x4-n12-128M-flux-0.88-2cores.json`, which exits 1, from" in (
        figures.caption(held_out)
    )


def test_a_shallow_clone_re_makes_the_box_hold_outs_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # No figure is skipped as "unsure" for want of git history: the box hold-outs read
    # their protocols' first-commit times from a committed file (tests/model beside).
    made = []
    monkeypatch.setattr(figures, "make", lambda f: made.append(f.name) or ("", 0))
    figures.main(["--only", "box-model-holdout"])
    assert made == ["box-model-holdout"]
    assert "unsure" not in capsys.readouterr().out
