"""The race's test after a block: who is dropped, and whether the race is decided.

F-race (Birattari et al., GECCO 2002) as irace runs it (López-Ibáñez et al.
2016): candidates are the topologies, blocks the instances (every surviving
topology timed once, at one size).  Ranks within a block cancel what the block
itself costs, so a 1 GB block and a 10 GB block weigh alike.

After each complete block from `first_test` on:

1. **Drop.**  With three or more survivors, Friedman's test over the blocks; when
   it rejects, Conover's post-hoc test of each survivor against the best (the
   lowest mean rank), Holm-adjusted over those k-1 comparisons
   (scikit-posthocs, statsmodels).  With two, the paired Wilcoxon signed-rank
   test on log times (F-race's choice for two).  A survivor whose adjusted p is
   below 1 - confidence and whose mean rank is worse than the best's is dropped.
   When every block ranks the survivors alike, Conover's statistic divides by a
   zero residual: each pair is then judged by a paired t-test on log times
   (irace's other test), which weighs by how far apart the times are.
2. **Across sizes, a candidate the best may not beat everywhere is kept**: where
   three or more sizes were timed, a survivor whose log-ratio to the best changes
   significantly with log size and is predicted below the best's at either end of
   the sizes asked for is not dropped (sizes run smallest first, so it may win
   where it was not yet timed; or it wins the small sizes the best loses).
3. **Decided** when one survivor is left; a **tie** when every other survivor is
   shown within the indifference zone of the best (two one-sided paired t-tests on
   log times, Holm-adjusted: TOST, statsmodels), stated with each ratio's
   (1 - 2 alpha) interval; across sizes, **the best differs by size** when a
   survivor is significantly slower than the best at one end of the sizes asked
   for and significantly faster at the other (a regression of the log-ratio on log
   size, evaluated at both ends).
4. **Futile** when, undecided, some survivor's chance of being dropped or shown
   within the zone by the last block of the budget is below `rules.futility`
   (futility.py): the engine then ends the lane "not separated" early.

Everything here is pure: times in, a Decision out.  The statistics packages load
on first use (they take seconds to import; `kary plan` of a plain sweep needs none).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from experiments.race.futility import futility_reason
from experiments.race.rules import (
    BY_SIZE,
    CONTINUE,
    TIE,
    WINNER,
    RaceRules,
)
from experiments.race.size_trend import any_trend, crossing, gaining_with_size

__all__ = [
    "Comparison",
    "Decision",
    "decide",
    "holm",
]


@dataclass(frozen=True)
class Comparison:
    """One survivor against the best after a block."""

    candidate: str
    mean_rank: float
    ratio: float  # geometric mean of its time over the best's, per block
    ratio_low: float  # the ratio's (1 - 2 alpha) interval: what TOST tests
    ratio_high: float
    p: float | None  # the drop test's raw p against the best (None: no test ran)
    p_adjusted: float | None  # Holm over the comparisons with the best
    p_equivalent: float | None  # TOST, Holm-adjusted: within the zone of the best
    dropped: bool = False
    kept_for_size: bool = False  # significantly slower, but gaining with size


@dataclass(frozen=True)
class Decision:
    """What the test after one block found, with every number it used."""

    blocks: int  # complete blocks the test used
    survivors: list[str]  # before this decision
    best: str
    test: str
    statistic: float | None
    p: float | None
    comparisons: list[Comparison] = field(default_factory=list)
    outcome: str = CONTINUE
    crossing: dict[str, Any] | None = None  # the best differs by size: where
    futile: str | None = None  # why more blocks would likely not decide (futility.py)

    @property
    def dropped(self) -> list[str]:
        return [c.candidate for c in self.comparisons if c.dropped]

    @property
    def kept(self) -> list[str]:
        """The survivors after this decision, in the order they were given."""
        gone = set(self.dropped)
        return [c for c in self.survivors if c not in gone]

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["dropped"] = self.dropped
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Decision:
        comparisons = [Comparison(**c) for c in data.get("comparisons", [])]
        fields = {k: v for k, v in data.items() if k not in ("comparisons", "dropped")}
        return cls(**fields, comparisons=comparisons)


def decide(
    candidates: Sequence[str],
    times: Sequence[Sequence[float]],
    rules: RaceRules,
    *,
    sizes: Sequence[int] | None = None,
    size_range: tuple[int, int] | None = None,
) -> Decision:
    """The test after a block over `times` (one row per complete block, one column per
    candidate, seconds > 0).  `sizes` (one per block) and `size_range` (the smallest and
    largest size the race asks for) only in a race across sizes."""
    import numpy as np

    logs = np.log(np.asarray(times, dtype=float))
    blocks, k = logs.shape
    if k != len(candidates) or k < 2:
        raise ValueError(f"decide needs two or more candidates, one column each (got {k})")
    ranks = _ranks(logs)
    mean_rank = ranks.mean(axis=0)
    # The best: lowest mean rank; a tie of ranks goes to the lower mean log time.
    best = min(range(k), key=lambda j: (mean_rank[j], logs[:, j].mean()))
    others = [j for j in range(k) if j != best]
    survivors = list(candidates)
    if blocks < rules.first_test:
        comparisons = [
            _comparison(candidates[j], mean_rank[j], logs[:, j] - logs[:, best], rules)
            for j in others
        ]
        return Decision(
            blocks,
            survivors,
            candidates[best],
            f"none yet: the first test is after {rules.first_test} blocks",
            None,
            None,
            comparisons,
        )
    test, statistic, p_all, raw = _drop_test(logs, ranks, best, others, rules)
    adjusted = holm(raw) if raw else []
    protected = gaining_with_size(logs, best, others, sizes, size_range, rules)
    comparisons = []
    for index, j in enumerate(others):
        p_raw = raw[index] if raw else None
        p_adj = adjusted[index] if adjusted else None
        slower = mean_rank[j] > mean_rank[best]
        significant = p_adj is not None and p_adj < rules.alpha and slower
        keep = significant and j in protected
        comparisons.append(
            _comparison(
                candidates[j],
                mean_rank[j],
                logs[:, j] - logs[:, best],
                rules,
                p_raw,
                p_adj,
                dropped=significant and not keep,
                kept_for_size=keep,
            )
        )
    decision = Decision(blocks, survivors, candidates[best], test, statistic, p_all, comparisons)
    return _outcome(decision, logs, best, candidates, sizes, size_range, rules)


def _ranks(logs: Any) -> Any:
    from scipy.stats import rankdata

    return rankdata(logs, axis=1)


def _drop_test(
    logs: Any, ranks: Any, best: int, others: list[int], rules: RaceRules
) -> tuple[str, float | None, float | None, list[float]]:
    """(test's name, its statistic, its p, each other's raw p against the best)."""
    import numpy as np
    from scipy.stats import friedmanchisquare, wilcoxon

    k = logs.shape[1]
    if k == 2:
        (other,) = others
        diff = logs[:, other] - logs[:, best]
        if np.all(diff == 0):
            return "Wilcoxon signed-rank, paired, on log times", None, 1.0, [1.0]
        result = wilcoxon(diff, alternative="two-sided", method="auto")
        p = float(result.pvalue)
        return "Wilcoxon signed-rank, paired, on log times", float(result.statistic), p, [p]
    if np.all(ranks == ranks[:, :1]):
        # Every block a dead heat: no order to test (Friedman's statistic is 0 / 0).
        return "Friedman: every block a dead heat", 0.0, 1.0, []
    friedman = friedmanchisquare(*logs.T)
    p_friedman = float(friedman.pvalue)
    name = "Friedman, then Conover against the best (Holm)"
    if not p_friedman < rules.alpha:
        # Friedman does not reject: no pair is tested (F-race's rule).
        return name, float(friedman.statistic), p_friedman, []
    if _every_block_ranks_alike(ranks):
        return (
            "Friedman, then paired t-tests on log times against the best (Holm): every "
            "block ranked alike",
            float(friedman.statistic),
            p_friedman,
            [_paired_t(logs[:, j] - logs[:, best]) for j in others],
        )
    import scikit_posthocs as sp

    matrix = sp.posthoc_conover_friedman(logs).to_numpy()
    return name, float(friedman.statistic), p_friedman, [float(matrix[j, best]) for j in others]


def _every_block_ranks_alike(ranks: Any) -> bool:
    import numpy as np

    return bool(np.all(ranks == ranks[0]))


def _paired_t(diff: Any) -> float:
    """irace's t-test, for blocks that all rank alike (Conover's residual is then zero,
    its statistic infinite): the times' own spread says how sure the order is."""
    from scipy.stats import ttest_1samp

    if float(diff.std()) == 0.0:
        return 0.0 if float(diff[0]) != 0.0 else 1.0
    return float(ttest_1samp(diff, 0.0).pvalue)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment, in the order given.

    Written out, not statsmodels' `multipletests(method="holm")` (whose values
    tests/race hold it equal to): statsmodels 0.15 runs a full `gc.collect()` in
    every Holm call, about 0.18 s each here, which made one replayed race take
    seconds.
    """
    import numpy as np

    values = np.asarray(p_values, dtype=float)
    m = len(values)
    order = np.argsort(values, kind="stable")
    stepped = np.maximum.accumulate(values[order] * np.arange(m, 0, -1))
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(stepped, 1.0)
    return [float(p) for p in adjusted]


def _comparison(
    name: str,
    mean_rank: float,
    diff: Any,
    rules: RaceRules,
    p: float | None = None,
    p_adjusted: float | None = None,
    *,
    dropped: bool = False,
    kept_for_size: bool = False,
) -> Comparison:
    low, high = _ratio_interval(diff, rules)
    return Comparison(
        name,
        round(float(mean_rank), 4),
        round(math.exp(float(diff.mean())), 4),
        low,
        high,
        None if p is None else float(p),
        None if p_adjusted is None else float(p_adjusted),
        None,
        dropped,
        kept_for_size,
    )


def _ratio_interval(diff: Any, rules: RaceRules) -> tuple[float, float]:
    """The geometric-mean ratio's (1 - 2 alpha) t interval (what TOST decides on)."""
    from scipy.special import stdtrit

    n = len(diff)
    mean = float(diff.mean())
    if n < 2:
        return (math.nan, math.nan)
    spread = float(diff.std(ddof=1)) / math.sqrt(n)
    half = float(stdtrit(n - 1, 1 - rules.alpha)) * spread
    return (round(math.exp(mean - half), 4), round(math.exp(mean + half), 4))


def _outcome(
    decision: Decision,
    logs: Any,
    best: int,
    candidates: Sequence[str],
    sizes: Sequence[int] | None,
    size_range: tuple[int, int] | None,
    rules: RaceRules,
) -> Decision:
    from dataclasses import replace

    kept = decision.kept
    if len(kept) == 1:
        return replace(decision, outcome=WINNER)
    index = {name: j for j, name in enumerate(candidates)}
    rest = [c for c in decision.comparisons if not c.dropped]
    names = [c.candidate for c in rest]
    found = crossing(logs, candidates[best], best, names, index, sizes, size_range, rules)
    if found is not None:
        return replace(decision, outcome=BY_SIZE, crossing=found)
    equivalent = _equivalence(logs, best, rest, index, rules)
    comparisons = [
        replace(c, p_equivalent=equivalent.get(c.candidate)) for c in decision.comparisons
    ]
    tie = bool(rest) and all(
        equivalent.get(c.candidate) is not None and equivalent[c.candidate] < rules.alpha
        for c in rest
    )
    # A trend across sizes is no tie, whatever the mean says.
    if tie and sizes is not None and any_trend(logs, best, names, index, sizes, rules):
        tie = False
    if tie:
        return replace(decision, comparisons=comparisons, outcome=TIE)
    futile = futility_reason(logs, best, candidates, rest, rules, sizes)
    return replace(decision, comparisons=comparisons, futile=futile)


def _equivalence(
    logs: Any, best: int, rest: list[Comparison], index: dict[str, int], rules: RaceRules
) -> dict[str, float]:
    """Each survivor's TOST p against the best (Holm-adjusted): within the zone?"""
    import numpy as np
    from statsmodels.stats.weightstats import ttost_paired

    if not rest or logs.shape[0] < 2:
        return {}
    raw = []
    for c in rest:
        diff = logs[:, index[c.candidate]] - logs[:, best]
        if np.all(diff == diff[0]):
            # No spread: the interval is the point; inside the zone or not.
            raw.append(0.0 if abs(float(diff[0])) < rules.margin else 1.0)
            continue
        p, _, _ = ttost_paired(
            logs[:, index[c.candidate]], logs[:, best], -rules.margin, rules.margin
        )
        raw.append(float(p))
    adjusted = holm(raw)
    return {c.candidate: adjusted[i] for i, c in enumerate(rest)}
