"""kary's analysis: raw experiment trees in, tidy tables, honest statistics and plots out.

Analysis reads files only; it never imports the runner or a backend.

Public surface:

- `parse_tree(data_dir, out_dir, plots=True) -> ParseResult`: parse a raw tree
  (kary's own KARY-line logs and the seed's flux-distribute logs) and write
  the parsed directory; `read_tree(data_dir)` does the same in memory.
- `load_parsed(parsed_dir) -> Parsed`: a parsed directory back as DataFrames
  (events, ping, runs, summary, overlays, meta); also reads the seed's CSVs.
- `compare_parsed(before, after, factor) -> Comparison` and
  `format_comparison(...)`: ratio of medians with an interval, asv-style marks.
- `summarize(frame, keys)`: n, failed, median, q1, q3, min, max, median CI, cv.
- `topology_order_key(topo)`: kary:1, kary:2, ..., kary:16, binomial.
"""

from __future__ import annotations

from analysis.compare import Comparison, compare_parsed, format_comparison
from analysis.model import PingStep, Problem, Step
from analysis.output import PARSED_FORMAT, Parsed, load_parsed
from analysis.parse import ParseResult, parse_tree, read_tree
from analysis.stats import median_ci_ranks, ratio_of_medians, summarize
from experiments.formats.events import event_sort_key, topology_order_key

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
    "parse_tree",
    "ratio_of_medians",
    "read_tree",
    "summarize",
    "topology_order_key",
]
