"""Replay `kary race` on known truths and score every claim it makes.

Each scenario is a truth (every candidate's time at every size, or kary's own box
runs) and a way to draw a run from it.  The race (experiments.race.engine, the
engine `kary race` runs) is replayed once per seed, and each claim it made is
scored against the truth, separately:

- **false drop**: a dropped topology within the zone of the true best (across
  sizes: the geometric mean over the sizes asked for); a race with any counts;
- **wrong pick**: a winner more than the zone slower than the true best;
- **wrong tie**: a tie naming one more than the zone slower than the true best;
- **incomplete tie**: a tie that leaves out one within the zone of the true best
  (it was dropped: a false drop too);
- **false size change**: "the best differs by size" where a size it names the
  one faster at is not faster there in truth (or slower where it says slower);
- **missed size change**: the truth's best changes with size by more than the
  zone, and the race did not say so (a power figure, not a promise);
- **right**: a winner, tie or size change with no wrong claim; **unsure**: not
  separated or stopped, with no wrong claim.

Seeds.  The rules were chosen on `TUNING_SEEDS` (and the scenarios' truths that
existed then); the figure is made on `VALIDATION_SEEDS`, which no rule was ever
tuned on (`--seeds tuning` runs the others).  Box scenarios take their truth
from runs they never resample: the median of a topology's first two kept runs
is the truth, each block draws one of its other runs.

Cost: node-seconds (true mean times of the runs made, so noise does not flatter
it) against three fixed designs: the **blocked** design with the race's own test
at one look (b blocks of every topology, b the fewest whose replays answer right
as often as the race; `-` where the race answers right in under 5%), the
**uniform** design (every topology at every size with the fewest runs a side for
which Mann-Whitney, Holm-corrected, can reach the confidence: what `kary plan`
compares with), and one plain iteration.

    python benchmarks/race_replay.py --json benchmarks/results/race-replays-1000.json
    python benchmarks/race_replay.py --from-json benchmarks/results/race-replays-1000.json
    python benchmarks/race_replay.py --replays 100 --only clear-winner --seeds tuning

Exit 1 when a promised scenario's false drops, wrong picks, wrong ties or false
size changes pass 5% (the race's promise at confidence 0.95).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import multiprocessing
import random
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.race.engine import Race, replay, size_order
from experiments.race.plan_model import one_look
from experiments.race.rules import ACROSS, BY_SIZE, PER_SIZE, TIE, WINNER, RaceRules
from experiments.race.rules import uniform_runs_a_side as uniform_a_side

MIB = 2**20
RESULTS = Path(__file__).resolve().parent / "results"
SIZES = [16 * MIB, 32 * MIB, 64 * MIB, 128 * MIB]
CANDIDATES = [f"kary:{k}" for k in range(1, 9)]
WRONG_AT_MOST = 0.05
# Rules were chosen on these seeds only; the figure uses the validation seeds.
TUNING_SEEDS = range(0, 1_000_000)
VALIDATION_SEEDS = range(1_000_000, 2_000_000)
# Replays of a fixed blocked design per block count tried (the comparator's search).
BLOCKED_REPLAYS = 200
PROMISES = ("false_drop", "wrong_pick", "wrong_tie", "false_size")
CLAIMS = (*PROMISES, "incomplete_tie", "missed_size")


@dataclass
class Scenario:
    """A truth and how a run is drawn from it."""

    name: str
    what: str
    candidates: list[str]
    sizes: list[int]
    mode: str
    mean: Callable[[str, int], float]  # true seconds of a candidate at a size
    draw: Callable[[str, int, random.Random], float] | None = None  # one run
    spread: float | Callable[[str], float] = 0.10  # log-normal sigma (or per candidate)
    outlier_every: int = 0  # every n-th block, one candidate takes 3x
    promised: bool = True  # what `kary race` runs by default: held to WRONG_AT_MOST
    samples: dict[str, list[float]] = field(default_factory=dict)

    def sigma(self, candidate: str) -> float:
        return self.spread(candidate) if callable(self.spread) else self.spread


def _linear(ratios: dict[str, float]) -> Callable[[str, int], float]:
    return lambda c, size: ratios[c] * size / MIB / 16


def _scaled(ratio: Callable[[str, int], float]) -> Callable[[str, int], float]:
    """A truth given as a ratio to kary:1 at each size, times a linear size cost."""
    return lambda c, size: ratio(c, size) * size / MIB / 16


def _synthetic() -> list[Scenario]:
    gaps = {c: 1.0 + 0.25 * i for i, c in enumerate(CANDIDATES)}
    close = {
        c: (1.0 if i == 0 else 1.02 if i == 1 else 1.4 + 0.2 * i) for i, c in enumerate(CANDIDATES)
    }
    tied = dict.fromkeys(CANDIDATES, 1.0)
    four_tied = {c: (1.0 if i < 4 else 1.3 + 0.1 * i) for i, c in enumerate(CANDIDATES)}
    small_gaps = {c: 1.0 + 0.1 * i for i, c in enumerate(CANDIDATES)}
    # At the zone's edge (4.5% slower) beside three equal to the best: the case where
    # choosing the leader among equals pushes a drop test hardest.
    edge = {
        c: (1.0 if i < 4 else 1.045 if i == 4 else 1.5 + 0.1 * i) for i, c in enumerate(CANDIDATES)
    }
    fifteen = [f"kary:{k}" for k in range(1, 16)]
    fifteen_ratios = {
        c: (1.0 if i == 0 else 1.03 if i == 1 else 1.12 + 0.05 * i) for i, c in enumerate(fifteen)
    }

    def changing(c: str, size: int) -> float:
        # kary:2 gains with size: 30% slower than kary:1 at 16M, 37% faster at 128M.
        if c == "kary:2":
            return 1.3 * (size / MIB / 16) ** 0.65
        return gaps[c] * size / MIB / 16

    def curved(c: str, size: int) -> float:
        # kary:2 30% slower at 16M, 2% slower at every other size, never faster.
        if c == "kary:2":
            return 1.3 if size == SIZES[0] else 1.02
        return gaps[c]

    def largest_only(c: str, size: int) -> float:
        # kary:2 10% slower than kary:1 up to 64M, 20% faster at 128M.
        if c == "kary:2":
            return 0.8 if size == SIZES[-1] else 1.1
        return gaps[c]

    def noisy(c: str) -> float:
        return 0.25 if c == "kary:2" else 0.05

    near_best = {
        c: (1.0 if i == 0 else 1.03 if i == 1 else 1.3 + 0.1 * i) for i, c in enumerate(CANDIDATES)
    }

    def across(name: str, what: str, mean: Any, **kw: Any) -> Scenario:
        return Scenario(name, what, kw.pop("candidates", CANDIDATES), SIZES, ACROSS, mean, **kw)

    return [
        across("clear-winner", "gaps of 25%, spread 10%", _linear(gaps)),
        across("two-in-zone", "best and a 2% slower one, the rest 60%+ slower", _linear(close)),
        across("all-tied", "every topology alike, spread 10%", _linear(tied)),
        across("all-tied-3.3", "every topology alike, spread 3.3%", _linear(tied), spread=0.033),
        across(
            "four-tied-3.3", "four alike, the rest 70%+ slower, spread 3.3%", _linear(four_tied),
            spread=0.033,
        ),
        across("best-changes-with-size", "kary:1 best at 16M, kary:2 at 128M", changing),
        across(
            "curved", "kary:2 30% slower at 16M, 2% slower elsewhere, never faster",
            _scaled(curved),
        ),
        across(
            "best-only-at-largest", "kary:2 10% slower up to 64M, 20% faster at 128M",
            _scaled(largest_only),
        ),
        across("spread-10", "gaps of 10%, spread 10%", _linear(small_gaps)),
        across("spread-3.3", "gaps of 10%, spread 3.3%", _linear(small_gaps), spread=0.033),
        across("spread-30", "gaps of 10%, spread 30%", _linear(small_gaps), spread=0.30),
        across(
            "outlier-block", "gaps of 25%, and every 7th block one topology takes 3x",
            _linear(gaps), outlier_every=7,
        ),
        across(
            "fifteen-two-in-zone",
            "15 topologies: best, one 3% slower, the rest 17%+ slower, spread 5%",
            _linear(fifteen_ratios), candidates=fifteen, spread=0.05,
        ),
        across(
            "zone-edge", "four alike, one 4.5% slower, the rest 100%+ slower, spread 5%",
            _linear(edge), spread=0.05,
        ),
        across(
            "noisy-near-best", "one 3% slower than the best with spread 25%, the rest spread 5%",
            _linear(near_best), spread=noisy,
        ),
    ]  # fmt: skip


def _resampled() -> list[Scenario]:
    """One scenario per committed box sample set: a race per size on its kept runs.

    The truth is the median of each topology's first two kept runs; blocks draw from
    its other runs only, so no block resamples the runs that set the truth.
    Topologies the box judged CPU-bound there are left out, as `kary race` leaves
    them out by default; where there were some, a second scenario keeps them, as
    `--allow-cpu-bound` would, and says so (not part of the race's promise)."""
    found = []
    for path in sorted(RESULTS.glob("box-topologies-n*.json")):
        data = json.loads(path.read_text())
        size = _bytes(data["size"])
        for speed, by_topo in data["box"].items():
            samples = {t: list(v) for t, v in by_topo.items() if len(v) >= 3}
            provenance = data.get("provenance", {}).get("box", {}).get(speed, {})
            bound = set(provenance.get("cpu_bound", []))
            kept = {t: v for t, v in samples.items() if t not in bound}
            variants = [("", kept, False)]
            if bound:
                variants.append((f" (cpu-bound {', '.join(sorted(bound))} kept)", samples, True))
            for label, chosen, with_bound in variants:
                if len(chosen) < 2:
                    continue
                found.append(_box_scenario(data, speed, size, chosen, label, with_bound))
    return found


def _box_scenario(
    data: dict[str, Any],
    speed: str,
    size: int,
    samples: dict[str, list[float]],
    label: str,
    with_bound: bool,
) -> Scenario:
    truth = {t: statistics.median(v[:2]) for t, v in samples.items()}
    drawn = {t: v[2:] for t, v in samples.items()}
    return Scenario(
        f"box-n{data['nodes']}-{speed}{'-cpu-bound' if with_bound else ''}",
        f"box runs, N={data['nodes']}, {data['size']}, {speed}: truth from 2 runs a "
        f"topology, blocks from the other {min(len(v) for v in drawn.values())}{label}",
        sorted(samples),
        [size],
        PER_SIZE,
        lambda c, _s, m=truth: m[c],
        lambda c, _s, rng, s=drawn: rng.choice(s[c]),
        samples=drawn,
        promised=not with_bound,
    )


def _bytes(label: str) -> int:
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    return int(float(label[:-1]) * units[label[-1].upper()])


def scenarios() -> list[Scenario]:
    return _synthetic() + _resampled()


def _true_times(scenario: Scenario, sizes: list[int]) -> dict[str, float]:
    """Each candidate's geometric mean over `sizes`."""
    return {
        c: math.exp(statistics.fmean(math.log(scenario.mean(c, s)) for s in sizes))
        for c in scenario.candidates
    }


def _truth_changes_with_size(scenario: Scenario, zone: float) -> bool:
    """The best at some size is more than the zone slower than the best at another."""
    if len(scenario.sizes) < 2:
        return False
    bests = {
        min(scenario.candidates, key=lambda c, s=s: scenario.mean(c, s)) for s in scenario.sizes
    }
    if len(bests) < 2:
        return False
    return any(
        scenario.mean(a, s) > scenario.mean(b, s) * (1 + zone)
        for a in bests
        for b in bests
        for s in scenario.sizes
    )


def score(scenario: Scenario, race: Race, zone: float) -> dict[str, Any]:
    """Every claim of the race against the truth (the module docstring)."""
    claims = dict.fromkeys(CLAIMS, False)
    outcomes = []
    for lane in race.lanes:
        sizes = lane.sizes
        true = _true_times(scenario, sizes)
        best = min(true.values())
        within = {c for c, t in true.items() if t <= best * (1 + zone)}
        dropped = {c for d in lane.decisions for c in d.dropped}
        claims["false_drop"] |= bool(dropped & within)
        if lane.outcome == WINNER:
            claims["wrong_pick"] |= lane.survivors[0] not in within
        if lane.outcome == TIE:
            claims["wrong_tie"] |= not set(lane.survivors) <= within
            claims["incomplete_tie"] |= bool(dropped & within)
        if lane.outcome == BY_SIZE:
            claims["false_size"] |= not _size_claim_holds(scenario, lane.decisions[-1].crossing)
        changes = scenario.mode == ACROSS and _truth_changes_with_size(scenario, zone)
        claims["missed_size"] |= changes and lane.outcome != BY_SIZE
        outcomes.append(lane.outcome)
    wrong = any(claims[c] for c in PROMISES)
    decided = all(o in (WINNER, TIE, BY_SIZE) for o in outcomes)
    verdict = "wrong" if wrong else "right" if decided else "unsure"
    return {"verdict": verdict, **claims}


def _size_claim_holds(scenario: Scenario, crossing: dict[str, Any] | None) -> bool:
    """At every size the claim names, the one it calls faster is faster in truth."""
    if not crossing:
        return False
    if "candidate" not in crossing:  # rules before sizes were named: the range's two ends
        small, large, sizes = crossing["faster_small"], crossing["faster_large"], scenario.sizes
        return scenario.mean(small, min(sizes)) < scenario.mean(large, min(sizes)) and (
            scenario.mean(large, max(sizes)) < scenario.mean(small, max(sizes))
        )
    other, leader = crossing["candidate"], crossing["leader"]
    return all(
        scenario.mean(other, s) < scenario.mean(leader, s) for s in crossing["sizes_faster"]
    ) and all(scenario.mean(other, s) > scenario.mean(leader, s) for s in crossing["sizes_slower"])


# The scenarios of this run, by index: the pool's workers are forked after it is
# set, and a scenario's truth (closures) cannot be pickled to them.
_CHOSEN: list[Scenario] = []


def _sampler(scenario: Scenario, rng: random.Random) -> Callable[[str, int, int], float]:
    def sample(c: str, size: int, iteration: int) -> float:
        if scenario.draw is not None:
            value = scenario.draw(c, size, rng)
        else:
            value = scenario.mean(c, size) * math.exp(rng.gauss(0.0, scenario.sigma(c)))
        every = scenario.outlier_every
        outlier = every and iteration % every == every - 1
        if outlier and c == scenario.candidates[iteration % len(scenario.candidates)]:
            value *= 3.0
        return value

    return sample


def replay_one(args: tuple[int, int, RaceRules]) -> dict[str, Any]:
    index, seed, rules = args
    scenario = _CHOSEN[index]
    warnings.simplefilter("ignore")
    start = Race.start(scenario.candidates, scenario.sizes, scenario.mode, rules, seed)
    race = replay(start, _sampler(scenario, random.Random(seed)))
    runs = [(c, b.size_bytes) for b in race.blocks if b.times for c in b.order]
    return {
        **score(scenario, race, rules.zone),
        "outcome": "+".join(sorted({lane.outcome for lane in race.lanes})),
        "blocks": max(len(lane.blocks) for lane in race.lanes),
        "runs": len(runs),
        "seconds": sum(scenario.mean(c, s) for c, s in runs),
    }


def _blocked_seconds(scenario: Scenario, blocks: int) -> float:
    """A fixed design of `blocks` blocks of every topology (per lane: every size)."""
    if scenario.mode == ACROSS:
        order = size_order(scenario.sizes)
        chosen = [order[b % len(order)] for b in range(blocks)]
    else:
        chosen = [s for s in scenario.sizes for _ in range(blocks)]
    return sum(scenario.mean(c, s) for s in chosen for c in scenario.candidates)


def blocked_right(index: int, seeds: range, rules: RaceRules, blocks: int, pool: Any) -> float:
    fixed = one_look(rules, blocks)
    args = [(index, seed, fixed) for seed in seeds[:BLOCKED_REPLAYS]]
    results = pool.map(replay_one, args, chunksize=20)
    return sum(r["verdict"] == "right" for r in results) / len(results)


def cheapest_blocked(
    index: int, seeds: range, rules: RaceRules, target: float, pool: Any
) -> int | None:
    """The fewest blocks (2..max_blocks) whose fixed design answers right as often as
    `target`; None where even max_blocks does not."""
    low, high = 2, rules.max_blocks
    if blocked_right(index, seeds, rules, high, pool) < target:
        return None
    while low < high:
        middle = (low + high) // 2
        if blocked_right(index, seeds, rules, middle, pool) >= target:
            high = middle
        else:
            low = middle + 1
    return low


def run_scenario(index: int, seeds: range, rules: RaceRules, pool: Any) -> dict[str, Any]:
    scenario = _CHOSEN[index]
    started = time.monotonic()
    results = pool.map(replay_one, [(index, seed, rules) for seed in seeds], chunksize=20)
    replays = len(results)
    right = sum(r["verdict"] == "right" for r in results) / replays
    blocked = cheapest_blocked(index, seeds, rules, right, pool) if right >= 0.05 else None
    uniform_n = uniform_a_side(len(scenario.candidates), rules.confidence)
    one_pass = sum(scenario.mean(c, s) for c in scenario.candidates for s in scenario.sizes)
    outcomes: dict[str, int] = {}
    for r in results:
        outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
    return {
        "name": scenario.name,
        "what": scenario.what,
        "promised": scenario.promised,
        "mode": scenario.mode,
        "candidates": len(scenario.candidates),
        "replays": replays,
        "seeds": [seeds.start, seeds.stop],
        **{claim: sum(bool(r[claim]) for r in results) for claim in CLAIMS},
        "right": sum(r["verdict"] == "right" for r in results),
        "unsure": sum(r["verdict"] == "unsure" for r in results),
        "wrong": sum(r["verdict"] == "wrong" for r in results),
        "outcomes": outcomes,
        "median_blocks": statistics.median(r["blocks"] for r in results),
        "median_runs": statistics.median(r["runs"] for r in results),
        "median_seconds": statistics.median(r["seconds"] for r in results),
        "blocked_blocks": blocked,
        "blocked_seconds": _blocked_seconds(scenario, blocked) if blocked else None,
        "uniform_runs_a_side": uniform_n,
        "uniform_seconds": uniform_n * one_pass,
        "plain_seconds": one_pass,
        "replay_seconds": round(time.monotonic() - started, 1),
    }


def _rate(s: dict[str, Any], claim: str) -> str:
    rate = s[claim] / s["replays"]
    over = claim in PROMISES and rate > WRONG_AT_MOST
    return f"{rate:.1%}" + (" (over 5%)" if over else "")


def table(data: dict[str, Any]) -> tuple[str, int]:
    rules = data["rules"]
    seeds = data["seeds"]
    lines = [
        f"race replays: confidence {rules['confidence']:g}, zone {rules['zone']:.0%}, first test "
        f"after {rules['first_test']} blocks, at most {rules['max_blocks']} blocks, "
        f"futility {rules.get('futility', 0.0):.0%}; {data['replays']} replays a scenario on "
        f"the {seeds['name']} seeds {seeds['start']:,}-{seeds['start'] + data['replays'] - 1:,}"
        + (" (never used to choose a rule)" if seeds["name"] == "validation" else ""),
        *([f"engine: {data['engine']}"] if data.get("engine") else []),
        "each claim scored against the truth: a false drop drops one within the zone of the "
        "true best; a wrong pick or tie names one more than the zone slower than it; an "
        "incomplete tie leaves out one within the zone; a false size change names a size where "
        "the one it calls faster is not; missed: the truth's best changes with size and the "
        "race did not say so (a rate of power, not a promise)",
        "",
        "| scenario | topologies | false drops | wrong picks | wrong ties | incomplete ties "
        "| false size changes | missed size changes | right | unsure | median blocks "
        "| node-s / blocked (its blocks) | node-s / uniform | node-s / 1 plain iteration |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    failed = 0
    for s in data["scenarios"]:
        n = s["replays"]
        promised = s.get("promised", True)
        over = any(s[c] / n > WRONG_AT_MOST for c in PROMISES)
        failed += promised and over
        blocked = (
            f"{s['median_seconds'] / s['blocked_seconds']:.2f} ({s['blocked_blocks']})"
            if s["blocked_seconds"]
            else "-"
        )
        lines.append(
            f"| {s['name']}{'' if promised else ' (not promised)'} | {s['candidates']} | "
            + " | ".join(_rate(s, c) for c in CLAIMS)
            + f" | {s['right'] / n:.1%} | {s['unsure'] / n:.1%} | {s['median_blocks']:g} | "
            f"{blocked} | {s['median_seconds'] / s['uniform_seconds']:.2f} | "
            f"{s['median_seconds'] / s['plain_seconds']:.2f} |"
        )
    lines += ["", "| scenario | mode | what | uniform design |", "|---|---|---|---|"]
    for s in data["scenarios"]:
        lines.append(
            f"| {s['name']} | {s['mode']} | {s['what']} | {s['uniform_runs_a_side']} runs a side "
            "at every size |"
        )
    lines.append("")
    verdict = (
        "every promised scenario within" if not failed else f"{failed} promised scenario(s) over"
    )
    lines.append(
        f"{verdict} {WRONG_AT_MOST:.0%} for each kind of claim (not promised: CPU-bound box "
        "topologies, which kary race refuses unless --allow-cpu-bound)"
    )
    return "\n".join(lines) + "\n", 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replays", type=int, default=1000)
    parser.add_argument("--seeds", choices=("validation", "tuning"), default="validation")
    parser.add_argument("--only", action="append", help="scenario name (repeatable)")
    parser.add_argument("--json", type=Path, help="keep the results here")
    parser.add_argument("--from-json", type=Path, help="print kept results, run nothing")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--first-test", type=int, help="a rule other than kary's default (for tuning seeds)"
    )
    args = parser.parse_args(argv)
    if args.from_json:
        data = json.loads(args.from_json.read_text())
    else:
        rules = RaceRules()
        if args.first_test is not None:
            rules = dataclasses.replace(rules, first_test=args.first_test)
        chosen = [s for s in scenarios() if not args.only or s.name in args.only]
        if not chosen:
            print(f"race_replay.py: no scenario named {args.only}", file=sys.stderr)
            return 2
        base = VALIDATION_SEEDS if args.seeds == "validation" else TUNING_SEEDS
        seeds = range(base.start, base.start + args.replays)
        _CHOSEN[:] = chosen
        with multiprocessing.get_context("fork").Pool(args.workers) as pool:
            results = [run_scenario(i, seeds, rules, pool) for i in range(len(chosen))]
        data = {
            "rules": dataclasses.asdict(rules),
            "replays": args.replays,
            "seeds": {"name": args.seeds, "start": seeds.start},
            "scenarios": results,
        }
        if args.json:
            args.json.write_text(json.dumps(data, indent=1) + "\n")
    text, code = table(data)
    print(text, end="")
    return code


if __name__ == "__main__":
    sys.exit(main())
