"""Design sets: flux-distribute's generator rule, and the shipped file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.errors import UserError
from experiments.model.designs import design_entry, generate_designs, load_designs
from experiments.resources import resource_path


def test_generator_reproduces_the_seed_design_set(flux_distribute: Path) -> None:
    expected = json.loads((flux_distribute / "kary-designs.json").read_text())
    assert [design_entry(d) for d in generate_designs(4, 31)] == expected


def test_shipped_design_file_is_the_generators_output() -> None:
    shipped = json.loads(resource_path("designs", "kary-designs.json").read_text())
    assert shipped == [design_entry(d) for d in generate_designs(4, 31)]


def test_rule_adds_binomial_only_when_it_fits() -> None:
    assert [d.topo for d in generate_designs(4, 4)] == ["binomial", "kary:1", "kary:2"]
    # N=3: ceil(log2 3) = 2 > 1 = N//2, so no binomial.
    assert [d.topo for d in generate_designs(3, 3)] == ["kary:1"]
    assert [d.topo for d in generate_designs(8, 8, min_kary=2, max_kary=3)] == [
        "binomial",
        "kary:2",
        "kary:3",
    ]


def test_bad_ranges_are_user_errors() -> None:
    with pytest.raises(UserError, match="larger than"):
        generate_designs(9, 4)
    with pytest.raises(UserError, match="--min-kary"):
        generate_designs(4, 9, min_kary=3, max_kary=2)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not valid JSON"),
        ('{"nodes": 4}', "JSON list"),
        ('[{"nodes": 4}]', "needs 'nodes' and 'topo'"),
        ('[{"nodes": 4, "topo": "kary:2;rm"}]', "invalid topology"),
        ('[{"nodes": 0, "topo": "kary:2"}]', "whole number"),
    ],
)
def test_damaged_design_files_are_user_errors(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "designs.json"
    path.write_text(content)
    with pytest.raises(UserError, match=message):
        load_designs(path)


def test_missing_design_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        load_designs(tmp_path / "nope.json")
