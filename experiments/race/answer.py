"""What a race found, in words: the answer line `kary race` ends with and the report shows.

Every sentence is one a test in race.json backs (decide.py), at the race's
confidence over the whole race:

- one left: "fastest within 5% at 95% confidence: kary:2", every other dropped
  as shown more than the zone slower than the leader;
- a tie: "tie within 5% at 95% confidence: kary:1, kary:2 (kary:2 / kary:1
  1.01, 98% interval 0.98-1.04)", every pair shown within the zone (TOST), the
  interval at the level the deciding look spent;
- the best differs by size: "the best differs by size (95% confidence): kary:2
  faster than kary:1 at 64M, 128M, slower at 16M, crossing near 48M";
- the budget was spent first, or would likely not decide (futility.py): "not
  separated (...; n = 20 blocks): kary:1, kary:2 are left", with the closest
  pair's ratio and interval (no claim: neither shown beyond the zone nor within
  it) and what more blocks would likely take, a projection;
- blocks kept being voided: "stopped: 3 blocks in a row were void (...)".

Across sizes each answer says the sizes it timed in complete blocks: it is an
answer for those, and for the whole range asked once both ends were timed.
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
    n = f"n = {len(lane.blocks)} blocks" + (timed_text(race, lane) if race.mode == ACROSS else "")
    if lane.outcome == WINNER:
        return f"fastest {sure}: {lane.survivors[0]} ({n})"
    if lane.outcome == TIE and last is not None:
        level = 1 - 2 * (last.level or rules.alpha)
        ratios = ", ".join(
            f"{c.candidate} / {last.best} {c.ratio:.3g}, {level:.0%} interval "
            f"{c.ratio_low:.3g}-{c.ratio_high:.3g}"
            for c in last.comparisons
            if not c.dropped
        )
        return f"tie {sure}: {', '.join(lane.survivors)} ({ratios}; {n})"
    if lane.outcome == BY_SIZE and last is not None and last.crossing:
        cross = last.crossing
        if "candidate" in cross:
            return (
                f"the best differs by size ({rules.confidence:.0%} confidence): "
                f"{cross['candidate']} faster than {cross['leader']} at "
                f"{_sizes(cross['sizes_faster'])}, slower at {_sizes(cross['sizes_slower'])}, "
                f"crossing near {format_size(int(cross['crossing_bytes']))} ({n})"
            )
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


def _sizes(sizes: list[int]) -> str:
    return ", ".join(format_size(int(s)) for s in sizes)


def timed_text(race: Race, lane: Lane) -> str:
    """Which sizes the answer covers: those its complete blocks timed."""
    timed = sorted({race.blocks[i].size_bytes for i in lane.blocks})
    if not timed:
        return ""
    low, high = min(race.sizes), max(race.sizes)
    if timed == sorted(race.sizes):
        return f"; timed at every size asked, {_sizes(timed)}"
    if timed[0] == low and timed[-1] == high:
        return f"; timed at {_sizes(timed)}, both ends of {format_size(low)}-{format_size(high)}"
    return (
        f"; timed at {_sizes(timed)} only: an answer for {format_size(timed[0])}-"
        f"{format_size(timed[-1])}, not the {format_size(low)}-{format_size(high)} asked"
    )


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
        # A ratio inside the zone is a tie to be shown, not a gap to be separated: the
        # blocks that would separate it grow without bound as it shrinks.  Not a claim:
        # its interval says how little the blocks so far have shown.
        return (
            f"{target.candidate} / {last.best} {target.ratio:.3g} (interval "
            f"{target.ratio_low:.3g}-{target.ratio_high:.3g}: shown neither beyond the "
            f"{race.rules.zone:.0%} zone nor within it); at that ratio more blocks would more "
            "likely show a tie than separate them"
        )
    from statistics import stdev

    n = len(lane.blocks)
    column = {c: [race.blocks[i].times or {} for i in lane.blocks] for c in (target.candidate,)}
    diffs = [
        math.log(times[target.candidate] / times[last.best])
        for times in column[target.candidate]
        if target.candidate in times and last.best in times
    ]
    if len(diffs) < 2 or stdev(diffs) == 0:
        return f"{target.candidate} and {last.best} differ steadily: more blocks would tell"
    # A projection, not a claim: the blocks at which the gap beyond the zone would pass
    # the drop test at 80% power, at the spread seen, with the whole confidence.
    beyond = effect - math.log1p(race.rules.zone)
    z = float(norm.ppf(1 - race.rules.alpha) + norm.ppf(0.8))
    needed = math.ceil((z * stdev(diffs) / beyond) ** 2)
    more = max(1, needed - n)
    return (
        f"separating {target.candidate} from {last.best} (ratio {target.ratio:.3g}) would take "
        f"about {more} more blocks at the spread seen"
    )
