"""A `kary race` run for real in the box: its answer, what it spent, and whether it agrees.

    .venv/bin/python benchmarks/race_box.py benchmarks/results/race-box-n16-100Mbit-across \
        --plain benchmarks/results/box-topologies-n16.json --speed 100Mbit

A race's results folder holds what the run left: race.json (the race, kept by
`kary parse` beside its tables), runs.csv (the parsed cells, read by formats/parsed, with run.json's
times, template hash and kary commit) and plan.json (`kary race ... --dry-run
--json` at the same commit: the race's own plan).  Printed:

- what made it (benchmarks/provenance.py: one template hash and kary commit, the
  first start to the last finish) and the race's settings and seed;
- the answer (experiments/race/answer.py, as `kary race` ended with it), and the
  answer today's rules give on the same complete blocks, in the order they ran
  (`rescore`: a race kept under earlier rules is re-scored, not re-run; where
  today's rules would have wanted more blocks than it ran, it says so);
- each block: its size, how many survived into it, the fastest and slowest
  timing, and the decision after it (test, p, who was dropped);
- what it spent: runs, the cells' wall time (run.json's start to finish) and
  node-seconds (nodes x wall, what a billed cluster would pay), beside the plan's
  best case, one plain iteration of the same cells and the uniform design
  (every topology at every size, the fewest runs a side for Mann-Whitney with
  Holm), both planned: the plain sweep's cells were never run;
- with `--plain`, the committed plain sweep's verdicts (box_topologies.py's kept
  samples at one size and speed): every pair of raced topologies Mann-Whitney
  separates (exact, two-sided, p < 0.05), and whether the race agrees: it must
  not answer with, or keep in a tie, the slower of a separated pair when it raced
  the faster one.

Exit status 1 when the race disagrees with a separated pair; 2 when the folder
is not a race's (one line).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import pandas as pd  # noqa: E402
from provenance import Made, made_by, or_refused  # noqa: E402

from experiments.formats.cell_layout import format_size  # noqa: E402
from experiments.formats.parsed.load import load_parsed  # noqa: E402
from experiments.formats.race_state import read_race  # noqa: E402
from experiments.plan_view import format_duration  # noqa: E402
from experiments.race.answer import answer_text  # noqa: E402
from experiments.race.engine import Block, Race  # noqa: E402
from experiments.race.rules import CONTINUE, TIE, WINNER, RaceRules  # noqa: E402


def _wall_seconds(runs: pd.DataFrame) -> pd.Series:
    started = pd.to_datetime(runs["started"], utc=True)
    finished = pd.to_datetime(runs["finished"], utc=True)
    return (finished - started).dt.total_seconds()


def block_rows(race: Race) -> list[str]:
    rows = ["| block | size | runs | fastest | slowest | after it |", "|---|---|---|---|---|---|"]
    decisions = {d.blocks: d for lane in race.lanes for d in lane.decisions}
    complete = 0
    for block in race.blocks:
        head = f"| {block.iteration} | {format_size(block.size_bytes)} | {block.cells_run} |"
        if not block.times:
            rows.append(f"{head} | | void: {block.void} |")
            continue
        complete += 1
        fast = min(block.times, key=block.times.__getitem__)
        slow = max(block.times, key=block.times.__getitem__)
        decision = decisions.get(complete)
        after = "" if decision is None else decision.test
        if decision is not None and decision.p is not None:
            after += f": p = {decision.p:.2g}"
        if decision is not None and decision.dropped:
            after += f"; dropped {len(decision.dropped)}: {', '.join(decision.dropped)}"
        if decision is not None and decision.futile:
            after += f"; stopped: {decision.futile}"
        rows.append(
            f"{head} {fast} {block.times[fast]:.2f} s | {slow} {block.times[slow]:.2f} s | "
            f"{after} |"
        )
    return rows


def rescore(kept: Race) -> Race:
    """The race's complete blocks, in the order they ran, decided by today's rules (its
    confidence, zone and budget kept)."""
    import dataclasses

    rules = dataclasses.replace(
        RaceRules(),
        confidence=kept.rules.confidence,
        zone=kept.rules.zone,
        max_blocks=kept.rules.max_blocks,
    )
    race = Race.start(kept.candidates, kept.sizes, kept.mode, rules, kept.seed, kept.nodes)
    for old in kept.blocks:  # every attempt, voided ones too: a block's index is its iteration
        lane = race.lane(old.lane)
        if lane.decided:
            break
        block = Block(old.lane, old.size_bytes, old.iteration, list(lane.survivors))
        race.blocks.append(block)
        lane.attempts += 1
        if old.times:
            race.record(block, {c: old.times[c] for c in block.order})
        else:
            race.record(block, None, old.void)
    return race


def rescored_lines(kept: Race) -> list[str]:
    today = rescore(kept)
    rules = today.rules
    lines = [
        f"under today's rules (first test after {rules.first_test} blocks, error spent over "
        "the looks, drops beyond the zone), on the same complete blocks:",
        f"answer: {answer_text(today)}",
    ]
    if any(lane.outcome == CONTINUE for lane in today.lanes):
        lines.append(
            "(the race stopped before today's rules would have: they wanted more blocks than "
            "it ran)"
        )
    same = answer_text(today).split(" (")[0] == answer_text(kept).split(" (")[0]
    lines.append("the answer is the same" if same else "the answer CHANGED under today's rules")
    return lines


def cost_rows(race: Race, runs: pd.DataFrame, plan: dict[str, Any]) -> list[str]:
    cases = {case["key"]: case for case in plan["cases"]}
    wall = float(_wall_seconds(runs).sum())
    nodes = race.nodes
    rows = [
        "| | runs | cell time | node-hours | node-hours / uniform |",
        "|---|---|---|---|---|",
    ]
    uniform = cases["uniform"]["node_seconds"]

    def row(name: str, count: int, seconds: float, node_seconds: float) -> str:
        return (
            f"| {name} | {count} | {format_duration(seconds)} | {node_seconds / 3600:.2f} | "
            f"{node_seconds / uniform:.2f} |"
        )

    rows.append(row("this race, measured", len(runs), wall, nodes * wall))
    for key, name in (
        ("best", "its plan: decided at the first test"),
        ("plain", "plain sweep, 1 iteration (planned; decides nothing)"),
        ("uniform", f"{cases['uniform']['name']} (planned)"),
    ):
        case = cases[key]
        rows.append(row(name, case["runs"], case["seconds"], case["node_seconds"]))
    return rows


def agreement(race: Race, plain: dict[str, Any], speed: str) -> tuple[list[str], int]:
    """The committed plain sweep's separated pairs among the raced topologies, and
    whether the race's answer agrees with each."""
    from scipy.stats import mannwhitneyu

    samples = plain["box"][speed]
    raced = [t for t in samples if t in race.candidates]
    lane = race.lanes[0]
    answered = set(lane.survivors) if lane.outcome in (WINNER, TIE) else set()
    lines, wrong = [], 0
    for a, b in itertools.combinations(sorted(raced), 2):
        p = float(mannwhitneyu(samples[a], samples[b], alternative="two-sided").pvalue)
        faster_a = pd.Series(samples[a]).median() < pd.Series(samples[b]).median()
        fast, slow = (a, b) if faster_a else (b, a)
        if not p < 0.05:
            lines.append(f"- {fast} and {slow}: not separated by the plain sweep (p = {p:.2g})")
            continue
        agrees = slow not in answered
        wrong += not agrees
        lines.append(
            f"- {fast} faster than {slow} (Mann-Whitney p = {p:.2g}, n = "
            f"{len(samples[fast])} a side): "
            + ("the race agrees" if agrees else f"the race DISAGREES: it answers {slow}")
        )
    return lines, wrong


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="a race's results folder")
    parser.add_argument("--plain", type=Path, help="box_topologies.py's kept samples (JSON)")
    parser.add_argument("--speed", default="100Mbit", help="the plain sweep's link speed")
    args = parser.parse_args(argv)
    kept = read_race(args.results)
    if kept is None:
        print(f"race_box.py: {args.results} holds no race.json", file=sys.stderr)
        return 2
    race = Race.from_json(kept.race)
    runs = load_parsed(args.results).runs
    plan = json.loads((args.results / "plan.json").read_text())
    rules = race.rules
    lines = [
        f"kary race in the box: {race.nodes} nodes, {race.mode}, sizes "
        f"{', '.join(format_size(s) for s in race.sizes)}, {len(race.candidates)} topologies "
        f"({', '.join(race.candidates)}); seed {race.seed}",
        f"rules: confidence {rules.confidence:g}, zone {rules.zone:.0%}, first test after "
        f"{rules.first_test} blocks, at most {rules.max_blocks} blocks",
        made_by({"race": [Made.of(row) for row in runs.to_dict("records")]}),
        "",
        f"answer: {answer_text(race)}",
        "",
        *rescored_lines(race),
        "",
        *block_rows(race),
        "",
        *cost_rows(race, runs, plan),
    ]
    wrong = 0
    if args.plain:
        plain = json.loads(args.plain.read_text())
        found, wrong = agreement(race, plain, args.speed)
        lines += [
            "",
            f"against the committed plain sweep ({args.plain.name}: {plain['nodes']} nodes, "
            f"{plain['size']}, {args.speed}):",
            *found,
        ]
    print("\n".join(lines))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(or_refused("race_box.py", main))
