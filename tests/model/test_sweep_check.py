"""A sweep checked in one pass (model/sweep_check.py): the backend, place and layout it
runs in, and its flags in the form the plan and the backend use, from a Sweep and what
kary knows of this machine (`Here`), with no other input."""

from __future__ import annotations

from pathlib import Path

import pytest

import experiments.backends
from experiments.errors import UserError
from experiments.formats.run_record import ALLOCATION, BOX, NESTED, PER_CELL, TEST_INSTANCE
from experiments.model.places import BACKENDS, Here
from experiments.model.plan import Cell
from experiments.model.sweep import Sweep
from experiments.model.sweep_check import check_cells, check_sweep

EKS_6 = Path(__file__).resolve().parents[2] / "clusters" / "eks-6.yaml"
NO_FLUX = Here(flux=None, in_allocation=False)
FLUX = Here(flux="/usr/bin/flux", in_allocation=False)
IN_ALLOCATION = Here(flux="/usr/bin/flux", in_allocation=True)


@pytest.mark.parametrize(
    ("sweep", "here", "backend", "place"),
    [
        (Sweep(exact_nodes=4), NO_FLUX, "local", None),
        (Sweep(exact_nodes=4), FLUX, "flux", TEST_INSTANCE),
        (Sweep(exact_nodes=4), IN_ALLOCATION, "flux", ALLOCATION),
        (Sweep(exact_nodes=4, link_bandwidth="100Mbit"), FLUX, "flux", BOX),
        (Sweep(exact_nodes=4, link_bandwidth="100Mbit"), NO_FLUX, "local", None),
        (Sweep(exact_nodes=4, emulator_faults=("corrupt:1",)), FLUX, "local", None),
        (Sweep(exact_nodes=4, place="test-instance"), FLUX, "flux", TEST_INSTANCE),
    ],
)
def test_the_backend_and_place_follow_the_flags_and_this_machine(
    sweep: Sweep, here: Here, backend: str, place: str | None
) -> None:
    checked = check_sweep(sweep, here)
    assert (checked.backend, checked.place) == (backend, place)


def test_flags_arrive_in_the_form_the_plan_and_backends_use() -> None:
    checked = check_sweep(
        Sweep(
            exact_nodes=8,
            sizes="16M,1G",
            strategies=["all,leaves", "middle"],
            chunksize="256K",
            link_bandwidth="200Mbit",
            root_link_bandwidth="1Gbit",
            group_size=4,
            group_link_bandwidth="25Mbit",
        ),
        FLUX,
    )
    assert checked.sizes == [16 * 2**20, 2**30]
    assert checked.strategies == ["all", "leaves", "middle"]
    assert checked.chunksize == 256 * 2**10
    links = checked.links
    assert (links.bandwidth, links.root_bandwidth, links.group_bandwidth) == (25e6, 125e6, 3.125e6)
    assert links.group_size == 4 and links.typed("link_bandwidth") == "200Mbit"
    assert checked.layout == PER_CELL


def test_kubernetes_defaults_to_nested_and_a_cluster_file_picks_it() -> None:
    checked = check_sweep(Sweep(exact_nodes=6, cluster=EKS_6), NO_FLUX)
    assert (checked.backend, checked.layout, checked.place) == ("kubernetes", NESTED, None)
    assert checked.cluster is not None and checked.cluster.nodes == 6


def test_a_bad_root_link_is_refused_by_the_plan_not_the_run() -> None:
    # Before the one pass, --root-link-bandwidth was parsed only when the box started.
    with pytest.raises(UserError, match="invalid bandwidth 'fast'"):
        check_sweep(Sweep(exact_nodes=4, link_bandwidth="1Gbit", root_link_bandwidth="fast"), FLUX)


@pytest.mark.parametrize(
    ("sweep", "here", "message"),
    [
        (Sweep(exact_nodes=4, place="allocation"), FLUX, "FLUX_URI is not set"),
        (Sweep(exact_nodes=4, place="moon"), FLUX, "unknown place 'moon'"),
        (Sweep(exact_nodes=4, backend="local", place="box"), FLUX, "flux backend only"),
        (
            Sweep(exact_nodes=4, layout="nested", link_bandwidth="1Gbit"),
            FLUX,
            "not built for the box",
        ),
        (Sweep(exact_nodes=4, group_size=2), FLUX, "needs both --group-size"),
        (Sweep(exact_nodes=4, iterations=0), FLUX, "invalid --iters 0"),
        (Sweep(exact_nodes=4, emulator_faults=("melt:1",)), FLUX, "invalid --emulator-fault"),
    ],
)
def test_each_mistake_is_one_line(sweep: Sweep, here: Here, message: str) -> None:
    with pytest.raises(UserError, match=message):
        check_sweep(sweep, here)


def test_the_checks_that_need_cells() -> None:
    checked = check_sweep(Sweep(exact_nodes=4, emulator_faults=("corrupt:5",)), NO_FLUX)
    with pytest.raises(UserError, match=r"cell 4/kary-2/0 has no rank 5 \(ranks 0-3\)"):
        check_cells(checked, [Cell(4, "kary:2", 0, (1,), ("all",))], 4)
    on_eks = check_sweep(Sweep(exact_nodes=6, cluster=EKS_6), NO_FLUX)
    with pytest.raises(UserError, match="the plan needs 8 nodes but"):
        check_cells(on_eks, [], 8)


def test_every_backend_name_has_a_backend() -> None:
    registry = experiments.backends._REGISTRY
    assert tuple(registry) == BACKENDS
    assert [experiments.backends.backend_class(name).name for name in BACKENDS] == list(BACKENDS)
