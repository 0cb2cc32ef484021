"""`--only`: the cell filter plan, run and parse share.

Its own module so that `kary parse` imports it without the sweep machinery
(experiments.model.sweep, its renderer and cluster specs) that `sweep_options` needs.
"""

from __future__ import annotations

from typing import Annotated

import typer

from experiments.model.cell_filter import FILTER_KEYS

__all__ = ["Only"]

Only = Annotated[
    list[str] | None,
    typer.Option(
        "--only",
        metavar="<key=value,...>",
        help="Keep only these cells, e.g. nodes=30,topo=kary:16 (keys: "
        f"{', '.join(FILTER_KEYS)}; a key twice takes either value).",
    ),
]
