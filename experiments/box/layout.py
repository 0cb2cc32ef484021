"""A box's names and addresses, and the config file its brokers bootstrap from (pure).

Every name carries the prefix `kary-box-` and the run id, `<pid>-<hex>`: the
pid of the kary process that owns the box (so `reap` can tell a dead run's
leftovers from a live one's) and a random tag (so two boxes of one process
never share a name).

Addresses come from 198.18.0.0/15, the range RFC 2544 sets aside for
benchmarking networks: nothing outside a box ever uses it, and a box's
namespaces have no route anywhere else (no default route, no uplink), so a
broker can reach only the other brokers of its own box.

The broker config is what the Flux Operator's pods bootstrap from too: a
`[bootstrap]` table with the CURVE certificate and one host entry per rank
(bind and connect on the rank's own address), and `[tbon] topo`.  Each broker
finds its rank by its hostname (`-Shostname=...`), as a pod does by its name.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from dataclasses import dataclass

__all__ = [
    "BOX_PREFIX",
    "BOX_PREFIX_LENGTH",
    "BoxLayout",
    "new_run_id",
    "owner_of",
]

BOX_PREFIX = "kary-box-"
BOX_PREFIX_LENGTH = 16  # the prefix length of 198.18.0.0/16, the part of /15 a box uses
TBON_PORT = 8050  # the Flux Operator's port for the TBON
_RUN_ID = re.compile(r"^(?P<pid>[0-9]+)-(?P<tag>[0-9a-f]{6})$")
_OWNED_NAME = re.compile(rf"^{BOX_PREFIX}(?P<pid>[0-9]+)-[0-9a-f]{{6}}(?![0-9a-f])")
# 198.18.0.0/16 holds 65,534 hosts; the first address is never a rank's.
_MAX_NODES = 65_533


def new_run_id(pid: int | None = None) -> str:
    """A fresh run id for a box owned by process `pid` (default: this one)."""
    return f"{os.getpid() if pid is None else pid}-{secrets.token_hex(3)}"


def owner_of(name: str) -> int | None:
    """The owning pid in a `kary-box-<pid>-<hex>...` name; None if it is not one."""
    match = _OWNED_NAME.match(name)
    return int(match.group("pid")) if match else None


@dataclass(frozen=True)
class BoxLayout:
    """Who is where in one box: rank -> host name and address; the broker config."""

    run_id: str
    nodes: int
    topo: str
    host_prefix: str = "flux-sample"

    def __post_init__(self) -> None:
        if not _RUN_ID.match(self.run_id):
            raise ValueError(f"invalid box run id {self.run_id!r}")
        if not 1 <= self.nodes <= _MAX_NODES:
            raise ValueError(f"a box holds 1 to {_MAX_NODES} nodes, not {self.nodes}")

    @property
    def name(self) -> str:
        """The box's name: its scratch folder's, and what `reap` looks for."""
        return f"{BOX_PREFIX}{self.run_id}"

    def host(self, rank: int) -> str:
        """Rank's host name, as the operator names pods: `<minicluster>-<index>`."""
        return f"{self.host_prefix}-{rank}"

    def address(self, rank: int) -> str:
        """Rank's IPv4 address in 198.18.0.0/16 (198.18.0.1 is rank 0)."""
        number = rank + 1
        return f"198.18.{number >> 8}.{number & 0xFF}"

    def endpoint(self, rank: int) -> str:
        return f"tcp://{self.address(rank)}:{TBON_PORT}"

    def address_plan(self) -> dict[str, object]:
        """For run.json: the network every rank was on, by rank."""
        return {
            "network": f"198.18.0.0/{BOX_PREFIX_LENGTH}",
            "route_out": None,
            "port": TBON_PORT,
            "ranks": {
                str(r): {"host": self.host(r), "address": self.address(r)}
                for r in range(self.nodes)
            },
        }

    def broker_config(self, curve_cert: str) -> str:
        """The TOML every broker of the box reads (`flux broker --config-path=`)."""
        hosts = ",\n".join(
            f"  {{ host = {_toml(self.host(r))}, bind = {_toml(self.endpoint(r))}, "
            f"connect = {_toml(self.endpoint(r))} }}"
            for r in range(self.nodes)
        )
        return (
            "# Written by kary for one box; every broker of the box reads it.\n"
            "[bootstrap]\n"
            f"curve_cert = {_toml(curve_cert)}\n"
            f"hosts = [\n{hosts},\n]\n\n"
            "[tbon]\n"
            f"topo = {_toml(self.topo)}\n\n"
            "# The content store a Flux Operator pod's kept statedir gets; a temporary\n"
            "# statedir would make it OFF/OFF (flux-core content-sqlite.c).\n"
            "[content-sqlite]\n"
            'journal_mode = "WAL"\n'
            'synchronous = "NORMAL"\n'
        )


def _toml(text: str) -> str:
    # A TOML basic string takes JSON's escapes for every character kary writes.
    return json.dumps(text)
