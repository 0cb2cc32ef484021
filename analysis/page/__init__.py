"""The report page: one self-contained HTML file over one or more parsed directories.

Takes parsed directories; gives report.html (`builder`): the facts of each run
(`facts`), which fan-out wins and how sure (`results`), the direct download and
ping baselines (`baselines`), each design's tree as SVG (`svg`), the plots
inlined (`inline_plots`), and the text the template shows (`view`,
templates/report.html.j2).  Named `page`, not `report`: `analysis.report` is
the public function that writes it, and a sub-package of that name would
replace it as an attribute of `analysis` once imported.
"""

__all__ = ["baselines", "builder", "facts", "inline_plots", "results", "svg", "view"]
