"""Each pod requests more than half of its worker (issue 44, item 2): not BestEffort,
which the kubelet evicts first, and never two of a MiniCluster's pods on one node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from strict_schema import crd_schema, validate_strictly

from experiments import api
from experiments.model.cluster_spec import load_cluster_spec
from experiments.model.plan import Cell
from experiments.model.pod_resources import pod_requests, worker_machine
from experiments.model.render import render_cell
from experiments.model.sweep import Sweep
from experiments.resources import resource_path


@pytest.mark.parametrize(
    ("cluster", "requests"),
    [
        # c5a.4xlarge: 16 vCPUs, 32 GiB; three quarters of each.  The disk rank 0's pod
        # writes: the 1M blob kept and its content-store copy, and the flux view's two
        # copies (2 x 1.5 GB): 2 MiB + 3e9 bytes, rounded up to 2864 MiB.
        ("eks-30.yaml", {"cpu": "12000m", "memory": "24576Mi", "ephemeral-storage": "2864Mi"}),
        # c2d-standard-32 with threadsPerCore: 1 shows 16 vCPUs (one a core), 128 GiB.
        ("gke-30.yaml", {"cpu": "12000m", "memory": "98304Mi", "ephemeral-storage": "2864Mi"}),
    ],
)
def test_a_plan_on_a_cluster_file_requests_most_of_a_worker_and_the_crd_takes_it(
    cluster: str, requests: dict[str, str], tmp_path: Path, minicluster_crd: Path, cell: Cell
) -> None:
    sweep = Sweep(
        exact_nodes=4,
        topos=["kary:2"],
        sizes=["1M"],
        cluster=resource_path("clusters", cluster),
        data_dir=tmp_path / "raw",
    )
    render = api.plan(sweep).render
    assert render.requests == requests
    rendered = render_cell(
        cell.nodes, cell.topo, list(cell.sizes), list(cell.strategies), cell.id, render
    )
    document: dict[str, Any] = yaml.safe_load(rendered.minicluster_yaml)
    validate_strictly(document, crd_schema(minicluster_crd))
    # MiniClusterContainer.resources is what the operator gives the pod's container
    # (flux-operator 0d75cef8, controllers/flux/containers.go: container.Resources).
    assert document["spec"]["containers"][0]["resources"] == {"requests": requests}


def test_each_pod_requests_the_disk_its_plan_says_rank_0_writes(tmp_path: Path) -> None:
    """Under DiskPressure the kubelet ranks pods by ephemeral-storage use over request,
    whatever their QoS class (issue 59, 3): a pod requesting none is always over it."""
    from experiments.model.disk import GIB, disk_need

    sweep = Sweep(
        exact_nodes=4,
        topos=["kary:2", "kary:4"],
        sizes=["1G", "4G"],
        cluster=resource_path("clusters", "eks-30.yaml"),
        data_dir=tmp_path / "raw",
    )
    planned = api.plan(sweep)
    need = disk_need(planned.plan.cells, "nested", planned.render.image, "eks")
    # Nested: both sizes kept (5 GiB) and the largest cell's content store (5 GiB).
    assert need.blob_cache == need.content_store == 5 * GIB
    writes = need.blob_cache + need.scratch + need.content_store + need.view
    assert planned.render.requests["ephemeral-storage"] == f"{-(-writes // 2**20)}Mi"


def test_no_cluster_file_or_an_unknown_type_requests_nothing(tmp_path: Path, cell: Cell) -> None:
    assert pod_requests(None) is None
    path = tmp_path / "eks.yaml"
    text = resource_path("clusters", "eks-30.yaml").read_text()
    path.write_text(text.replace("instanceType: c5a.4xlarge", "instanceType: x9.huge"))
    assert pod_requests(load_cluster_spec(path)) is None
    rendered = render_cell(cell.nodes, cell.topo, list(cell.sizes), list(cell.strategies), cell.id)
    assert "resources" not in yaml.safe_load(rendered.minicluster_yaml)["spec"]["containers"][0]


def test_a_group_of_several_types_requests_what_the_smallest_holds(tmp_path: Path) -> None:
    path = tmp_path / "eks.yaml"
    text = resource_path("clusters", "eks-30-spot.yaml").read_text()
    path.write_text(text.replace('["c5a.4xlarge"]', '["c5a.8xlarge", "c5a.4xlarge"]'))
    spec = load_cluster_spec(path)
    assert [g.types for g in spec.node_groups] == [("c5a.8xlarge", "c5a.4xlarge")]
    machine = worker_machine(spec)
    assert machine is not None and (machine.vcpus, machine.memory_gib) == (16, 32)
    assert pod_requests(spec) == {"cpu": "12000m", "memory": "24576Mi"}


def test_gke_with_smt_on_shows_every_thread(tmp_path: Path) -> None:
    path = tmp_path / "gke.yaml"
    text = resource_path("clusters", "gke-30.yaml").read_text()
    path.write_text(text.replace("threadsPerCore: 1", "threadsPerCore: 2"))
    assert pod_requests(load_cluster_spec(path)) == {"cpu": "24000m", "memory": "98304Mi"}
