"""`--only nodes=30,topo=kary:16`: pick cells of a sweep or of a raw tree without editing either.

KEY=VALUE pairs, comma-separated (or one per --only).  Different keys must
all hold; a key given twice takes either value (`nodes=4,nodes=6`).  Keys are
the axes and the iteration: nodes, topo, blob, chunksize, mmap, purge_target_size
(or purge-target-size), iteration.  A knob's value `default` picks the cells
that leave it at Flux's default.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from experiments.errors import UserError
from experiments.formats.blobs import DEFAULT_BLOB
from experiments.formats.cell_layout import Knobs
from experiments.model.axes import AXES, KNOB_NAMES, axis_value

__all__ = ["FILTER_KEYS", "CellFilter", "parse_only"]

FILTER_KEYS = (*AXES, "iteration")
_MMAP = {"on": True, "true": True, "yes": True, "off": False, "false": False, "no": False}


@dataclass(frozen=True)
class CellFilter:
    """Per key, the values a cell may have; `text` is the filter as given."""

    wanted: dict[str, frozenset[Any]]
    text: str

    def matches(
        self, nodes: int, topo: str, iteration: int, knobs: Knobs, blob: str = DEFAULT_BLOB
    ) -> bool:
        have = {
            "nodes": nodes,
            "topo": topo,
            "iteration": iteration,
            "blob": blob,
            **knobs.values(),
        }
        return all(have[key] in values for key, values in self.wanted.items())


def parse_only(texts: str | Sequence[str] | None) -> CellFilter | None:
    """`nodes=30,topo=kary:16` (or a list of such) -> CellFilter; None when nothing is given."""
    if texts is None:
        return None
    given = [texts] if isinstance(texts, str) else list(texts)
    pairs = [p.strip() for text in given for p in text.split(",") if p.strip()]
    if not pairs:
        return None
    wanted: dict[str, set[Any]] = {}
    for pair in pairs:
        key, eq, raw = (part.strip() for part in pair.partition("="))
        if not eq or not key or not raw:
            raise UserError(
                f"invalid --only {pair!r}: expected KEY=VALUE, e.g. --only nodes=30,topo=kary:16"
            )
        key = key.replace("-", "_")
        if key not in FILTER_KEYS:
            raise UserError(f"invalid --only key {key!r}: choose from {', '.join(FILTER_KEYS)}")
        wanted.setdefault(key, set()).add(_value(key, raw))
    text = ",".join(pairs)
    return CellFilter({k: frozenset(v) for k, v in wanted.items()}, text)


def _value(key: str, raw: str) -> Any:
    """A filter value as cells hold it: sizes in bytes, topologies canonical, None for default."""
    try:
        if key in ("nodes", "iteration"):
            if not raw.isdigit():
                raise UserError("must be a whole number")
            return axis_value("nodes", int(raw)) if key == "nodes" else int(raw)
        if key in KNOB_NAMES and raw == "default":
            return None
        if key == "mmap":
            if raw.lower() not in _MMAP:
                raise UserError("must be on, off or default")
            return _MMAP[raw.lower()]
        return axis_value(key, raw)
    except UserError as err:
        raise UserError(f"invalid --only {key}={raw}: {err}") from None
