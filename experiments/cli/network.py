"""`kary network`: EC2 instance topology to graphs, Slurm and Kubernetes formats, TBON placement.

FILE everywhere is the JSON of `aws ec2 describe-instance-topology` or of `kary
network fetch` (the same shape). MAP (`--node-names`) names the nodes: a JSON
object {"i-...": "node-1"}, `kubectl get nodes -o json` output, or a text file
of `INSTANCE-ID NODE-NAME` lines; instances it does not name are left out.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from experiments.errors import UserError
from experiments.files import write_atomic
from experiments.model.topology import parse_topology
from experiments.network.export import EXPORT_FORMATS, export_topology
from experiments.network.fetch import dumps_topology, ec2_client, fetch_topology
from experiments.network.graph import switch_table, write_graph
from experiments.network.hostlist import compress_hostlist, expand_hostlist
from experiments.network.model import Instance, build_fabric, load_instances, parse_instances
from experiments.network.names import NamedInstances, load_node_names, name_instances
from experiments.network.placement import EdgeCounts, propose_order

app = typer.Typer(
    short_help="Physical network: fetch, graph, place TBONs.",
    help="Physical network topology: fetch, graph, export, and TBON placement.",
    no_args_is_help=True,
)

_NODE_NAMES_HELP = (
    "MAP of instance id to node name: JSON object, `kubectl get nodes -o json` output, "
    "or 'INSTANCE-ID NODE-NAME' lines. Unnamed instances are left out."
)


def _split(values: list[str]) -> list[str]:
    return [v for value in values for v in value.replace(",", " ").split()]


def _unplaced_notice(instances: list[Instance], names: dict[str, str] | None = None) -> str:
    unplaced = [i for i in instances if not i.network_nodes]
    shown = ", ".join(
        f"{(names or {}).get(i.instance_id, i.instance_id)} ({i.instance_type or '?'})"
        for i in unplaced[:5]
    )
    more = f" and {len(unplaced) - 5} more" if len(unplaced) > 5 else ""
    return (
        f"{len(unplaced)} instance(s) without network topology "
        f"(type not supported, or not running): {shown}{more}"
    )


def _named(path: Path, node_names: Path | None) -> NamedInstances:
    instances = load_instances(path)
    if not instances:
        raise UserError(f"{path} lists no instances")
    named = name_instances(instances, load_node_names(node_names) if node_names else None)
    if node_names is not None:
        if not named.instances:
            raise UserError(f"{node_names} names none of the {len(instances)} instances in {path}")
        if named.left_out:
            typer.echo(
                f"left out {len(named.left_out)} instance(s) not named in {node_names}", err=True
            )
    return named


@app.command("fetch", short_help="Fetch EC2 instance topology (boto3) to a file.")
def fetch(
    out: Path = typer.Option(..., "--out", help="JSON file to write (AWS CLI shape)."),
    region: str | None = typer.Option(
        None, "--region", help="AWS region (default: AWS_REGION or the AWS config)."
    ),
    instance_type: list[str] = typer.Option(
        [], "--instance-type", help="Only these types; wildcards like p4d* work. Repeatable."
    ),
    group: list[str] = typer.Option([], "--group", help="Only this placement group. Repeatable."),
    instance_ids: list[str] = typer.Option(
        [], "--instance-ids", help="Only these instances (comma or space separated). Repeatable."
    ),
    zone: list[str] = typer.Option(
        [], "--availability-zone", help="Only this Availability Zone. Repeatable."
    ),
) -> None:
    """Fetch EC2 instance topology with boto3 and write it as the AWS CLI prints it.

    Example:

    \b
        kary network fetch --region us-east-1 --group kary-cluster --out topology.json
    """
    client = ec2_client(region)
    topology = fetch_topology(
        client,
        instance_types=instance_type,
        groups=group,
        instance_ids=_split(instance_ids),
        zones=zone,
        region=region,
    )
    write_atomic(out, dumps_topology(topology))
    instances = parse_instances(topology, source="describe-instance-topology")
    placed = sum(1 for i in instances if i.network_nodes)
    typer.echo(f"wrote {len(instances)} instances ({placed} with network topology) to {out}")
    if placed < len(instances):
        typer.echo(_unplaced_notice(instances), err=True)


def format_switch_table(rows: list[dict[str, str | int]]) -> str:
    """The per-switch table as aligned text."""
    header = {"layer": "layer", "switch": "switch", "parent": "parent"}
    header |= {"switches": "switches", "instances": "instances"}
    shown = [header] + [{k: (v if v != "" else "-") for k, v in row.items()} for row in rows]
    widths = {k: max(len(str(r[k])) for r in shown) for k in header}
    lines = []
    for row in shown:
        cells = []
        for key in header:
            text = str(row[key])
            right = key in ("switches", "instances") and row is not shown[0]
            cells.append(text.rjust(widths[key]) if right else text.ljust(widths[key]))
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


@app.command("graph", short_help="Draw the switch tree (HTML and PNG).")
def graph(
    file: Path = typer.Argument(..., help="describe-instance-topology JSON."),
    out: Path = typer.Option(..., "--out", help="Folder for topology.html/.png, switches.csv."),
    node_names: Path | None = typer.Option(None, "--node-names", help=_NODE_NAMES_HELP),
    title: str = typer.Option("", "--title", help="Title of the page and the picture."),
) -> None:
    """Draw the switch tree (offline HTML page and PNG) and print instances per switch.

    Example:

    \b
        kary network graph examples/instance-topology.json --out network/
    """
    named = _named(file, node_names)
    names = named.names if node_names else None
    files = write_graph(named.instances, out, names=names, title=title)
    fabric = build_fabric(named.instances)
    typer.echo(format_switch_table(switch_table(fabric)), nl=False)
    if fabric.without_topology:
        typer.echo(_unplaced_notice(named.instances, names))
    typer.echo(f"wrote {files.html}, {files.png} and {files.table}")


@app.command("export", short_help="Write Slurm topology.conf or Kubernetes labels.")
def export(
    file: Path = typer.Argument(..., help="describe-instance-topology JSON."),
    fmt: str = typer.Option(
        ..., "--format", help=f"One of: {', '.join(EXPORT_FORMATS)}.", metavar="FORMAT"
    ),
    node_names: Path | None = typer.Option(None, "--node-names", help=_NODE_NAMES_HELP),
    out: Path | None = typer.Option(None, "--out", help="File to write (default: stdout)."),
) -> None:
    """Write Slurm topology.conf (tree or block) or Kubernetes node labels (script or YAML).

    Example:

    \b
        kary network export topology.json --format slurm-tree --node-names nodes.txt
        kary network export topology.json --format k8s-labels --node-names nodes.json
    """
    if fmt not in EXPORT_FORMATS:
        raise UserError(f"unknown export format {fmt!r}: choose one of {', '.join(EXPORT_FORMATS)}")
    named = _named(file, node_names)
    text = export_topology(named, fmt)
    unplaced = [i for i in named.instances if not i.network_nodes]
    if unplaced:
        typer.echo(_unplaced_notice(named.instances, named.names) + "; left out", err=True)
    if out is None:
        typer.echo(text, nl=False)
    else:
        write_atomic(out, text)
        typer.echo(f"wrote {fmt} for {len(named.instances) - len(unplaced)} nodes to {out}")


_ROW_LABELS = {"none": "no shared network node", "unknown": "unknown (no topology)"}


def _row_label(key: str, depth: int) -> str:
    if key in _ROW_LABELS:
        return _ROW_LABELS[key]
    layer = int(key.split("-")[1])
    return f"same layer-{layer} switch" if layer == depth else f"same layer-{layer} only"


def format_placement_counts(before: EdgeCounts, after: EdgeCounts) -> str:
    """Edges by shared layer, input order beside proposed order."""
    depth = sum(1 for k in before.by_shared if k.startswith("layer-"))
    rows = [
        (_row_label(k, depth), before.by_shared[k], after.by_shared[k]) for k in before.by_shared
    ]
    rows.append(("cross_l3 (not under one closest switch)", before.cross_l3, after.cross_l3))
    width = max(len(r[0]) for r in rows)
    lines = [f"{'TBON edges':<{width}}  {'input':>8}  {'proposed':>8}"]
    lines += [f"{label:<{width}}  {b:>8}  {a:>8}" for label, b, a in rows]
    return "\n".join(lines) + "\n"


def _input_order(named: NamedInstances, hostlist: Path | None, nodes: int | None) -> list[Instance]:
    instances = named.instances
    if hostlist is not None:
        try:
            wanted = expand_hostlist(hostlist.read_text(encoding="utf-8"))
        except OSError as err:
            raise UserError(f"cannot read {hostlist}: {err.strerror}") from None
        by_name = {named.name(i): i for i in instances}
        missing = [h for h in wanted if h not in by_name]
        if missing:
            raise UserError(
                f"{hostlist}: {len(missing)} host(s) not in the topology: "
                + compress_hostlist(missing[:20])
            )
        if len(set(wanted)) != len(wanted):
            raise UserError(f"{hostlist}: a host is listed twice")
        instances = [by_name[h] for h in wanted]
    if nodes is not None:
        if nodes < 1 or nodes > len(instances):
            raise UserError(f"--nodes {nodes}: there are {len(instances)} instances to place")
        instances = instances[:nodes]
    return instances


@app.command("map", short_help="Count TBON edges that cross switches.")
def map_ranks(
    file: Path = typer.Argument(..., help="describe-instance-topology JSON."),
    topo: str = typer.Option(..., "--topo", help="TBON: kary:K, binomial or mincrit[:K]."),
    nodes: int | None = typer.Option(
        None, "--nodes", help="Place only the first N instances of the input order."
    ),
    hostlist: Path | None = typer.Option(
        None,
        "--hostlist",
        help="Input rank order: hosts one per line or as node[1-8] (default: FILE's order).",
    ),
    node_names: Path | None = typer.Option(None, "--node-names", help=_NODE_NAMES_HELP),
    out: Path = typer.Option(
        Path("hostlist.txt"), "--out", help="Where to write the proposed order, one host a line."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Count TBON edges crossing switches in hostlist order, and propose a rank order.

    Rank r runs on the r-th host. An edge counts as cross_l3 when its two
    instances do not share their closest (last) network node.

    Example:

    \b
        kary network map examples/instance-topology.json --topo kary:2 --out hosts.txt
    """
    parse_topology(topo)
    named = _named(file, node_names)
    instances = _input_order(named, hostlist, nodes)
    placement = propose_order(instances, topo)
    hosts = [named.name(i) for i in placement.order]
    write_atomic(out, "".join(h + "\n" for h in hosts))
    before, after = placement.counts_before, placement.counts_after
    if as_json:
        report = {
            "topo": topo,
            "nodes": len(instances),
            "edges": before.edges,
            "order": [i.instance_id for i in placement.order],
            "hosts": hosts,
            "before": before.by_shared,
            "after": after.by_shared,
            "cross_l3_before": before.cross_l3,
            "cross_l3_after": after.cross_l3,
            "cross_l3": "edges whose two instances do not share their closest (last) network "
            "node; an instance without topology shares none",
            "strategy": placement.strategy,
            "hostlist": str(out),
        }
        typer.echo(json.dumps(report, indent=2))
        return
    placed = sum(1 for i in instances if i.network_nodes)
    typer.echo(
        f"{topo} over {len(instances)} instances ({placed} with network topology): "
        f"{before.edges} TBON edges"
    )
    typer.echo(format_placement_counts(before, after), nl=False)
    typer.echo(f"proposed order: {placement.strategy}")
    typer.echo(f"wrote the proposed order (rank 0 first, one host per line) to {out}")
