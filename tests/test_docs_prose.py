"""The docs' prose agrees with its figures (issue 60, item 11; benchmarks/prose_check.py):
docs/racing.md's prose said $20.76 and $14.88 where its figure said $20.05 and $14.71."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from prose_check import problems, repeated_sentences, stray_amounts  # noqa: E402

PAGE = """Intro: the race costs $20.76 and a sweep $41.36.

<!-- figure race-plan -->
```
expected $20.05 ($17.10-$19.00); plain sweep $41.36
```
<!-- /figure race-plan -->

kary runs the whole sweep on one machine first, then on the cloud.
Some other sentence here.  kary runs the whole sweep on one machine first, then on the cloud.

```
$99.99 in a code block is output, not prose
```
"""


def test_a_cent_figure_in_prose_must_be_one_a_figure_of_the_page_shows() -> None:
    assert stray_amounts(PAGE) == ["$20.76"]


def test_a_long_sentence_said_twice_is_found_and_a_short_one_is_not() -> None:
    assert repeated_sentences(PAGE) == [
        "kary runs the whole sweep on one machine first, then on the cloud."
    ]
    assert repeated_sentences("See above. See above.") == []


def test_readme_and_docs_have_no_such_problem() -> None:
    assert problems(REPO) == []
