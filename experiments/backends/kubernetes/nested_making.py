"""How the nested layout's group is made, and fed its next cells when a race holds it.

`new_group` renders the MiniCluster of a node count's cells (model/render_nested)
named and labelled as every MiniCluster kary makes (so reap_leftovers finds it),
with a feed when the layout is held; `create_group` creates its feed ConfigMap
(feed.py) and then the MiniCluster; `feed_group` hands a held group's driver its
next batch of cells.  nested.py decides when each happens.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING

from experiments.backends.base import QueuedCell
from experiments.backends.kubernetes.context import ClusterContext
from experiments.backends.kubernetes.feed import create_feed, delete_feed, feed_name, update_feed
from experiments.backends.kubernetes.minicluster import (
    NotOurs,
    build_manifest,
    create_minicluster,
)
from experiments.backends.kubernetes.nested_group import Group, limit_seconds, queued_log_bytes
from experiments.backends.kubernetes.pod_watch import PodWatch
from experiments.formats.nested_bundle import feed_text
from experiments.formats.nested_frame import driver_began
from experiments.model.render_nested import Feed, NestedCell, render_batch, render_nested

if TYPE_CHECKING:
    from experiments.model.render import Rendered

__all__ = ["create_group", "feed_group", "nested_cell", "new_group"]


def nested_cell(queued: QueuedCell, limit: float) -> NestedCell:
    """A queued cell as the driver runs it (`limit`: when the cell has none of its own)."""
    cell = queued.cell
    return NestedCell(
        cell.id,
        cell.topo,
        limit_seconds(queued, limit),
        queued.rendered.entrypoint_sh,
        # Blobs land on rank 0's disk only when the cell distributes them.
        cell.sizes if cell.experiment == "distribute" else (),
        cell.blob,
    )


def new_group(
    cluster: ClusterContext,
    cells: list[QueuedCell],
    rendered: Rendered,
    limit: float,
    held: bool,
) -> Group:
    """The group that runs `cells` (one node count's, the first rendered as `rendered`),
    not yet created; `held`: with a feed for the cells to come."""
    first = cells[0].cell
    base = build_manifest(rendered.minicluster_yaml, first.id, cluster.namespace, cluster.labels)
    name = cluster.name_cell(f"{base['metadata']['name']}-n{first.nodes}")
    feed = Feed(feed_name(name)) if held else None
    manifest = render_nested(
        base,
        first.nodes,
        [nested_cell(q, limit) for q in cells],
        eviction_free_percent=cluster.eviction_percent,
        feed=feed,
    )
    manifest.body["metadata"]["name"] = name
    size = int(manifest.body["spec"]["size"])
    return Group(
        name,
        first.nodes,
        manifest,
        PodWatch(
            cluster.api,
            cluster.namespace,
            name,
            size,
            cluster.limits,
            nodes=cluster.nodes,
            began=driver_began,
        ),
        datetime.now(timezone.utc).isoformat(timespec="seconds"),
        feed=feed.name if feed is not None else None,
        log_bytes=queued_log_bytes(cells),
    )


def create_group(cluster: ClusterContext, group: Group) -> None:
    """Create the group's feed (empty: batch 0), then its MiniCluster, whose pods mount
    the feed.  NotOurs when a MiniCluster of its name is someone else's (then the feed,
    ours, is deleted again)."""
    if group.feed is not None:
        create_feed(cluster.api, cluster.namespace, group.feed, feed_text(0), cluster.labels)
    try:
        body = group.manifest.body
        create_minicluster(cluster.api, cluster.namespace, group.name, body, cluster.teardown)
    except NotOurs:
        if group.feed is not None:
            delete_feed(cluster.api, cluster.namespace, group.feed)
        raise


def feed_group(
    cluster: ClusterContext, group: Group, cells: list[QueuedCell], limit: float
) -> None:
    """Hand the held group's driver `cells` as its next batch, and count them in."""
    assert group.feed is not None, "only a held group has a feed"
    batch = group.batches + 1
    text = render_batch([nested_cell(q, limit) for q in cells], batch)
    update_feed(cluster.api, cluster.namespace, group.feed, text, cluster.labels)
    group.batches = batch
    group.fed += [q.cell.id for q in cells]
    group.log_bytes += queued_log_bytes(cells)
