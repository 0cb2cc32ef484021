"""How much error each look of a race may spend, so the race's claims hold as a whole.

A race tests after every complete block from `first_test` on: up to
`max_blocks - first_test + 1` looks at growing data.  At a fixed level per
look, the chance that *some* look makes a false claim grows with the number of
looks (Armitage, McPherson and Rowe, JRSS A 1969: about 14% after 5 looks at
0.05).  Group-sequential designs instead *spend* the error over the looks:
Lan and DeMets (Biometrika 1983) give each look the increase of a spending
function f of the information fraction t (here: complete blocks over
`max_blocks`), with f(0) = 0 and f(1) = alpha.

A race looks at a few blocks fixed in advance (`look_blocks`): `first_test`,
then each next about half as many blocks again (5, 8, 12, 20 in a race of at
most 20), as group-sequential trials look a few times rather than after every
patient.  Each look then has a real share of the error to test with; a look
after every block would leave each a sliver (16 looks at 0.3% each, where 4
looks get 1-2% each).

kary spends with the Pocock-type function f(t) = alpha ln(1 + (e - 1) t)
(Lan and DeMets 1983; Kim and DeMets 1987), which spends more early than the
O'Brien-Fleming-type one: a race's clear losers should go at its first test,
where most of its money is saved.  Each look tests at the level it is given,
`f(t) - spent`, where `spent` is what earlier looks used (kept in race.json
with each decision): by Bonferroni's inequality over the looks, the chance of
any false claim over the whole race is at most the sum of the levels, f(1) =
alpha, whatever the looks' correlation.  That is the conservative form of
spending (exact group-sequential boundaries use the correlation to give each
look a little more), and it needs no fixed schedule: a voided block adds no
look, and a race resumed with a larger `--max-blocks` spends what its new
function allows beyond what was spent (nothing, until it catches up).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["LOOK_GROWTH", "SPENDING", "look_blocks", "look_level", "spending"]

# Each look after the first comes at about this many times the blocks of the last.
LOOK_GROWTH = 1.5

SPENDING = "Lan-DeMets, Pocock-type: f(t) = alpha ln(1 + (e - 1) t), t = blocks / max blocks"


def spending(alpha: float, fraction: float) -> float:
    """The error a race may have spent by information fraction `fraction` (0..1)."""
    t = min(max(fraction, 0.0), 1.0)
    return alpha * math.log1p((math.e - 1.0) * t)


def look_level(alpha: float, blocks: int, max_blocks: int, spent: Iterable[float]) -> float:
    """The level this look may use: what the spending function allows at `blocks` of
    `max_blocks`, less what earlier looks (`spent`) used; never below 0."""
    allowed = spending(alpha, blocks / max(1, max_blocks))
    return max(0.0, allowed - math.fsum(spent))


def look_blocks(first_test: int, max_blocks: int) -> list[int]:
    """The complete-block counts at which a lane tests: `first_test`, then each next
    LOOK_GROWTH times the last (rounded up), and `max_blocks` last; a look that would
    leave the last too close (the one after it past the budget) is the last itself."""
    first = max(2, first_test)
    if first >= max_blocks:
        return [max(first, max_blocks)]
    looks = [first]
    while looks[-1] < max_blocks:
        after = math.ceil(looks[-1] * LOOK_GROWTH)
        looks.append(max_blocks if math.ceil(after * LOOK_GROWTH) > max_blocks else after)
    return looks
