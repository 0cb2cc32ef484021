"""TBON math against flux-core's rules and real `flux overlay status` output."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from experiments.errors import UserError
from experiments.model.topology import build_tree, compress_idset, parse_topology, render_overlay


def _overlay_blocks(reference: Path) -> list[tuple[int, str, str, str]]:
    text = (reference / "overlay-status-n4-n20.txt").read_text()
    blocks = []
    for chunk in text.split("\n\n"):
        if not chunk.strip():
            continue
        head, _, body = chunk.strip("\n").partition("\n")
        match = re.fullmatch(r"nodes-(\d+)-topo-(\S+)", head)
        assert match, head
        host = body.split()[1].rstrip(":")
        blocks.append((int(match.group(1)), match.group(2), host, body + "\n"))
    return blocks


def test_every_real_overlay_block_matches_byte_for_byte(flux_distribute: Path) -> None:
    blocks = _overlay_blocks(flux_distribute)
    assert len(blocks) == 114
    mismatched = [
        f"{n} {topo}"
        for n, topo, host, expected in blocks
        if render_overlay(build_tree(topo, n), hostname=host) != expected
    ]
    assert mismatched == []


def test_overlay_names_ranks_like_operator_pods() -> None:
    assert render_overlay(build_tree("kary:2", 4)) == (
        "0 flux-sample-0: full\n"
        "├─ 1 flux-sample-1: full\n"
        "│  └─ 3 flux-sample-3: full\n"
        "└─ 2 flux-sample-2: full\n"
    )
    assert render_overlay(build_tree("kary:1", 3), name="lab").splitlines()[-1] == (
        "   └─ 2 lab-2: full"
    )


@pytest.mark.parametrize(
    ("topo", "size", "parents"),
    [
        ("kary:2", 7, [-1, 0, 0, 1, 1, 2, 2]),
        ("kary:3", 6, [-1, 0, 0, 0, 1, 1]),
        ("kary:0", 4, [-1, 0, 0, 0]),
        ("kary:1", 4, [-1, 0, 1, 2]),
        ("binomial", 8, [-1, 0, 0, 2, 0, 4, 4, 6]),
        ("mincrit", 5, [-1, 0, 0, 0, 0]),
        ("mincrit:2", 7, [-1, 0, 0, 1, 2, 1, 2]),
        ("kary:256", 3, [-1, 0, 0]),
    ],
)
def test_parents_follow_flux_core_rules(topo: str, size: int, parents: list[int]) -> None:
    assert list(build_tree(topo, size).parents) == parents


def test_mincrit_default_fanout_switches_on_above_1025_ranks() -> None:
    assert build_tree("mincrit", 1025).max_fanout == 1024
    big = build_tree("mincrit", 1026)
    # K=2 routers under rank 0, the rest spread evenly below them.
    assert big.children[0] == (1, 2)
    assert big.max_fanout == 512
    huge = build_tree("mincrit", 5000)
    assert len(huge.children[0]) == 5  # smallest K with ceil((N-1-K)/K) <= 1024
    assert huge.max_fanout <= 1024


def test_levels_depth_and_children_agree() -> None:
    tree = build_tree("kary:2", 6)
    assert tree.levels() == {0: [0], 1: [1, 2], 2: [3, 4, 5]}
    assert tree.depth == 2
    assert tree.children[2] == (5,)
    assert tree.edges() == [(0, 1), (0, 2), (1, 3), (1, 4), (2, 5)]


def test_a_deep_chain_renders_without_recursion() -> None:
    lines = render_overlay(build_tree("kary:1", 3000), hostname="h").splitlines()
    assert len(lines) == 3000
    assert lines[-1] == " " * 3 * 2998 + "└─ 2999 h: full"


def test_a_large_tree_builds() -> None:
    tree = build_tree("kary:16", 100_000)
    assert tree.size == 100_000
    assert tree.depth == 5


@pytest.mark.parametrize(
    "text",
    [
        "kary",
        "kary:",
        "kary:x",
        "kary:-1",
        "binomial:2",
        "mincrit:",
        "kary:2;id",
        " kary:2",
        "KARY:2",
        "kary:2\n",
        "flat",
        "",
        "kary:2:3",
        "kary:$(id)",
    ],
)
def test_invalid_topologies_are_user_errors(text: str) -> None:
    with pytest.raises(UserError, match="invalid topology"):
        parse_topology(text)


def test_invalid_node_counts_are_user_errors() -> None:
    with pytest.raises(UserError, match="node count"):
        build_tree("kary:2", 0)


def test_idsets_compress_like_flux() -> None:
    assert compress_idset([5, 3, 4, 7, 1]) == "1,3-5,7"
    assert compress_idset([1, 2]) == "1-2"
    assert compress_idset([]) == ""


def test_an_unprintably_deep_overlay_is_refused_not_attempted() -> None:
    tree = build_tree("kary:1", 100_000)  # building is fine
    with pytest.raises(UserError, match="too deep to print"):
        render_overlay(tree)
