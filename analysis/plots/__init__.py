"""Plots: PNG figures of a parsed directory, drawn in a process forked when a parse starts.

Takes the parsed tables; gives plots/*.png (`figures`: time against size,
topology heatmaps, per-iteration strips; `knobs`: a Flux knob's effect), all
drawn with one look (`theme`) and the same marks for medians, intervals and
failures (`parts`).  `process` starts the drawing before pandas is imported.
"""

__all__ = ["figures", "knobs", "parts", "process", "theme"]
