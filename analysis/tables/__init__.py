"""Tables: the cells' results as rows and DataFrames, honest statistics, and the parsed
directory written and loaded.

Takes `analysis.read` results; gives the events, ping and runs tables (`rows`,
pandas-free, and `frames`), summary.csv (`summary_rows`, `group_stats`,
`stats`), CSV text byte for byte as pandas writes it (`csv_cells`,
`csv_text`), the knob and source labels (`knobs`, `sources`), and the parsed
directory on disk (`parsed_dir`, over experiments.formats.parsed, which owns
its file names, columns and format).
"""

__all__ = [
    "csv_cells",
    "csv_text",
    "frames",
    "group_stats",
    "knobs",
    "parsed_dir",
    "parsed_rows",
    "rows",
    "sources",
    "stats",
    "summary_rows",
]
