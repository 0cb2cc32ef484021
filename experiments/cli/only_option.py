"""`--only`: the cell filter plan, run and parse share.

Its own module so that `kary parse` imports it without the sweep machinery
(experiments.model.sweep, its renderer and cluster specs) that `sweep_options` needs.
"""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["Only"]

Only = Annotated[
    list[str] | None,
    typer.Option(
        "--only",
        metavar="<key=value,...>",
        help="Keep only these cells, e.g. nodes=30,topo=kary:16 (keys: nodes, topo, "
        "chunksize, mmap, purge_target_size, iteration; a key twice takes either value).",
    ),
]
