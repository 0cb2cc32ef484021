"""`compare_parsed`: did B get slower or faster than A, beyond a factor, and do we believe it?

Per (event, topology, nodes, size): the ratio of medians B/A of the ok timings,
the Mann-Whitney U test (two-sided) of A's timings against B's, and the
distribution-free Hodges-Lehmann interval for the ratio with its exact
coverage (analysis.tables.stats). Marks, as asv does:

    +  slower: ratio beyond the factor AND Mann-Whitney p < 0.05
    -  faster: same rule
    ~  beyond the factor, but p >= 0.05: not distinguishable from noise
    ?  beyond the factor, but unsure: fewer than 3 runs on a side, or so few
       that p < 0.05 is impossible (3 vs 3 gives at best p = 0.1)
    !  steps that failed in B but never in A (a new failure is a regression,
       whatever the number of runs: it is not a statistic)
       (blank) within the factor

Regressions are the `+` and `!` rows. Groups found on one side only are
counted, not compared. Failed steps never enter a median.  Void steps (a
failed precondition: analysis.read.records.is_void) are neither timings nor
failures of what is compared: they are counted apart (void_before/after)
and never make a `!`.

A step is compared only with itself run in the same setting (every field of the
cell's identity as it ran, knobs, CPU-bound: analysis.compare_match).  Two trees with
no step in common, or whose common steps never ran in one setting, are
refused in one line (UserError); `allow_mixed` compares the latter anyway and
labels every such row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.compare_match import (
    STEP_KEYS,
    Matching,
    Pair,
    differences_text,
    match_groups,
    nothing_in_common,
    setting_axes,
    setting_text,
    with_run_axes,
)
from analysis.read.records import void_mask
from analysis.tables.parsed_dir import Parsed
from analysis.tables.stats import ALPHA, MIN_RUNS, TEST_NAME, rank_test, ratio_of_medians
from experiments.errors import UserError

__all__ = [
    "COMPARE_COLUMNS",
    "Comparison",
    "compare_parsed",
    "format_comparison",
    "test_note",
]

COMPARE_COLUMNS = [
    "mark",
    "event",
    "topo",
    "nodes",
    "size_label",
    "size_bytes",
    "n_before",
    "n_after",
    "failed_before",
    "failed_after",
    "median_before",
    "median_after",
    "ratio",
    "ratio_low",
    "ratio_high",
    "coverage",
    "p_value",
    "test",
    "void_before",
    "void_after",
    # The setting each side ran in, over the axes that vary (analysis.compare_match);
    # "" where nothing varies.  They differ only on a mixed row (allow_mixed).
    "setting_before",
    "setting_after",
]
_MARK_ORDER = {"!": 0, "+": 1, "-": 2, "~": 3, "?": 4, "": 5}


@dataclass
class Comparison:
    """The compared groups, and those found on one side only.

    `mixed`: where rows compare different settings (allow_mixed), how the two
    sides differ (`backend (before flux; after local)`); "" when none does.
    """

    table: pd.DataFrame
    factor: float
    only_before: int
    only_after: int
    mixed: str = ""

    @property
    def mixed_rows(self) -> int:
        return int((self.table["setting_before"] != self.table["setting_after"]).sum())

    @property
    def regressions(self) -> pd.DataFrame:
        return self.table[self.table["mark"].isin(["+", "!"])]

    @property
    def exit_code(self) -> int:
        """1 when something got slower beyond the factor (or newly fails), else 0."""
        return 1 if len(self.regressions) else 0


def compare_parsed(
    before: Parsed, after: Parsed, factor: float = 1.10, allow_mixed: bool = False
) -> Comparison:
    """Compare two parsed trees group by group (see the module docstring for the marks).

    UserError, one line, when they share no step, or (unless `allow_mixed`) when
    a step both ran never ran in one setting.
    """
    if not factor > 1:
        raise ValueError("factor must be > 1")
    events_a = with_run_axes(before.events, before.runs)
    events_b = with_run_axes(after.events, after.runs)
    axes = setting_axes(events_a, events_b)
    a, b = _groups(events_a, axes), _groups(events_b, axes)
    matching = match_groups(a, b, allow_mixed)
    if not matching.common_steps:
        raise UserError(nothing_in_common(before.events, after.events))
    mixed = differences_text(axes, matching.differing) if matching.differing else ""
    if mixed and not allow_mixed:
        raise UserError(
            f"before and after differ in {mixed} for {len(matching.differing)} of "
            f"{matching.common_steps} steps both ran, so their timings are not comparable; "
            "--allow-mixed compares them anyway, labelled"
        )
    shown = _varying_axes(axes, matching)
    rows = [
        _compare(pair, a[(pair.before, pair.step)], b[(pair.after, pair.step)], factor)
        + _settings(axes, pair, shown)
        for pair in matching.pairs
    ]
    table = pd.DataFrame.from_records(rows, columns=COMPARE_COLUMNS)
    if not table.empty:
        rank = table["mark"].map(_MARK_ORDER)
        table = table.iloc[np.argsort(rank.to_numpy(), kind="stable")].reset_index(drop=True)
    return Comparison(table, factor, matching.only_before, matching.only_after, mixed)


def _groups(
    events: pd.DataFrame, axes: list[str]
) -> dict[tuple[tuple[str, ...], tuple[object, ...]], pd.DataFrame]:
    """Each (setting, step) group of a tree's events; a setting axis it lacks is ""."""
    if events.empty:
        return {}
    frame = events.copy()
    frame["nodes"] = frame["nodes"].astype(int)
    frame["size_bytes"] = frame["size_bytes"].astype("int64")
    for axis in axes:
        frame[axis] = frame[axis].fillna("").astype(str) if axis in frame.columns else ""
    groups = {}
    for key, group in frame.groupby([*axes, *STEP_KEYS], sort=False):
        values = tuple(key)
        setting = tuple(str(v) for v in values[: len(axes)])
        groups[(setting, values[len(axes) :])] = group
    return groups


def _varying_axes(axes: list[str], matching: Matching) -> list[str]:
    """The setting axes whose value differs among the compared pairs (either side)."""
    settings = {s for pair in matching.pairs for s in (pair.before, pair.after)}
    return [axis for i, axis in enumerate(axes) if len({s[i] for s in settings}) > 1]


def _settings(axes: list[str], pair: Pair, shown: list[str]) -> tuple[str, str]:
    return setting_text(axes, pair.before, shown), setting_text(axes, pair.after, shown)


def _times(group: pd.DataFrame) -> tuple[np.ndarray, int, int]:
    """(ok timings, failed steps, void steps) of one group."""
    ok = (group["status"] == "ok") & group["time_seconds"].notna()
    void = void_mask(group["status"])
    times = group.loc[ok, "time_seconds"].to_numpy(dtype=float)
    return times, int((~ok & ~void).sum()), int(void.sum())


def _compare(
    pair: Pair, before: pd.DataFrame, after: pd.DataFrame, factor: float
) -> tuple[object, ...]:
    event, topo, nodes, size = pair.step
    a, failed_a, void_a = _times(before)
    b, failed_b, void_b = _times(after)
    result = ratio_of_medians(a, b)
    test = rank_test(a, b)
    ratio = low = high = coverage = p_value = None
    mark, test_text = "", ""
    if test is not None:
        p_value = test.p
        enough = min(test.n_a, test.n_b) >= MIN_RUNS
        test_text = f"p={test.p:.3f}" if enough else f"unsure ({test.n_text})"
    if result is not None and test is not None:
        ratio, low, high, coverage = result.ratio, result.low, result.high, result.coverage
        if ratio > factor or ratio < 1 / factor:
            if min(test.n_a, test.n_b) < MIN_RUNS or not test.can_be_significant:
                mark = "?"
            elif test.significant:
                mark = "+" if ratio > 1 else "-"
            else:
                mark = "~"
    if failed_b and not failed_a:
        mark = "!"
    label = str(after["size_label"].iloc[0]) if "size_label" in after else ""
    return (
        mark,
        event,
        topo,
        nodes,
        label,
        size,
        len(a),
        len(b),
        failed_a,
        failed_b,
        float(np.median(a)) if len(a) else None,
        float(np.median(b)) if len(b) else None,
        ratio,
        low,
        high,
        coverage,
        p_value,
        test_text,
        void_a,
        void_b,
    )


def format_comparison(comparison: Comparison, only_changed: bool = False) -> str:
    """The comparison as an aligned text table, asv style, plus a one-line verdict."""
    table = comparison.table
    if only_changed:
        table = table[table["mark"] != ""]
    header: tuple[str, ...] = (
        "", "before", "after", "ratio", "interval", "test", "event", "topology", "nodes", "size"
    )  # fmt: skip
    # A tree holding several settings (a box and a test instance), or a mixed
    # comparison, says on each row which setting it compares.
    settings = bool((comparison.table["setting_before"] != "").any())
    header += ("setting",) if settings else ()
    lines = [header]
    for row in table.itertuples(index=False):
        lines.append(
            (
                str(row.mark),
                _seconds(row.median_before, row.n_before, row.failed_before, row.void_before),
                _seconds(row.median_after, row.n_after, row.failed_after, row.void_after),
                "n/a" if _missing(row.ratio) else f"{row.ratio:.2f}",
                _interval(row.ratio_low, row.ratio_high, row.coverage),
                str(row.test),
                str(row.event),
                str(row.topo),
                str(row.nodes),
                str(row.size_label),
            )
            + ((_setting(str(row.setting_before), str(row.setting_after)),) if settings else ())
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    right = {1, 2, 3, 8}
    text = [
        "  ".join(
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(line)
        ).rstrip()
        for line in lines
    ]
    marks = comparison.table["mark"]
    verdict = (
        f"{int((marks == '+').sum())} slower, {int((marks == '-').sum())} faster, "
        f"{int((marks == '!').sum())} newly failing, {int((marks == '~').sum())} not significant, "
        f"{int((marks == '?').sum())} unsure, "
        f"{int((marks == '').sum())} within x{comparison.factor:g} "
        f"({len(comparison.table)} compared"
    )
    notes = [test_note(comparison.factor)]
    if comparison.mixed:
        mixed = comparison.mixed_rows
        verdict += f", {mixed} of them mixed"
        notes.insert(
            0,
            f"mixed (--allow-mixed): before and after differ in {comparison.mixed}; "
            f"{mixed} row{'' if mixed == 1 else 's'} compare different settings "
            "(setting: before -> after)",
        )
    if comparison.only_before or comparison.only_after:
        verdict += f"; {comparison.only_before} only before, {comparison.only_after} only after"
    # The verdict stays the last line: scripts and readers look there.
    return "\n".join([*text, *notes, verdict + ")"]) + "\n"


def test_note(factor: float) -> str:
    """What the marks claim, and the test behind them, in one line."""
    return (
        f"test: {TEST_NAME}, alpha {ALPHA:g}; + and - need a ratio beyond x{factor:g} "
        f"and p < {ALPHA:g}; ? unsure: n < {MIN_RUNS} on a side, or too few runs for "
        f"p < {ALPHA:g} (3 vs 3 gives at best p = 0.1)"
    )


def _setting(before: str, after: str) -> str:
    return before if before == after else f"{before} -> {after}"


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))


def _seconds(median: object, n: object, failed: object, void: object = 0) -> str:
    if not _missing(median):
        text = f"{float(median):.3f}s n={n}"  # type: ignore[arg-type]
    else:
        text = "void" if void and not failed else "failed"
    counts = [f"{failed} failed"] if failed else []
    counts += [f"{void} void"] if void else []
    return f"{text} ({', '.join(counts)})" if counts else text


def _interval(low: object, high: object, coverage: object) -> str:
    if _missing(low) or _missing(high) or _missing(coverage):
        return "(too few runs)"
    return f"[{float(low):.2f}, {float(high):.2f}] {float(coverage):.0%}"  # type: ignore[arg-type]
