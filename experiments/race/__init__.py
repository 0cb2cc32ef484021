"""Racing topologies (F-race): which fan-out is fastest, for less than a plain sweep.

- `decide`: the test at each look (paired t-tests on log times against the zone,
  Holm; TOST over every pair for a tie; a change with size); pure.
- `pairs`: paired log differences, size-weighted, and their spread.
- `sequential`: the looks, and the error each may spend (Lan-DeMets).
- `futility`: stop a race its budget would likely not decide (conditional power).
- `spread`: how much a run varies between repeats, from history, for the plan.
- `engine`: the race as a state machine (lanes, blocks, voids, budget), and `replay`
  on sampled times, which the plan and benchmarks/race_replay.py use.
- `plan`: best, expected and worst case, beside a plain sweep and the uniform design.
- `plan_model`: the race replayed on the time model (expected case, blocked design,
  whether the budget decides).
- `run`: `kary race`'s blocks as cells of the raw tree, judged and decided.
- `resume`: a kept race met again: resumed, extended by a larger budget, or refused.
- `held_backend`: the one backend every block of a race runs on, brought down at its end.
- `blocks`: a block's cells, whether each is a timing, and its printed line.
- `answer`: what a race found, in words.

race.json is experiments/formats/race_state.py's.
"""

from __future__ import annotations

__all__ = [
    "answer",
    "blocks",
    "decide",
    "engine",
    "futility",
    "held_backend",
    "pairs",
    "plan",
    "plan_model",
    "resume",
    "run",
    "sequential",
    "spread",
]
