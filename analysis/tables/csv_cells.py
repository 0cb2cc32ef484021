"""CSV cells as pandas' `to_csv` writes them, from plain Python values (no pandas here).

The one writer of kary's CSV text: `analysis.tables.csv_text` uses it for DataFrames
and forked parse workers for their rows before pandas is imported
(`analysis.tables.rows`).  Quoting is the csv module's QUOTE_MINIMAL.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import isnan

__all__ = [
    "float_cells",
    "int_cells",
    "join_rows",
    "kind_cells",
    "quoted",
    "table_text",
    "text_cells",
]

_QUOTED = (",", '"', "\n")


def float_cells(values: Sequence[object]) -> list[str]:
    """A float64 column: the shortest text that reads back as the same float (repr, as
    numpy's), "" where missing (None or NaN)."""
    if set(map(type, values)) <= _FLOAT and not any(map(isnan, values)):  # type: ignore[arg-type]
        return list(map(repr, values))  # every value a float: no Python call per value
    return ["" if v is None or v != v else repr(float(v)) for v in values]  # type: ignore[arg-type]


_FLOAT = {float}


def int_cells(values: Sequence[object]) -> list[str]:
    """An integer (or bool) column."""
    return list(map(str, values))


def text_cells(values: Sequence[object]) -> list[str] | None:
    """A text column, "" where missing (None); None when pandas must write it (see quoted)."""
    try:
        return quoted(values)  # type: ignore[arg-type]
    except TypeError:  # not all str: join refused a value
        texts = ["" if v is None else v if type(v) is str else str(v) for v in values]
        return quoted(texts)


def quoted(values: list[str]) -> list[str] | None:
    """Quoted as the csv module quotes (QUOTE_MINIMAL); None for a carriage return,
    which Python versions quote differently."""
    joined = "\x00".join(values)
    if "\r" in joined:
        return None
    if not any(mark in joined for mark in _QUOTED):
        return values
    return [_quote(v) if any(mark in v for mark in _QUOTED) else v for v in values]


def kind_cells(kind: str, values: list[object]) -> list[str] | None:
    """A column by its kind, as pandas types and writes it: "int" (int64, or bool),
    "float" (float64, "" where missing), "Int64" (nullable integers), "number"
    (int64 when every value is whole, else float64), anything else text."""
    if kind == "int":
        return int_cells(values)
    if kind == "float":
        return float_cells(values)
    if kind == "Int64":
        return ["" if v is None else str(v) for v in values]
    if kind == "number":
        whole = all(type(v) is int for v in values)
        return int_cells(values) if whole else float_cells(values)
    return text_cells(values)


def join_rows(columns: Sequence[list[str] | None]) -> str | None:
    """The rows of these cell columns, one line each; None if any column is None."""
    if any(column is None for column in columns):
        return None
    return "\n".join(map(",".join, zip(*columns, strict=True))) + "\n"


def table_text(header: list[str] | None, columns: Sequence[list[str] | None]) -> str | None:
    """A whole table: the header line, then one line per row (none for no rows); None if
    the header or any column is None."""
    if header is None:
        return None
    if not columns or not columns[0]:
        return ",".join(header) + "\n"
    rows = join_rows(columns)
    return None if rows is None else ",".join(header) + "\n" + rows


def _quote(value: str) -> str:
    return '"' + value.replace('"', '""') + '"'
