"""What the prose of README.md and docs/*.md says, checked against its figures.

    .venv/bin/python benchmarks/prose_check.py      # exit 1 naming each problem

- A dollar amount to the cent in a page's prose (`$20.76`) must be one a figure
  of the same page shows: a number copied from an output goes stale when the output
  is re-made, and `make figures` re-makes the figures, not the prose around them.
- No sentence of eight words or more appears twice in one page (a paragraph pasted
  twice reads as a mistake, and one copy goes stale).

Figure blocks (`<!-- figure NAME -->` ... `<!-- /figure NAME -->`) and code
blocks are not prose.  `make figures` runs this after the figures.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGES = ["README.md", "docs/*.md"]
_FIGURE = re.compile(r"<!-- figure ([\w-]+) -->.*?<!-- /figure \1 -->", re.S)
_CODE = re.compile(r"```.*?```", re.S)
_CENTS = re.compile(r"\$[0-9][0-9,]*\.[0-9]{2}\b")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_LONG_SENTENCE_WORDS = 8


def pages(repo: Path = REPO) -> list[Path]:
    return [path for pattern in PAGES for path in sorted(repo.glob(pattern))]


def split(text: str) -> tuple[str, str]:
    """(the page's prose, its figures' text)."""
    figures = "".join(m.group(0) for m in _FIGURE.finditer(text))
    return _CODE.sub("", _FIGURE.sub("", text)), figures


def stray_amounts(text: str) -> list[str]:
    """Dollar amounts to the cent in the prose that no figure of the page shows."""
    prose, figures = split(text)
    return sorted({a for a in _CENTS.findall(prose) if a not in figures})


def repeated_sentences(text: str) -> list[str]:
    """Sentences of eight words or more that the page's prose says twice."""
    prose, _ = split(text)
    seen: set[str] = set()
    repeated = []
    for paragraph in re.split(r"\n\s*\n", prose):
        flat = " ".join(paragraph.split())
        for sentence in _SENTENCE_END.split(flat):
            if len(sentence.split()) < _LONG_SENTENCE_WORDS:
                continue
            if sentence in seen and sentence not in repeated:
                repeated.append(sentence)
            seen.add(sentence)
    return repeated


def problems(repo: Path = REPO) -> list[str]:
    found = []
    for page in pages(repo):
        text = page.read_text()
        name = page.relative_to(repo)
        for amount in stray_amounts(text):
            found.append(f"{name}: {amount} in the prose is in none of its figures")
        for sentence in repeated_sentences(text):
            found.append(f"{name}: said twice: {sentence[:100]}")
    return found


def main() -> int:
    found = problems()
    for line in found:
        print(line)
    print(f"prose: {len(pages())} pages, {len(found)} problems")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
