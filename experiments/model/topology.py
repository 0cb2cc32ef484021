"""TBON math: the tree flux-core builds for a topology string, and its overlay text.

Every function here must agree with flux-core byte for byte; the rules are in
../shared/docs/DESIGN.md (TBON math) and the ground truth is real `flux overlay status`
output.  Trees are plain lists indexed by rank so that 100,000 ranks build in a
few tens of milliseconds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from experiments.errors import UserError

__all__ = [
    "OPERATOR_DEFAULT_TOPOLOGY",
    "Topology",
    "Tree",
    "build_tree",
    "compress_idset",
    "consecutive_runs",
    "overlay_parents",
    "overlay_problem",
    "parse_topology",
    "render_overlay",
]

# The Flux Operator starts brokers with tbon.fanout=256: an unset topology.
OPERATOR_DEFAULT_TOPOLOGY = "kary:256"

# Refuse to render overlay text larger than this (characters of indentation).
_MAX_OVERLAY_CHARS = 200_000_000

# The mincrit rule keeps every router's fan-out at or below this.
_MINCRIT_MAX_FANOUT = 1024

_TOPOLOGY_GRAMMAR = re.compile(r"^(?P<scheme>kary|binomial|mincrit)(?::(?P<arg>[0-9]+))?$")


@dataclass(frozen=True)
class Topology:
    """A parsed topology string: `kary:K`, `binomial` or `mincrit[:K]`."""

    scheme: str
    k: int | None = None

    def __str__(self) -> str:
        return self.scheme if self.k is None else f"{self.scheme}:{self.k}"


def parse_topology(text: str) -> Topology:
    """Parse and validate a topology string; anything flux-core refuses is a UserError."""
    match = _TOPOLOGY_GRAMMAR.match(text.strip()) if isinstance(text, str) else None
    if match is None or text != text.strip():
        raise UserError(
            f"invalid topology {text!r}: expected kary:K (K >= 0), binomial or mincrit[:K]"
        )
    scheme, arg = match.group("scheme"), match.group("arg")
    if scheme == "kary":
        if arg is None:
            raise UserError(f"invalid topology {text!r}: kary needs a fan-out, e.g. kary:2")
        return Topology("kary", int(arg))
    if scheme == "binomial":
        if arg is not None:
            raise UserError(f"invalid topology {text!r}: binomial takes no argument")
        return Topology("binomial")
    return Topology("mincrit", None if arg is None else int(arg))


def _mincrit_routers(size: int) -> int:
    if size <= _MINCRIT_MAX_FANOUT + 1:
        return 0
    k = 2
    while math.ceil((size - 1 - k) / k) > _MINCRIT_MAX_FANOUT:
        k += 1
    return k


def _parents(topo: Topology, size: int) -> list[int]:
    if topo.scheme == "kary":
        k = topo.k or 0
        if k == 0:
            return [-1] + [0] * (size - 1)
        return [-1] + [(r - 1) // k for r in range(1, size)]
    if topo.scheme == "binomial":
        return [-1] + [r & (r - 1) for r in range(1, size)]
    k = _mincrit_routers(size) if topo.k is None else topo.k
    if k == 0:
        return [-1] + [0] * (size - 1)
    return [-1] + [0 if r <= k else (r - k - 1) % k + 1 for r in range(1, size)]


@dataclass(frozen=True)
class Tree:
    """The TBON of `size` ranks under one topology; rank 0 is the root."""

    topology: Topology
    size: int
    parents: tuple[int, ...]
    children: tuple[tuple[int, ...], ...]
    level: tuple[int, ...]

    @property
    def depth(self) -> int:
        return max(self.level)

    @property
    def max_fanout(self) -> int:
        return max(len(c) for c in self.children)

    def levels(self) -> dict[int, list[int]]:
        """Ranks by distance from the root, each level in ascending rank order."""
        out: dict[int, list[int]] = {}
        for rank, lvl in enumerate(self.level):
            out.setdefault(lvl, []).append(rank)
        return out

    def edges(self) -> list[tuple[int, int]]:
        """(parent, child) pairs in ascending child rank."""
        return [(p, r) for r, p in enumerate(self.parents) if p >= 0]


def build_tree(topo: Topology | str, size: int) -> Tree:
    """Build the tree flux-core would for `size` brokers."""
    if isinstance(topo, str):
        topo = parse_topology(topo)
    if not isinstance(size, int) or size < 1:
        raise UserError(f"invalid node count {size!r}: must be a whole number >= 1")
    parents = _parents(topo, size)
    children: list[list[int]] = [[] for _ in range(size)]
    for rank in range(1, size):
        children[parents[rank]].append(rank)
    # Every rule above gives each rank a smaller-numbered parent, so one pass
    # in rank order sets every level.
    level = [0] * size
    for rank in range(1, size):
        level[rank] = level[parents[rank]] + 1
    return Tree(
        topology=topo,
        size=size,
        parents=tuple(parents),
        children=tuple(tuple(c) for c in children),
        level=tuple(level),
    )


def render_overlay(
    tree: Tree,
    hostname: str | None = None,
    name: str = "flux-sample",
    status: str = "full",
) -> str:
    """Render `flux overlay status` text: depth-first, children in ascending rank.

    With `hostname` every rank shows that host (as under `flux start --test-size`);
    otherwise rank r is `<name>-<r>`, as Flux Operator pods are named.
    """

    def host(rank: int) -> str:
        return hostname if hostname is not None else f"{name}-{rank}"

    # Each line is indented 3 characters per level, so a deep chain's text grows
    # with the square of its size (kary:1 over 100,000 ranks would be ~15 GB).
    indent_chars = 3 * sum(tree.level)
    if indent_chars > _MAX_OVERLAY_CHARS:
        raise UserError(
            f"the overlay of {tree.topology} on {tree.size} ranks would be "
            f"{indent_chars / 1e9:.1f} GB of text; it is too deep to print"
        )

    lines = [f"0 {host(0)}: {status}"]
    # Explicit stack instead of recursion: kary:1 over many ranks is a deep chain.
    stack: list[tuple[int, str, bool]] = [
        (child, "", i == len(tree.children[0]) - 1)
        for i, child in reversed(list(enumerate(tree.children[0])))
    ]
    while stack:
        rank, prefix, last = stack.pop()
        lines.append(f"{prefix}{'└─ ' if last else '├─ '}{rank} {host(rank)}: {status}")
        below = prefix + ("   " if last else "│  ")
        kids = tree.children[rank]
        stack.extend((kid, below, i == len(kids) - 1) for i, kid in reversed(list(enumerate(kids))))
    return "\n".join(lines) + "\n"


_OVERLAY_LINE = re.compile(r"^(?P<prefix>[│├└─ ]*)(?P<rank>[0-9]+) ")


def overlay_parents(lines: Sequence[str]) -> list[int] | None:
    """Parent per rank from logged `flux overlay status` text, or None if it does not read."""
    parents: dict[int, int] = {}
    stack: list[int] = []  # stack[d] is the latest rank seen at depth d
    for line in lines:
        match = _OVERLAY_LINE.match(line)
        if match is None:
            continue
        rank = int(match.group("rank"))
        depth = len(match.group("prefix")) // 3
        if depth > len(stack) or (depth == 0 and stack):
            return None
        del stack[depth:]
        parents[rank] = stack[-1] if stack else -1
        stack.append(rank)
    if not parents or sorted(parents) != list(range(len(parents))):
        return None
    return [parents[r] for r in range(len(parents))]


def overlay_problem(lines: Sequence[str], topo: str, nodes: int) -> str | None:
    """Why logged `flux overlay status` lines are not `topo`'s tree on `nodes` ranks;
    None when they are, or when either cannot be read (no overlay to judge by)."""
    parents = overlay_parents(lines)
    try:
        expected = list(build_tree(topo, nodes).parents)
    except UserError:
        return None
    if parents is None or parents == expected:
        return None
    if len(parents) != len(expected):
        return f"the overlay Flux printed has {len(parents)} ranks, not {nodes}"
    rank = next(r for r, (p, e) in enumerate(zip(parents, expected, strict=True)) if p != e)
    return (
        f"the overlay Flux printed is not {topo} on {nodes} nodes: rank {rank}'s parent is "
        f"{parents[rank]}, {topo} makes it {expected[rank]}"
    )


def consecutive_runs(numbers: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted distinct numbers as (first, last) runs: [1, 2, 3, 5] -> [(1, 3), (5, 5)]."""
    ordered: Sequence[int] = sorted(set(numbers))
    runs: list[tuple[int, int]] = []
    for number in ordered:
        if runs and number == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], number)
        else:
            runs.append((number, number))
    return runs


def compress_idset(ranks: Iterable[int]) -> str:
    """Flux idset text for ranks: `1-3,5` (ascending, ranges of 2+ joined with '-')."""
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in consecutive_runs(ranks))
