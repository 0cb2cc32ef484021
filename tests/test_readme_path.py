"""The README says how `kary` gets on PATH, and what it names is where `make setup` puts it
(issue 60, item 2: every example says `kary`, and `which kary` found nothing)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_the_readme_says_how_kary_gets_on_path_and_that_is_where_setup_puts_it() -> None:
    readme = (REPO / "README.md").read_text()
    quick = readme[readme.index("## Quick start") : readme.index("## The CLI at a glance")]
    assert "source .venv/bin/activate" in quick and "`.venv/bin/kary`" in quick
    venv = Path(sys.prefix)
    if venv == REPO / ".venv":  # the suite runs from make's venv: it holds both
        assert (venv / "bin" / "kary").is_file() and (venv / "bin" / "activate").is_file()
