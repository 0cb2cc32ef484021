"""The Flux knob columns of the parsed tables: which of them vary, and how a setting reads.

A knob column holds the label a cell set (`256K`, `on`) or "" where Flux's
default ran (experiments.formats.cell_layout).  Plots and the report compare
settings only where a knob takes more than one value, and name a setting by
those knobs alone, so a tree without knobs reads exactly as before.
"""

from __future__ import annotations

import pandas as pd

from experiments.formats.cell_layout import knob_label_order
from experiments.formats.parsed import KNOB_COLUMNS

__all__ = ["knob_value_text", "setting_labels", "setting_order_key", "varying_knobs"]


def varying_knobs(frame: pd.DataFrame) -> list[str]:
    """The knob columns with more than one value in `frame`, in KNOB_COLUMNS order."""
    return [k for k in KNOB_COLUMNS if k in frame.columns and frame[k].astype(str).nunique() > 1]


def knob_value_text(label: object) -> str:
    """A knob column's value for people: the label, or `default` where Flux's default ran."""
    return str(label) if str(label) else "default"


def setting_labels(frame: pd.DataFrame, knobs: list[str]) -> list[str]:
    """Per row, `chunksize 256K, mmap on` over `knobs`; "" for every row when there are none."""
    if not knobs:
        return [""] * len(frame)
    columns = zip(*(frame[k].astype(str) for k in knobs), strict=True)
    return [
        ", ".join(
            f"{k.replace('_', '-')} {knob_value_text(v)}"
            for k, v in zip(knobs, values, strict=True)
        )
        for values in columns
    ]


def setting_order_key(frame: pd.DataFrame, knobs: list[str]) -> list[tuple[tuple[int, int], ...]]:
    """Per row, a key that orders its setting as `knob_label_order` orders each knob."""
    if not knobs:
        return [()] * len(frame)
    columns = zip(*(frame[k].astype(str) for k in knobs), strict=True)
    return [tuple(knob_label_order(v) for v in values) for values in columns]
