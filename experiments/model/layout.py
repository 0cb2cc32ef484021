"""Which layout a sweep's cells run in: an outer instance per cell, or per node count.

`per-cell`: each cell gets its own Flux instance (a MiniCluster on a cluster, a
`flux start --test-size` here), as flux-distribute's sweeps ran.  `nested`: one outer
instance per node count (a MiniCluster, or a test instance standing in for
one), and every cell of that node count a nested instance inside it, so the
per-cell pod start and teardown are paid once per node count.  Kubernetes
defaults to nested; `--layout per-cell` runs as flux-distribute did, to compare with
old data.  Elsewhere the default is per-cell.
"""

from __future__ import annotations

from experiments.errors import UserError
from experiments.formats.run_record import BOX, LAYOUTS, NESTED, PER_CELL

__all__ = ["check_layout", "effective_layout"]

NESTING_BACKENDS = ("flux", "kubernetes")


def check_layout(layout: str | None, backend: str, place: str | None) -> None:
    """A one-line UserError for a layout that does not exist or cannot run there."""
    if layout is None:
        return
    if layout not in LAYOUTS:
        raise UserError(f"unknown --layout {layout!r}: choose from {', '.join(LAYOUTS)}")
    if layout != NESTED:
        return
    if backend not in NESTING_BACKENDS:
        raise UserError(
            "--layout nested runs cells as nested Flux instances: flux or kubernetes "
            f"backend, not {backend}"
        )
    if place == BOX:
        raise UserError(
            "--layout nested is not built for the box: use --place test-instance, "
            "or --layout per-cell"
        )


def effective_layout(layout: str | None, backend: str) -> str:
    """The layout cells run in: as asked; else nested on Kubernetes (a MiniCluster per
    node count costs less, see estimate/layouts.py) and per-cell elsewhere."""
    if layout is not None:
        return layout
    return NESTED if backend == "kubernetes" else PER_CELL
