"""What a race found, in words: the answer line `kary race` ends with and the report shows.

- one left: "fastest within 5% at 95% confidence: kary:2";
- a tie: "tie within 5% at 95% confidence: kary:1, kary:2 (kary:1 / kary:2 1.01,
  90% interval 0.98-1.04)";
- the best differs by size: "the best differs by size (95% confidence): kary:2 at
  the small end, kary:1 at the large end, crossing near 48M";
- the budget was spent first, or would likely not decide (futility.py): "not
  separated (...; n = 20 blocks): kary:1, kary:2 are left", with what more blocks
  would likely take;
- blocks kept being voided: "stopped: 3 blocks in a row were void (...)".

Per size, a line for each size's lane.
"""

from __future__ import annotations

import math

from experiments.formats.cell_layout import format_size
from experiments.race.decide import Decision
from experiments.race.engine import NOT_SEPARATED, STOPPED, Lane, Race
from experiments.race.rules import ACROSS, BY_SIZE, TIE, WINNER

__all__ = ["answer_text", "lane_answer"]


def answer_text(race: Race) -> str:
    if race.mode == ACROSS:
        return lane_answer(race, race.lanes[0])
    return "; ".join(
        f"{format_size(int(lane.key))}: {lane_answer(race, lane)}" for lane in race.lanes
    )


def lane_answer(race: Race, lane: Lane) -> str:
    rules = race.rules
    sure = f"within {rules.zone:.0%} at {rules.confidence:.0%} confidence"
    last: Decision | None = lane.decisions[-1] if lane.decisions else None
    n = f"n = {len(lane.blocks)} blocks"
    if lane.outcome == WINNER:
        return f"fastest {sure}: {lane.survivors[0]} ({n})"
    if lane.outcome == TIE and last is not None:
        level = 1 - 2 * rules.alpha
        ratios = ", ".join(
            f"{c.candidate} / {last.best} {c.ratio:.3g}, {level:.0%} interval "
            f"{c.ratio_low:.3g}-{c.ratio_high:.3g}"
            for c in last.comparisons
            if not c.dropped
        )
        return f"tie {sure}: {', '.join(lane.survivors)} ({ratios}; {n})"
    if lane.outcome == BY_SIZE and last is not None and last.crossing:
        cross = last.crossing
        return (
            f"the best differs by size ({rules.confidence:.0%} confidence): "
            f"{cross['faster_small']} at the small end, {cross['faster_large']} at the large "
            f"end, crossing near {format_size(int(cross['crossing_bytes']))} ({n})"
        )
    if lane.outcome == STOPPED:
        voids = [b.void for b in race.blocks if b.lane == lane.key and b.void]
        return f"stopped: {len(voids)} blocks were void, the last: {voids[-1]}"
    if lane.outcome == NOT_SEPARATED:
        why = lane.why or race.budget or f"the budget of {rules.max_blocks} blocks was spent"
        return f"not separated ({why}; {n}): {', '.join(lane.survivors)} are left" + (
            f"; {more_blocks_text(race, lane, last)}" if last is not None else ""
        )
    return f"undecided so far ({n}): {', '.join(lane.survivors)} are left"


def more_blocks_text(race: Race, lane: Lane, last: Decision) -> str:
    """How many more blocks the closest pair would likely need, at the spread seen: a
    paired t-test's sample size for 80% power at the race's confidence."""
    from scipy.stats import norm

    closest = [c for c in last.comparisons if not c.dropped]
    if not closest or len(lane.blocks) < 2:
        return "more blocks would be needed"
    target = min(closest, key=lambda c: abs(math.log(c.ratio)) if c.ratio > 0 else 0)
    effect = abs(math.log(target.ratio))
    if not effect or not math.isfinite(target.ratio_high) or target.ratio_high <= 0:
        return f"{target.candidate} and {last.best} look alike: more blocks may only show a tie"
    if effect < math.log1p(race.rules.zone):
        # A difference inside the zone is a tie to be shown, not a gap to be separated:
        # the blocks that would separate it grow without bound as it shrinks.
        return (
            f"{target.candidate} and {last.best} differ by less than the "
            f"{race.rules.zone:.0%} zone (ratio {target.ratio:.3g}): more blocks would more "
            "likely show a tie than separate them"
        )
    from scipy.stats import t as student

    n = len(lane.blocks)
    spread = (
        (math.log(target.ratio_high) - math.log(target.ratio))
        / float(student.ppf(race.rules.confidence, n - 1))
        * math.sqrt(n)
    )
    z = float(norm.ppf(1 - race.rules.alpha / 2) + norm.ppf(0.8))
    needed = math.ceil((z * spread / effect) ** 2)
    if len(lane.survivors) == 2:
        # Two are tested by Wilcoxon's exact test, whose smallest p is 2 / 2**n.
        needed = max(needed, math.ceil(math.log2(2 / race.rules.alpha) + 1e-9))
    more = max(1, needed - n)
    return (
        f"separating {target.candidate} from {last.best} (ratio {target.ratio:.3g}) would take "
        f"about {more} more blocks at the spread seen"
    )
