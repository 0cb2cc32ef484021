"""Event names per strategy, defined once, and the one topology order."""

from __future__ import annotations

import pytest

from experiments.formats.events import (
    SETUP_EVENTS,
    STRATEGIES,
    STRATEGY_EVENTS,
    event_sort_key,
    split_event_label,
    strategy_events,
    strategy_of,
    topology_order_key,
)
from experiments.model.render import render_cell, strategy_waves
from experiments.model.topology import build_tree

# flux-distribute's names (flux-distribute), which old and new data share.
SEED_EVENTS = {
    "all": [
        "create-archive", "distribute-all-nodes", "delete-archive-all-nodes", "clean-all-nodes",
    ],
    "leaves": [
        "create-leaf-nodes", "distribute-leaf-nodes", "delete-archive-leaf-nodes",
        "clean-leaf-nodes",
    ],
    "middle": [
        "create-middle-nodes", "distribute-middle-nodes-0", "distribute-middle-nodes-1",
        "delete-archive-middle-nodes", "clean-middle-nodes",
    ],
}  # fmt: skip
# kary's own baseline: rank 0's HTTP server started (create) and stopped (delete).
KARY_EVENTS = {
    "direct": ["create-direct", "distribute-direct", "delete-direct", "clean-direct"],
}
EVENTS = {**SEED_EVENTS, **KARY_EVENTS}


def _events_of(strategy: str) -> list[str]:
    names = strategy_events(strategy)
    waves = [names.distribute_event(w) for w in (0, 1)] if names.waved else [names.distribute]
    return [names.create, *waves, names.delete, names.clean]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_each_strategy_emits_the_seeds_event_names(strategy: str) -> None:
    assert _events_of(strategy) == EVENTS[strategy]
    assert {strategy_of(e) for e in _events_of(strategy)} == {strategy}
    assert {strategy_of(f"verify-{e}") for e in _events_of(strategy) if "distribute" in e} == {
        strategy
    }


def test_only_a_distribution_is_verified_and_unknown_events_have_no_strategy() -> None:
    assert strategy_of("verify-create-archive") is None
    assert strategy_of("verify-generate-blob") is None
    assert strategy_of("distribute-middle-nodes") is None  # a waved strategy needs its wave
    assert strategy_of("distribute-middle-nodes-7") == "middle"
    assert strategy_of("ping") is None
    assert [strategy_of(e) for e in SETUP_EVENTS] == ["setup"]


def test_no_event_name_belongs_to_two_strategies() -> None:
    names = [e for s in STRATEGY_EVENTS for e in (s.create, s.distribute, s.delete, s.clean)]
    assert len(names) == len(set(names))


def test_a_wave_only_fits_a_waved_strategy() -> None:
    with pytest.raises(ValueError, match="wave"):
        strategy_events("all").distribute_event(0)
    with pytest.raises(ValueError, match="wave"):
        strategy_events("middle").distribute_event()


def test_the_template_is_rendered_with_these_names() -> None:
    tree = build_tree("kary:2", 7)
    entrypoint = render_cell(7, "kary:2", [2**20], list(STRATEGIES), "7/kary-2/0").entrypoint_sh
    for strategy in STRATEGIES:
        assert [e for e, _ in strategy_waves(tree, strategy)] == [
            e for e in _events_of(strategy) if e.startswith("distribute-")
        ]
        for event in _events_of(strategy):
            assert f"kary_step {event} 1M " in entrypoint


def test_events_sort_in_the_order_they_run() -> None:
    order = [
        "generate-blob",
        "create-archive", "distribute-all-nodes", "verify-distribute-all-nodes",
        "delete-archive-all-nodes", "clean-all-nodes",
        "create-leaf-nodes", "distribute-leaf-nodes", "verify-distribute-leaf-nodes",
        "delete-archive-leaf-nodes", "clean-leaf-nodes",
        "create-middle-nodes", "distribute-middle-nodes-0", "verify-distribute-middle-nodes-0",
        "distribute-middle-nodes-1", "verify-distribute-middle-nodes-1",
        "distribute-middle-nodes-2", "delete-archive-middle-nodes", "clean-middle-nodes",
        "a-custom-step", "zz-another",
    ]  # fmt: skip
    assert sorted(reversed(order), key=event_sort_key) == order


@pytest.mark.parametrize(
    ("name", "split"),
    [
        ("distribute-middle-nodes-0-16M", ("distribute-middle-nodes-0", "16M")),
        ("create-archive-1", ("create-archive", "1")),  # flux-distribute's bare GB label
        ("clean-all-nodes-1.5G", ("clean-all-nodes", "1.5G")),
        ("create-archive", None),
        ("-16M", None),
    ],
)
def test_a_legacy_event_label_splits_into_event_and_size(
    name: str, split: tuple[str, str] | None
) -> None:
    assert split_event_label(name) == split


def test_topologies_sort_by_fan_out_flat_last_then_binomial() -> None:
    names = ["binomial", "kary:16", "kary:2", "kary-10", "kary:1", "mincrit", "kary:0", "weird"]
    assert sorted(names, key=topology_order_key) == [
        "kary:1", "kary:2", "kary-10", "kary:16", "kary:0", "binomial", "mincrit", "weird",
    ]  # fmt: skip
