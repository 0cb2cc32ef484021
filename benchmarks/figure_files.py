"""The golden files behind every README and docs/ figure, and the blocks that show them.

A figure is the whole stdout of one committed command run on committed data
(benchmarks/figures.py lists them).  Its golden file, docs/figures/<name>.txt
(text, shown in a fence) or .md (Markdown tables, shown as they are), holds that
output exactly; a page shows it between two marker lines, followed by a caption
that names the command:

    <!-- figure NAME -->
    ...the golden file's text...
    <!-- /figure NAME -->

This module owns that format: reading and writing golden files, finding the
blocks in pages, and writing a block's body.  A page may show a figure more
than once; every block must match its golden file byte for byte.

A command's exit status is part of its figure (a hold-out that exits 1 failed):
docs/figures/exit-codes.json keeps each figure's, and a caption says a non-zero one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "EXIT_CODES",
    "NAME",
    "Block",
    "BlockError",
    "block_body",
    "blocks_in",
    "check_name",
    "golden_path",
    "read_exit_codes",
    "replace_blocks",
    "write_exit_codes",
]

FIGURE_DIR = Path("docs") / "figures"
EXIT_CODES = FIGURE_DIR / "exit-codes.json"

# A figure's name, in its markers and its golden file's: lower case, digits and '-'.
NAME = r"[a-z0-9][a-z0-9-]*"
_BLOCK = re.compile(
    rf"^<!-- figure (?P<name>{NAME}) -->\n"
    r"(?P<body>.*?)"
    r"^<!-- /figure (?P<end>[^ ]+) -->$",
    re.MULTILINE | re.DOTALL,
)
_OPEN = re.compile(r"^<!-- figure ([^ ]+) -->$", re.MULTILINE)


NAME_RULE = "a figure's name is lower-case letters, digits and '-'"


def check_name(name: str) -> None:
    """ValueError unless `name` is a figure's name (NAME)."""
    if not re.fullmatch(NAME, name):
        raise ValueError(f"figure {name!r}: {NAME_RULE}")


class BlockError(ValueError):
    """A page's figure markers do not pair up (one line says where)."""


@dataclass(frozen=True)
class Block:
    name: str
    body: str
    line: int  # 1-based line of the opening marker


def golden_path(repo: Path, name: str, markdown: bool) -> Path:
    return repo / FIGURE_DIR / f"{name}.{'md' if markdown else 'txt'}"


def read_exit_codes(repo: Path) -> dict[str, int]:
    """Each figure's kept exit status, by name ({} when the file is missing)."""
    path = repo / EXIT_CODES
    return json.loads(path.read_text()) if path.exists() else {}


def write_exit_codes(repo: Path, codes: dict[str, int]) -> None:
    path = repo / EXIT_CODES
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dict(sorted(codes.items())), indent=2) + "\n")


def block_body(text: str, markdown: bool, caption: str) -> str:
    """What sits between a figure's markers: its text (fenced unless Markdown), a caption."""
    shown = text if markdown else f"```text\n{text}```\n"
    return f"{shown}\n{caption}\n"


def blocks_in(page: str, where: str) -> list[Block]:
    """Every figure block of a page; BlockError when a marker has no partner."""
    found = []
    for match in _BLOCK.finditer(page):
        if match["end"] != match["name"]:
            line = page.count("\n", 0, match.start()) + 1
            raise BlockError(
                f"{where}:{line}: figure {match['name']!r} is closed as {match['end']!r}"
            )
        line = page.count("\n", 0, match.start()) + 1
        found.append(Block(match["name"], match["body"], line))
    names = _OPEN.findall(page)
    for name in names:
        if not re.fullmatch(NAME, name):
            raise BlockError(f"{where}: figure {name!r}: {NAME_RULE}")
    opened = len(names)
    if opened != len(found):
        raise BlockError(f"{where}: {opened} figure markers open, {len(found)} close")
    return found


def replace_blocks(page: str, bodies: dict[str, str]) -> str:
    """The page with each named block's body replaced (names not given stay as they are)."""

    def swap(match: re.Match[str]) -> str:
        name = match["name"]
        body = bodies.get(name, match["body"])
        return f"<!-- figure {name} -->\n{body}<!-- /figure {name} -->"

    return _BLOCK.sub(swap, page)
