"""kary's analysis: raw experiment trees in, tidy tables, honest statistics and plots out.

Analysis reads files only; it never imports the runner or a backend.

Public surface (`parse` and `report` are what `kary parse` and `kary report` do):

- `parse(raw, out, plots=True) -> ParseResult`: the raw tree at `raw` into the
  parsed directory `out` (tables, plots, report.html); `.parsed` holds the
  tables as DataFrames, `.problems` what was skipped and why.
- `report(parsed_dirs, out) -> Path`: one self-contained HTML page over one or
  more parsed directories (the first is the baseline).
- `parse_tree(data_dir, out_dir, plots=True) -> ParseResult`: parse a raw tree
  (kary's own KARY-line logs and flux-distribute's logs) and write
  the parsed directory; `read_tree(data_dir)` does the same in memory.
- `load_parsed(parsed_dir) -> Parsed`: a parsed directory back as DataFrames
  (events, ping, runs, summary, overlays, meta); also reads flux-distribute's CSVs.
- `compare_parsed(before, after, factor, allow_mixed=False) -> Comparison` and
  `format_comparison(...)`: ratio of medians with an interval, asv-style marks;
  a UserError when the trees share no step or their steps ran in other settings
  (backend, place, links, blob kind, knobs), unless `allow_mixed` (rows labelled).
- `summarize(frame, keys)`: n, failed, median, q1, q3, min, max, median CI, cv.
- `topology_order_key(topo)`: kary:1, kary:2, ..., kary:16, binomial.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analysis.read.records import PingStep, Problem, Step
from analysis.tree import ParseResult, parse_tree, read_tree
from experiments.formats.events import event_sort_key, topology_order_key
from experiments.formats.parsed import PARSED_FORMAT

if TYPE_CHECKING:
    from analysis.compare import Comparison, compare_parsed, format_comparison
    from analysis.tables.parsed_dir import Parsed, load_parsed
    from analysis.tables.stats import median_ci_ranks, ratio_of_medians, summarize

# Names whose modules import pandas: loaded on first use, so that `kary parse`
# can start its workers before pandas is imported (see analysis.tree_slices).
_PANDAS_NAMES = {
    "Comparison": "analysis.compare",
    "compare_parsed": "analysis.compare",
    "format_comparison": "analysis.compare",
    "Parsed": "analysis.tables.parsed_dir",
    "load_parsed": "analysis.tables.parsed_dir",
    "median_ci_ranks": "analysis.tables.stats",
    "ratio_of_medians": "analysis.tables.stats",
    "summarize": "analysis.tables.stats",
}


def __getattr__(name: str) -> Any:
    if name not in _PANDAS_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_PANDAS_NAMES[name]), name)
    globals()[name] = value
    return value


__all__ = [
    "PARSED_FORMAT",
    "Comparison",
    "ParseResult",
    "Parsed",
    "PingStep",
    "Problem",
    "Step",
    "compare_parsed",
    "event_sort_key",
    "format_comparison",
    "load_parsed",
    "median_ci_ranks",
    "parse",
    "parse_tree",
    "ratio_of_medians",
    "read_tree",
    "report",
    "summarize",
    "topology_order_key",
]


def parse(
    raw: str | Path, out: str | Path, plots: bool = True, only: str | Sequence[str] | None = None
) -> ParseResult:
    """Parse the raw tree `raw` into `out`, as `kary parse --data RAW --out OUT` does.

    `only` ("nodes=30,topo=kary:16", as --only) keeps the cells it selects.
    """
    from experiments.model.cell_filter import parse_only

    return parse_tree(Path(raw), Path(out), plots=plots, only=parse_only(only))


def report(parsed_dirs: str | Path | Sequence[str | Path], out: str | Path) -> Path:
    """Write one HTML report over `parsed_dirs` (the first is the baseline) to `out`."""
    from analysis.page.builder import write_report  # jinja2 and the plots: only when asked

    dirs = [parsed_dirs] if isinstance(parsed_dirs, (str, Path)) else list(parsed_dirs)
    return write_report([Path(d) for d in dirs], Path(out))
