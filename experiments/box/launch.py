"""What the flux backend hands a box's init, and what it reads back (the box's files).

`box_spec` turns a layout and link settings into init's `box.json`;
`read_link_bytes` reads the `links.json` init leaves (bytes per node's link and
group uplink, and the `tc -s` statistics of each one's shaped qdiscs).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from experiments.box.init import BoxSpec
from experiments.box.layout import BOX_PREFIX_LENGTH, BoxLayout
from experiments.box.shaping import qdisc_commands
from experiments.initial_exit import EXIT_NAME
from experiments.model.links import LinkSettings

__all__ = ["box_spec", "built_qdiscs", "read_link_bytes"]


def box_spec(
    layout: BoxLayout,
    links: LinkSettings,
    folder: Path,
    flux: str,
    config: Path,
    entrypoint: Path,
    env: dict[str, str],
) -> BoxSpec:
    """init's instructions for one cell's box in `folder`."""
    ranks = range(layout.nodes)
    addresses = [layout.address(r) for r in ranks]

    def host(bandwidth: float | None) -> list[str]:
        # What a node sends: its host's queue (--link-queue), kept apart by whom it goes to.
        return qdisc_commands("DEV", bandwidth, links.latency, links.queue, addresses)

    def port(bandwidth: float | None) -> list[str]:
        # What a switch port sends on: one FIFO, as a switch's port buffer is.
        return qdisc_commands("DEV", bandwidth, links.latency, "fifo")

    return BoxSpec(
        folder=str(folder),
        flux=flux,
        nodes=layout.nodes,
        config=str(config),
        hosts=[layout.host(r) for r in ranks],
        addresses=addresses,
        prefix_length=BOX_PREFIX_LENGTH,
        node_qdiscs=[host(links.bandwidth_of(r)) for r in ranks],
        switch_qdiscs=[port(links.bandwidth_of(r)) for r in ranks],
        initial_program=["bash", str(entrypoint)],
        end_file=str(entrypoint.parent / EXIT_NAME),
        env=env,
        groups=[g for r in ranks if (g := links.group_of(r)) is not None],
        trunk_qdiscs=port(links.group_bandwidth) if links.group_size else [],
    )


def read_link_bytes(folder: Path) -> dict[str, Any] | None:
    """Bytes each rank (and group uplink) sent and received over its link, and its
    qdiscs' statistics ({rank: {...}}); None if unknown."""
    try:
        links = json.loads((folder / "links.json").read_text())
    except (OSError, ValueError):
        return None
    return links if isinstance(links, dict) else None


def built_qdiscs(links: dict[str, Any] | None) -> list[str]:
    """The shaping qdisc kinds `read_link_bytes`'s statistics list, e.g. ["htb"]."""
    return sorted(
        {
            str(qdisc.get("kind"))
            for link in (links or {}).values()
            for side in (link.get("qdiscs") or {}).values()
            for qdisc in side
        }
    )
