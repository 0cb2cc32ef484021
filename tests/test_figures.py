"""The README's figures and benchmarks/figures.py agree, and its check can fail."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import figures  # noqa: E402

README = (REPO / "README.md").read_text()


def test_every_figure_the_script_checks_is_in_the_readme_as_written() -> None:
    for figure in figures.FIGURES:
        for excerpt in figure.excerpts:
            assert excerpt in README, (figure.name, excerpt)
    assert f"({figures.DEMO.seconds:g} s on an idle 2-core machine;" in README
    # and the README names where each comes from
    for figure in figures.FIGURES:
        script = next((part for part in figure.command if part.startswith("benchmarks/")), None)
        assert script is None or script in README, (figure.name, script)
    assert "make figures" in README


def test_a_figure_that_no_longer_reads_as_written_fails() -> None:
    python = sys.executable
    same = figures.Figure("same", [python, "-c", "print('10 of 12 inside')"], "here", ("10 of 12",))
    drifted = figures.Figure(
        "drifted", [python, "-c", "print('9 of 12 inside')"], "here", ("10 of 12",)
    )
    assert figures.check(same) == (True, "1 excerpt(s) reproduced")
    assert figures.check(drifted) == (False, "missing: '10 of 12'")
