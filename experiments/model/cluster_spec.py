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
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from experiments.errors import UserError
from experiments.files import read_document
from experiments.model.pins import OPERATOR_PIN_KEY, require_pinned

__all__ = [
    "CAPACITIES",
    "DEFAULT_DISK",
    "DISK_TYPES",
    "ON_DEMAND",
    "SPOT",
    "Capacity",
    "ClusterSpec",
    "Disk",
    "GkeSpec",
    "NodeGroup",
    "load_cluster_spec",
]

# Each worker's boot disk when the cluster file names none (GiB; GCE and EBS both
# count a disk's "GB" as 2**30 bytes).  GKE: `gcloud container clusters create
# --disk-size` "defaults to 100GB", pd-balanced since GKE 1.24 (GKE's "Configuring
# a custom boot disk").  EKS: eksctl's DefaultNodeVolumeSize = 80 and
# DefaultNodeVolumeType = gp3 (pkg/apis/eksctl.io/v1alpha5/types.go, v0.230).
DEFAULT_DISK = {"gke": (100, "pd-balanced"), "eks": (80, "gp3")}
# The boot disk types each provider takes for a node (gcloud --disk-type; eksctl volumeType).
GkeDiskType = Literal["pd-balanced", "pd-standard", "pd-ssd", "hyperdisk-balanced"]
DISK_TYPES: dict[str, tuple[str, ...]] = {
    "gke": get_args(GkeDiskType),
    "eks": ("gp3", "gp2", "io1", "io2", "st1", "sc1", "standard"),
}
# GCE's smallest boot disk (gcloud refuses --disk-size below 10GB); EBS's largest volume.
_MIN_DISK_GB, _MAX_DISK_GB = 10, 65536


class Disk(BaseModel):
    """Each worker's boot disk: size in GiB, type, and whether the file left it to the default."""

    gb: int
    type: str
    default: bool = False

    @property
    def bytes(self) -> int:
        return self.gb * 2**30

    @property
    def text(self) -> str:
        return f"{self.gb} GiB {self.type}" + (
            " (the provider's default size)" if self.default else ""
        )


# What a node group's instances run on: on-demand capacity, or spot (spare capacity at
# a discount, which the provider may take back: eksctl `spot: true`, gcloud `--spot`).
Capacity = Literal["on-demand", "spot"]
ON_DEMAND: Capacity = "on-demand"
SPOT: Capacity = "spot"
CAPACITIES: tuple[str, ...] = get_args(Capacity)


class NodeGroup(BaseModel):
    name: str
    # The group's first instance type: what the time model reads (its network speed).
    instance_type: str
    count: int
    # Each node's boot disk, priced with the node (None: the provider's default).
    disk: Disk | None = None
    capacity: Capacity = ON_DEMAND
    # Every type the group may launch (eksctl's instanceTypes); empty: instance_type alone.
    # The plan prices a group of several at the dearest of them.
    instance_types: tuple[str, ...] = ()
    # The zones its nodes may land in (empty: the cluster's zone).
    zones: tuple[str, ...] = ()
    # Whether each node has a public IPv4 address (billed by AWS since 2024-02-01): eksctl
    # puts a group in its public subnets unless `privateNetworking: true`; GKE nodes have
    # an external IP unless the cluster is private, which kary's GKE spec never makes.
    public_ip: bool = True

    @property
    def types(self) -> tuple[str, ...]:
        return self.instance_types or (self.instance_type,)


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
    # Each worker's boot disk: what kary's plan checks a sweep's disk against and prices.
    disk: Disk | None = None
    # The workers' capacity (the worker group's: on-demand or spot).
    capacity: Capacity = ON_DEMAND
    # NAT gateways the provider's tooling makes with the cluster (eksctl: one by default).
    nat_gateways: int = 0
    # The operator's controller image by digest (annotation kary/operator-image, model/pins.py).
    operator_image: str | None = None

    @property
    def spot(self) -> bool:
        """Whether any node group runs on spot capacity."""
        return any(group.capacity == SPOT for group in self.node_groups)

    @property
    def worker_disk(self) -> Disk:
        """The workers' disk: as the file sets it, else the provider's default."""
        return self.disk_of(self.disk)

    def disk_of(self, disk: Disk | None) -> Disk:
        """`disk` (a group's), else the provider's default."""
        if disk is not None:
            return disk
        gb, kind = DEFAULT_DISK[self.provider]
        return Disk(gb=gb, type=kind, default=True)


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
    # gcloud's --disk-size (GB) and --disk-type; unset, GKE's 100 GB pd-balanced.
    disk_size: StrictInt | None = Field(
        default=None, alias="diskSize", ge=_MIN_DISK_GB, le=_MAX_DISK_GB
    )
    disk_type: GkeDiskType | None = Field(default=None, alias="diskType")
    # The default pool on Spot VMs (gcloud's --spot).
    spot: bool = False
    # For kary, not gcloud (as eksctl ignores metadata.annotations): kary/operator-image.
    annotations: dict[str, str] = Field(default_factory=dict)

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
    managed = list(raw.get("managedNodeGroups") or [])
    groups = managed + list(raw.get("nodeGroups") or [])
    if not meta.get("name") or not meta.get("region") or not groups:
        raise UserError(
            f"{path}: an eksctl ClusterConfig needs metadata.name, metadata.region "
            "and at least one node group"
        )
    for index, group in enumerate(groups):
        _eks_group_fields(group, index < len(managed), index, path)

    # The worker group is the one with the most nodes; a system group may sit beside it.
    def size_of(group: dict[str, Any]) -> int:
        return int(group.get("desiredCapacity") or group.get("minSize") or 0)

    workers = max(groups, key=size_of)
    if not _eks_types(workers) or size_of(workers) < 1:
        raise UserError(
            f"{path}: node group {workers.get('name')!r} needs instanceType (or a managed "
            "group's instanceTypes) and a size"
        )
    zones = workers.get("availabilityZones") or raw.get("availabilityZones") or [None]
    node_groups = [
        NodeGroup(
            name=g.get("name", "?"),
            instance_type=_eks_types(g)[0],
            count=size_of(g),
            disk=_eks_disk(g, path),
            capacity=SPOT if g.get("spot") else ON_DEMAND,
            instance_types=tuple(_eks_types(g)) if g.get("instanceTypes") else (),
            zones=tuple(g.get("availabilityZones") or raw.get("availabilityZones") or ()),
            public_ip=not g.get("privateNetworking"),
        )
        for g in groups
        if _eks_types(g) and size_of(g) > 0
    ]
    return ClusterSpec(
        provider="eks",
        name=meta["name"],
        region=meta["region"],
        zone=zones[0],
        instance_type=_eks_types(workers)[0],
        nodes=size_of(workers),
        node_groups=node_groups,
        path=path,
        raw=raw,
        kubernetes_version=_minor(meta.get("version")),
        node_selector={EKS_NODEGROUP_LABEL: str(workers.get("name"))},
        tolerations=_tolerations(workers, path),
        disk=_eks_disk(workers, path),
        capacity=SPOT if workers.get("spot") else ON_DEMAND,
        nat_gateways=_eks_nat_gateways(raw, path),
        operator_image=_operator_pin(meta.get("annotations"), path),
    )


def _eks_types(group: dict[str, Any]) -> list[str]:
    """The instance types a group may launch: [instanceType] or its instanceTypes."""
    if group.get("instanceType"):
        return [str(group["instanceType"])]
    return [str(t) for t in group.get("instanceTypes") or []]


def _eks_group_fields(group: Any, managed: bool, index: int, path: Path) -> None:
    """What eksctl refuses of a node group's capacity fields, refused here in its words."""
    key = "managedNodeGroups" if managed else "nodeGroups"
    where = f"{path}: node group {group.get('name')!r}" if isinstance(group, dict) else str(path)
    if not isinstance(group, dict):
        raise UserError(f"{where}: {key}[{index}] is not a mapping")
    types = group.get("instanceTypes")
    if types is not None and (
        not isinstance(types, list) or not types or not all(isinstance(t, str) for t in types)
    ):
        raise UserError(f"{where}: instanceTypes must be a list of instance type names")
    if group.get("instanceType") and types:
        # eksctl's own check (pkg/apis/eksctl.io/v1alpha5/validation.go).
        raise UserError(
            f"{where}: only one of instanceType or instanceTypes can be specified ({key}[{index}])"
        )
    spot = group.get("spot")
    if spot is not None and not isinstance(spot, bool):
        raise UserError(f"{where}: spot must be true or false, not {spot!r}")
    if not managed and (spot or types):
        raise UserError(
            f"{where}: spot and instanceTypes are managed node group fields (eksctl's "
            "unmanaged nodeGroups take instancesDistribution, which kary does not price): "
            "move the group under managedNodeGroups"
        )


# eksctl's vpc.nat.gateway modes; Single is its default (pkg/apis/eksctl.io/v1alpha5/vpc.go,
# ClusterNATDefault, v0.230): one NAT gateway and its Elastic IP in the first zone's
# public subnet.  HighlyAvailable makes one per zone; an existing VPC gets none from eksctl.
_NAT_MODES = ("Single", "HighlyAvailable", "Disable")


def _eks_nat_gateways(raw: dict[str, Any], path: Path) -> int:
    """How many NAT gateways `eksctl create cluster` makes for this ClusterConfig."""
    vpc = raw.get("vpc") or {}
    if not isinstance(vpc, dict):
        raise UserError(f"{path}: vpc must be a mapping")
    if vpc.get("id") or vpc.get("subnets"):
        return 0  # eksctl uses the VPC it is given and makes no gateway in it
    mode = (vpc.get("nat") or {}).get("gateway") or "Single"
    if mode not in _NAT_MODES:
        raise UserError(f"{path}: vpc.nat.gateway {mode!r} is not one of {', '.join(_NAT_MODES)}")
    if mode == "Disable":
        return 0
    if mode == "Single":
        return 1
    # One per zone; eksctl's default zones are 3, or 2 in us-east-1 (its VPC docs).
    zones = raw.get("availabilityZones") or []
    return len(zones) or (2 if raw.get("metadata", {}).get("region") == "us-east-1" else 3)


def _eks_disk(group: dict[str, Any], path: Path) -> Disk | None:
    """The worker group's volumeSize (GiB) and volumeType as eksctl reads them; None when
    the file sets neither (eksctl's 80 GiB gp3 then)."""
    size, kind = group.get("volumeSize"), group.get("volumeType")
    where = f"{path}: node group {group.get('name')!r}"
    if size is not None and (
        isinstance(size, bool)
        or not isinstance(size, int)
        or not _MIN_DISK_GB <= size <= _MAX_DISK_GB
    ):
        raise UserError(
            f"{where}: volumeSize {size!r} is not a whole number of GiB from "
            f"{_MIN_DISK_GB} to {_MAX_DISK_GB}"
        )
    if kind is not None and kind not in DISK_TYPES["eks"]:
        raise UserError(
            f"{where}: volumeType {kind!r} is not one of {', '.join(DISK_TYPES['eks'])}"
        )
    if size is None and kind is None:
        return None
    default_gb, default_type = DEFAULT_DISK["eks"]
    return Disk(gb=size or default_gb, type=kind or default_type, default=size is None)


def _minor(version: Any) -> str | None:
    """`1.33`, `"1.33"` or GKE's `1.33.1-gke.1` -> `1.33`; None when there is none."""
    if version is None or version == "":
        return None
    if isinstance(version, float):  # unquoted YAML: 1.30 arrives as 1.3
        version = f"{version:.2f}"
    match = re.match(r"^\s*(\d+)\.(\d+)", str(version))
    return f"{match.group(1)}.{match.group(2)}" if match else str(version)


def _gke_disk(gke: GkeSpec) -> Disk | None:
    if gke.disk_size is None and gke.disk_type is None:
        return None
    default_gb, default_type = DEFAULT_DISK["gke"]
    return Disk(
        gb=gke.disk_size or default_gb,
        type=gke.disk_type or default_type,
        default=gke.disk_size is None,
    )


def _operator_pin(annotations: Any, path: Path) -> str | None:
    """The annotation naming the operator's image: absent, or pinned by digest."""
    ref = (annotations or {}).get(OPERATOR_PIN_KEY) if isinstance(annotations, dict) else None
    if ref is None:
        return None
    return require_pinned(str(ref), f"{path}: {OPERATOR_PIN_KEY}", "name it as repo@sha256:DIGEST")


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
                NodeGroup(
                    name="default-pool",
                    instance_type=gke.machine_type,
                    count=gke.num_nodes,
                    disk=_gke_disk(gke),
                    capacity=SPOT if gke.spot else ON_DEMAND,
                    zones=(gke.zone,),
                )
            ],
            path=path,
            raw=raw,
            kubernetes_version=_minor(gke.cluster_version),
            node_selector={GKE_NODEPOOL_LABEL: "default-pool"},
            disk=_gke_disk(gke),
            capacity=SPOT if gke.spot else ON_DEMAND,
            operator_image=_operator_pin(gke.annotations, path),
        )
    raise UserError(
        f"cluster file {path}: kind must be ClusterConfig (eksctl) or GKECluster, "
        f"got {raw.get('kind')!r}"
    )
