"""Read a cluster file: an eksctl ClusterConfig (EKS) or kary's small GKE spec.

Only what planning and rendering need: provider, name, where, instance type and
node count, and where the benchmark's pods go: a node selector naming the
worker group (so ranks never land on a system group) and a toleration for
each of its taints (so they may land on it at all).  The lifecycle (create,
delete, reap) lives in experiments/clusters/.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from experiments.errors import UserError
from experiments.files import read_document

__all__ = ["ClusterSpec", "GkeSpec", "NodeGroup", "load_cluster_spec"]


class NodeGroup(BaseModel):
    name: str
    instance_type: str
    count: int


class ClusterSpec(BaseModel):
    """The planning view of a cluster: `instance_type` and `nodes` are the workers'."""

    provider: Literal["eks", "gke"]
    name: str
    region: str
    zone: str | None = None
    instance_type: str
    nodes: int
    node_groups: list[NodeGroup]
    path: Path
    raw: dict[str, Any] = Field(default_factory=dict, repr=False)
    # major.minor as the cluster file asks for it (None: the provider's default), for the
    # control plane's price: versions past standard support bill more (clusters/prices.yaml).
    kubernetes_version: str | None = None
    # The MiniCluster's spec.pod.nodeSelector and spec.pod.tolerations for the workers.
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: list[dict[str, str]] = Field(default_factory=list)


class GkeSpec(BaseModel):
    """clusters/gke-*.yaml: turned into `gcloud container clusters create`."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["GKECluster"] = "GKECluster"
    name: str
    project: str | None = None
    zone: str
    machine_type: str = Field(alias="machineType")
    num_nodes: int = Field(alias="numNodes", ge=1)
    placement: Literal["COMPACT", "NONE"] = "COMPACT"
    threads_per_core: int | None = Field(default=1, alias="threadsPerCore")
    gvnic: bool = True
    network: str | None = None
    cluster_version: str | None = Field(default=None, alias="clusterVersion")
    labels: dict[str, str] = Field(default_factory=dict)

    @property
    def region(self) -> str:
        return self.zone.rsplit("-", 1)[0]


def _first_error(err: ValidationError) -> str:
    first = err.errors()[0]
    return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"


# The label eksctl puts on every node of a node group, managed or not (its own
# `drain` selects a group's nodes by it), and GKE's node-pool label.
EKS_NODEGROUP_LABEL = "alpha.eksctl.io/nodegroup-name"
GKE_NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"
# Kubernetes' taint effects, by how eksctl files may spell them (NoSchedule, NO_SCHEDULE).
_EFFECTS = {e.lower(): e for e in ("NoSchedule", "PreferNoSchedule", "NoExecute")}


def _tolerations(group: dict[str, Any], path: Path) -> list[dict[str, str]]:
    """A toleration per taint of an eksctl node group: `taints` as a list of
    {key, value, effect} or, in older files, a map of key: "value:effect"."""
    raw = group.get("taints") or []
    taints = (
        [{"key": k, "value": str(v).partition(":")[0], "effect": str(v).partition(":")[2]}
         for k, v in raw.items()]
        if isinstance(raw, dict)
        else raw
    )  # fmt: skip
    tolerations = []
    for taint in taints:
        if not isinstance(taint, dict) or not taint.get("key"):
            raise UserError(f"{path}: node group {group.get('name')!r}: a taint needs a key")
        effect = _EFFECTS.get(str(taint.get("effect", "")).replace("_", "").lower())
        if effect is None:
            raise UserError(
                f"{path}: node group {group.get('name')!r}: taint {taint['key']!r} has effect "
                f"{taint.get('effect')!r}, not one of {', '.join(_EFFECTS.values())}"
            )
        value = taint.get("value")
        toleration = {"key": str(taint["key"]), "operator": "Equal" if value else "Exists"}
        if value:
            toleration["value"] = str(value)
        tolerations.append(toleration | {"effect": effect})
    return tolerations


def _eks_spec(raw: dict[str, Any], path: Path) -> ClusterSpec:
    meta = raw.get("metadata") or {}
    groups = list(raw.get("managedNodeGroups") or []) + list(raw.get("nodeGroups") or [])
    if not meta.get("name") or not meta.get("region") or not groups:
        raise UserError(
            f"{path}: an eksctl ClusterConfig needs metadata.name, metadata.region "
            "and at least one node group"
        )

    # The worker group is the one with the most nodes; a system group may sit beside it.
    def size_of(group: dict[str, Any]) -> int:
        return int(group.get("desiredCapacity") or group.get("minSize") or 0)

    workers = max(groups, key=size_of)
    if not workers.get("instanceType") or size_of(workers) < 1:
        raise UserError(f"{path}: node group {workers.get('name')!r} needs instanceType and a size")
    zones = workers.get("availabilityZones") or raw.get("availabilityZones") or [None]
    return ClusterSpec(
        provider="eks",
        name=meta["name"],
        region=meta["region"],
        zone=zones[0],
        instance_type=workers["instanceType"],
        nodes=size_of(workers),
        node_groups=[
            NodeGroup(name=g.get("name", "?"), instance_type=g["instanceType"], count=size_of(g))
            for g in groups
            if g.get("instanceType") and size_of(g) > 0
        ],
        path=path,
        raw=raw,
        kubernetes_version=_minor(meta.get("version")),
        node_selector={EKS_NODEGROUP_LABEL: str(workers.get("name"))},
        tolerations=_tolerations(workers, path),
    )


def _minor(version: Any) -> str | None:
    """`1.33`, `"1.33"` or GKE's `1.33.1-gke.1` -> `1.33`; None when there is none."""
    if version is None or version == "":
        return None
    if isinstance(version, float):  # unquoted YAML: 1.30 arrives as 1.3
        version = f"{version:.2f}"
    match = re.match(r"^\s*(\d+)\.(\d+)", str(version))
    return f"{match.group(1)}.{match.group(2)}" if match else str(version)


def load_cluster_spec(path: Path) -> ClusterSpec:
    """Load and validate a cluster file; any problem is one UserError line."""
    path = Path(path)
    raw = read_document(path, "cluster file", "yaml")
    if not isinstance(raw, dict):
        raise UserError(f"cluster file {path}: expected a YAML mapping")
    if raw.get("kind") == "ClusterConfig":
        return _eks_spec(raw, path)
    if raw.get("kind") == "GKECluster":
        try:
            gke = GkeSpec.model_validate(raw)
        except ValidationError as err:
            raise UserError(f"cluster file {path}: {_first_error(err)}") from None
        return ClusterSpec(
            provider="gke",
            name=gke.name,
            region=gke.region,
            zone=gke.zone,
            instance_type=gke.machine_type,
            nodes=gke.num_nodes,
            node_groups=[
                NodeGroup(name="default-pool", instance_type=gke.machine_type, count=gke.num_nodes)
            ],
            path=path,
            raw=raw,
            kubernetes_version=_minor(gke.cluster_version),
            node_selector={GKE_NODEPOOL_LABEL: "default-pool"},
        )
    raise UserError(
        f"cluster file {path}: kind must be ClusterConfig (eksctl) or GKECluster, "
        f"got {raw.get('kind')!r}"
    )
