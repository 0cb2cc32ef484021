"""The Flux knob columns of the parsed tables: which of them vary, and how a setting reads.

A knob column holds the label a cell set (`256K`, `on`) or "" where Flux's
default ran (experiments.formats.cell_layout).  Plots and the report compare
settings only where a knob takes more than one value, and name a setting by
those knobs alone, so a tree without knobs reads exactly as before.

`cpu_bound` (`yes` where a box cell's brokers shared too few cores for its
links) is named beside the knobs, as `CPU-bound`, wherever a cell was: such a
timing measures the machine as much as the network, and a reader must see it
on the design it belongs to, not only in the provenance.
"""

from __future__ import annotations

import pandas as pd

from experiments.formats.cell_layout import knob_label_order
from experiments.formats.parsed import KNOB_COLUMNS

__all__ = [
    "CPU_BOUND",
    "design_axes",
    "knob_value_text",
    "setting_labels",
    "setting_order_key",
    "varying_knobs",
]

CPU_BOUND = "cpu_bound"


def varying_knobs(frame: pd.DataFrame) -> list[str]:
    """The knob columns with more than one value in `frame`, in KNOB_COLUMNS order."""
    return [k for k in KNOB_COLUMNS if k in frame.columns and frame[k].astype(str).nunique() > 1]


def design_axes(frame: pd.DataFrame) -> list[str]:
    """What names a design beside its topology: the knobs that vary, then `cpu_bound`
    where any cell of `frame` was CPU-bound."""
    bound = CPU_BOUND in frame.columns and bool((frame[CPU_BOUND].astype(str) == "yes").any())
    return varying_knobs(frame) + ([CPU_BOUND] if bound else [])


def knob_value_text(label: object) -> str:
    """A knob column's value for people: the label, or `default` where Flux's default ran."""
    return str(label) if str(label) else "default"


def _axis_text(axis: str, value: str) -> str:
    if axis == CPU_BOUND:
        return "CPU-bound" if value == "yes" else ""
    return f"{axis.replace('_', '-')} {knob_value_text(value)}"


def setting_labels(frame: pd.DataFrame, knobs: list[str]) -> list[str]:
    """Per row, `chunksize 256K, mmap on` (and `CPU-bound`) over `knobs`; "" for every row
    when there are none."""
    if not knobs:
        return [""] * len(frame)
    columns = zip(*(frame[k].astype(str) for k in knobs), strict=True)
    return [
        ", ".join(text for k, v in zip(knobs, values, strict=True) if (text := _axis_text(k, v)))
        for values in columns
    ]


def setting_order_key(frame: pd.DataFrame, knobs: list[str]) -> list[tuple[tuple[int, int], ...]]:
    """Per row, a key that orders its setting as `knob_label_order` orders each knob (a
    CPU-bound cell after the others)."""
    if not knobs:
        return [()] * len(frame)
    columns = zip(*(frame[k].astype(str) for k in knobs), strict=True)
    return [
        tuple(
            (int(v == "yes"), 0) if k == CPU_BOUND else knob_label_order(v)
            for k, v in zip(knobs, values, strict=True)
        )
        for values in columns
    ]
