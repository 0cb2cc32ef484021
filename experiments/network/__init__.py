"""Physical network topology: EC2 instance topology to graphs, Slurm, Kubernetes and TBON placement.

Needs no cluster and no backend: it reads the JSON of `aws ec2
describe-instance-topology` (or fetches it with boto3) and imports only
`experiments.model.topology`, `experiments.errors` and `experiments.files`.

- `model`: load the JSON, link network nodes into the switch tree (`build_fabric`).
- `fetch`: boto3 paginator over describe_instance_topology, batching ids.
- `names`: the `--node-names` MAP (instance id -> node name).
- `hostlist`: Slurm/Flux hostlist compression and expansion.
- `export`: topology.conf (tree, block) and Kubernetes node labels.
- `graph`: HTML page, PNG and per-switch table.
- `placement`: TBON edges by shared switch layer, and a rank order that cuts fewer.
"""

from __future__ import annotations

from experiments.network.export import EXPORT_FORMATS, export_topology
from experiments.network.fetch import dumps_topology, ec2_client, fetch_topology
from experiments.network.graph import switch_table, write_graph
from experiments.network.hostlist import compress_hostlist, expand_hostlist
from experiments.network.model import Fabric, Instance, build_fabric, load_instances
from experiments.network.names import load_node_names, name_instances
from experiments.network.placement import EdgeCounts, Placement, count_edges, propose_order

__all__ = [
    "EXPORT_FORMATS",
    "EdgeCounts",
    "Fabric",
    "Instance",
    "Placement",
    "build_fabric",
    "compress_hostlist",
    "count_edges",
    "dumps_topology",
    "ec2_client",
    "expand_hostlist",
    "export_topology",
    "fetch_topology",
    "load_instances",
    "load_node_names",
    "name_instances",
    "propose_order",
    "switch_table",
    "write_graph",
]
