"""What each MiniCluster pod requests of its worker: more than half of its vCPUs and
memory, and the disk it writes (issue 44, item 2; issue 59, item 3).

A pod that requests nothing lets the scheduler put two of a MiniCluster's pods on
one node, which then share its disk, its NIC and its cores and time something no one
asked about.  Requesting POD_SHARE of a worker's vCPUs and memory (more than half)
leaves room for one such pod a node and keeps it under what the provider reserves
for the kubelet, the OS and the system pods (EKS and GKE reserve a few percent of
the CPU and up to about a quarter of a small node's memory: allocatable is what is
left).  Under memory pressure the kubelet then ranks the pod by its memory use over
that request.

Those requests do not protect against *disk* pressure: under DiskPressure the
kubelet ranks pods by their ephemeral-storage use over their ephemeral-storage
request, and the QoS class plays no part (Kubernetes docs, "Node-pressure
Eviction", Pod selection for kubelet eviction).  A pod that requests no
ephemeral-storage is always over it.  So each pod also requests the disk rank 0's
pod writes at its peak, as the plan figures it (model/disk.py, DiskNeed.pod_writes:
the blobs, the content store, the flux view's copies): the scheduler places by it
and the kubelet ranks by it.  One container template serves every pod of a
MiniCluster, so every pod requests rank 0's figure, the largest.

Requests only, no limits: a CPU limit throttles the brokers by the CFS quota, and a
memory limit makes the kernel kill the pod at it; neither is a cost the benchmark
should carry.  The operator copies a container's `resources` into the pod's
container as it is (flux-operator 0d75cef8, api/v1alpha2/minicluster_types.go:
MiniClusterContainer.Resources, a corev1.ResourceRequirements;
controllers/flux/containers.go, getContainers: `Resources: container.Resources`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from experiments.model.cluster_spec import ClusterSpec

__all__ = ["MACHINES", "POD_SHARE", "Machine", "pod_requests", "worker_machine"]

# Of a worker's vCPUs and memory, what each pod requests: above 1/2 so that no two
# pods fit one node; below 1 minus what EKS and GKE reserve of their smallest types
# here (m5.large's 8 GiB keeps about 7.3 GiB allocatable, 91%).
POD_SHARE = 0.75


@dataclass(frozen=True)
class Machine:
    """A machine type as the provider lists it: vCPUs (hardware threads) and memory."""

    vcpus: int
    memory_gib: int
    threads_per_core: int = 2  # 1: SMT is off on this type (every vCPU a core)


# The types clusters/prices.yaml prices.  Sources: AWS "Amazon EC2 instance types"
# specifications (compute optimized, general purpose, accelerated computing, HPC);
# Google Compute Engine "Machine families resource and comparison guide".
MACHINES: dict[str, Machine] = {
    "c5a.4xlarge": Machine(16, 32),
    "c5a.8xlarge": Machine(32, 64),
    "c5.4xlarge": Machine(16, 32),
    "c5.9xlarge": Machine(36, 72),
    "c5.18xlarge": Machine(72, 144),
    "c5n.9xlarge": Machine(36, 96),
    "c5n.18xlarge": Machine(72, 192),
    "c6i.4xlarge": Machine(16, 32),
    "c6a.4xlarge": Machine(16, 32),
    "c7i.4xlarge": Machine(16, 32),
    "hpc6a.48xlarge": Machine(96, 384, threads_per_core=1),
    "hpc7a.96xlarge": Machine(192, 768, threads_per_core=1),
    "hpc7g.16xlarge": Machine(64, 128, threads_per_core=1),
    "m5.large": Machine(2, 8),
    "m5.xlarge": Machine(4, 16),
    "g5.xlarge": Machine(4, 16),
    "p4d.24xlarge": Machine(96, 1152),
    "p5.48xlarge": Machine(192, 2048),
    "c2d-standard-32": Machine(32, 128),
    "c2-standard-60": Machine(60, 240),
    "n2-standard-8": Machine(8, 32),
}


def _visible_vcpus(machine: Machine, threads_per_core: int | None) -> int:
    """The vCPUs a node shows: GKE's --threads-per-core=1 turns SMT off, halving them."""
    if threads_per_core == 1 and machine.threads_per_core > 1:
        return machine.vcpus // machine.threads_per_core
    return machine.vcpus


def worker_machine(cluster: ClusterSpec) -> Machine | None:
    """The smallest machine the workers may be (as a node shows it), or None when kary's
    catalog lacks one of their types."""
    names = set(cluster.node_selector.values())  # the worker group's, as pods select it
    group = next((g for g in cluster.node_groups if g.name in names), None)
    types = group.types if group is not None else (cluster.instance_type,)
    if any(name not in MACHINES for name in types):
        return None
    threads = cluster.raw.get("threadsPerCore", 1) if cluster.provider == "gke" else None
    shown = [
        Machine(_visible_vcpus(MACHINES[name], threads), MACHINES[name].memory_gib, 1)
        for name in types
    ]
    return min(shown, key=lambda m: (m.vcpus, m.memory_gib))


def pod_requests(
    cluster: ClusterSpec | None, ephemeral_bytes: int | None = None
) -> dict[str, str] | None:
    """The container's resources.requests for a pod of `cluster`'s workers, e.g.
    {"cpu": "12000m", "memory": "24576Mi", "ephemeral-storage": "2870Mi"} on c5a.4xlarge
    (`ephemeral_bytes`: what the pod writes, rounded up to MiB); None off a cluster
    file or for a type kary's catalog does not list (the pods then request nothing)."""
    machine = worker_machine(cluster) if cluster is not None else None
    if machine is None:
        return None
    cpu = math.floor(machine.vcpus * 1000 * POD_SHARE)
    memory = math.floor(machine.memory_gib * 1024 * POD_SHARE)
    requests = {"cpu": f"{cpu}m", "memory": f"{memory}Mi"}
    if ephemeral_bytes:
        requests["ephemeral-storage"] = f"{math.ceil(ephemeral_bytes / 2**20)}Mi"
    return requests
