"""Replay `kary race` on known truths: how often it answers wrongly, and what it spends.

Each scenario is a truth (every candidate's time at every size, or kary's own box
samples) and a way to draw a run from it.  The race (experiments.race.engine, the
engine `kary race` runs) is replayed `--replays` times per scenario, each with
its own seed, and every answer is scored:

- a **winner** is wrong when its true time is more than the zone slower than the
  true best's (across sizes: its geometric mean over the sizes);
- a **tie** is wrong when one of the tied is more than the zone slower than the
  true best;
- **the best differs by size** is wrong unless the truth's best does change with
  size, and then unless it names the true small-end and large-end bests;
- **not separated** (the budget spent) and **stopped** are never wrong: they say
  unsure, and their rate is shown.

Cost: the race's runs and node-seconds (true mean times of the runs it made, so
noise does not flatter it) against the uniform design that could reach the
same confidence (every candidate at every size, with the fewest runs a side
for which Mann-Whitney with Holm can reach it: experiments.race.plan) and
against one plain iteration.

Scenarios: synthetic (a clear winner, two within the zone, all tied, a best
that changes with size, gaps under 10% and 30% spread, an outlier block) and
resampled from the committed box samples (benchmarks/results/box-topologies-
n*.json: each block draws one of a topology's kept runs at random).

    python benchmarks/race_replay.py --json benchmarks/results/race-replays.json
    python benchmarks/race_replay.py --from-json benchmarks/results/race-replays.json
    python benchmarks/race_replay.py --replays 100 --only clear-winner   # quick look

Exit 1 when a scenario's wrong answers pass 5% (the race's promise at 0.95).
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

from experiments.race.engine import Race, replay
from experiments.race.rules import (
    ACROSS,
    BY_SIZE,
    PER_SIZE,
    TIE,
    WINNER,
    RaceRules,
    uniform_runs_a_side,
)

MIB = 2**20
RESULTS = Path(__file__).resolve().parent / "results"
SIZES = [16 * MIB, 32 * MIB, 64 * MIB, 128 * MIB]
CANDIDATES = [f"kary:{k}" for k in range(1, 9)]
WRONG_AT_MOST = 0.05


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
    spread: float = 0.10
    outlier_every: int = 0  # every n-th block, one candidate takes 3x
    changes_with_size: tuple[str, str] | None = None  # (small-end best, large-end best)
    samples: dict[str, list[float]] = field(default_factory=dict)
    promised: bool = True  # what `kary race` runs by default: held to WRONG_AT_MOST


def _linear(ratios: dict[str, float]) -> Callable[[str, int], float]:
    return lambda c, size: ratios[c] * size / MIB / 16


def _synthetic() -> list[Scenario]:
    gaps = {c: 1.0 + 0.25 * i for i, c in enumerate(CANDIDATES)}
    close = {
        c: (1.0 if i == 0 else 1.02 if i == 1 else 1.4 + 0.2 * i) for i, c in enumerate(CANDIDATES)
    }
    tied = dict.fromkeys(CANDIDATES, 1.0)
    small_gaps = {c: 1.0 + 0.1 * i for i, c in enumerate(CANDIDATES)}

    def changing(c: str, size: int) -> float:
        # kary:2 gains with size: 30% slower than kary:1 at 16M, 37% faster at 128M.
        if c == "kary:2":
            return 1.3 * (size / MIB / 16) ** 0.65
        return gaps[c] * size / MIB / 16

    return [
        Scenario(
            "clear-winner", "gaps of 25%, spread 10%", CANDIDATES, SIZES, ACROSS, _linear(gaps)
        ),
        Scenario(
            "two-in-zone",
            "best and a 2% slower one, the rest 60%+ slower",
            CANDIDATES,
            SIZES,
            ACROSS,
            _linear(close),
        ),
        Scenario(
            "all-tied", "every topology alike, spread 10%", CANDIDATES, SIZES, ACROSS, _linear(tied)
        ),
        Scenario(
            "best-changes-with-size",
            "kary:1 best at 16M, kary:2 at 128M",
            CANDIDATES,
            SIZES,
            ACROSS,
            changing,
            changes_with_size=("kary:1", "kary:2"),
        ),
        Scenario(
            "spread-10", "gaps of 10%, spread 10%", CANDIDATES, SIZES, ACROSS, _linear(small_gaps)
        ),
        Scenario(
            "spread-30",
            "gaps of 10%, spread 30%",
            CANDIDATES,
            SIZES,
            ACROSS,
            _linear(small_gaps),
            spread=0.30,
        ),
        Scenario(
            "outlier-block",
            "gaps of 25%, and every 7th block one topology takes 3x",
            CANDIDATES,
            SIZES,
            ACROSS,
            _linear(gaps),
            outlier_every=7,
        ),
    ]


def _resampled() -> list[Scenario]:
    """One scenario per committed box sample set: a race per size on its kept runs.

    Topologies the box judged CPU-bound there (the samples' provenance) are left
    out, as `kary race` leaves them out by default; where there were some, a second
    scenario keeps them, as `--allow-cpu-bound` would, and says so (it is not part
    of the race's promise: its times measure this machine's cores too)."""
    found = []
    for path in sorted(RESULTS.glob("box-topologies-n*.json")):
        data = json.loads(path.read_text())
        size = _bytes(data["size"])
        for speed, by_topo in data["box"].items():
            samples = {t: list(v) for t, v in by_topo.items() if v}
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
    medians = {t: statistics.median(v) for t, v in samples.items()}
    return Scenario(
        f"box-n{data['nodes']}-{speed}{'-cpu-bound' if with_bound else ''}",
        f"box samples, N={data['nodes']}, {data['size']}, {speed}, "
        f"{min(len(v) for v in samples.values())} runs a topology{label}",
        sorted(samples),
        [size],
        PER_SIZE,
        lambda c, _s, m=medians: m[c],
        lambda c, _s, rng, s=samples: rng.choice(s[c]),
        samples=samples,
        promised=not with_bound,
    )


def _bytes(label: str) -> int:
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    return int(float(label[:-1]) * units[label[-1].upper()])


def scenarios() -> list[Scenario]:
    return _synthetic() + _resampled()


def _geo_mean(scenario: Scenario, candidate: str) -> float:
    return math.exp(statistics.fmean(math.log(scenario.mean(candidate, s)) for s in scenario.sizes))


def score(scenario: Scenario, race: Race, zone: float) -> str:
    """right, wrong or unsure for the race's answer (see the module docstring)."""
    lane = race.lanes[0]
    true = {c: _geo_mean(scenario, c) for c in scenario.candidates}
    best = min(true.values())
    if lane.outcome == WINNER:
        if scenario.changes_with_size:
            return "wrong"
        return "wrong" if true[lane.survivors[0]] > best * (1 + zone) else "right"
    if lane.outcome == TIE:
        if scenario.changes_with_size:
            return "wrong"
        return "wrong" if max(true[c] for c in lane.survivors) > best * (1 + zone) else "right"
    if lane.outcome == BY_SIZE:
        crossing = lane.decisions[-1].crossing or {}
        named = (crossing.get("faster_small"), crossing.get("faster_large"))
        return "right" if scenario.changes_with_size == named else "wrong"
    return "unsure"


# The scenarios of this run, by index: the pool's workers are forked after it is
# set, and a scenario's truth (closures) cannot be pickled to them.
_CHOSEN: list[Scenario] = []


def replay_one(args: tuple[int, int, RaceRules]) -> dict[str, Any]:
    index, seed, rules = args
    scenario = _CHOSEN[index]
    warnings.simplefilter("ignore")
    rng = random.Random(seed)

    def sample(c: str, size: int, iteration: int) -> float:
        if scenario.draw is not None:
            value = scenario.draw(c, size, rng)
        else:
            value = scenario.mean(c, size) * math.exp(rng.gauss(0.0, scenario.spread))
        every = scenario.outlier_every
        outlier = every and iteration % every == every - 1
        if outlier and c == scenario.candidates[iteration % len(scenario.candidates)]:
            value *= 3.0
        return value

    start = Race.start(scenario.candidates, scenario.sizes, scenario.mode, rules, seed)
    race = replay(start, sample)
    runs = [(c, b.size_bytes) for b in race.blocks if b.times for c in b.order]
    return {
        "verdict": score(scenario, race, rules.zone),
        "outcome": race.lanes[0].outcome,
        "blocks": len(race.lanes[0].blocks),
        "runs": len(runs),
        "seconds": sum(scenario.mean(c, s) for c, s in runs),
    }


def run_scenario(index: int, replays: int, rules: RaceRules, pool: Any) -> dict[str, Any]:
    scenario = _CHOSEN[index]
    started = time.monotonic()
    results = pool.map(replay_one, [(index, seed, rules) for seed in range(replays)], chunksize=20)
    uniform_n = uniform_runs_a_side(len(scenario.candidates), rules.confidence)
    one_pass = sum(scenario.mean(c, s) for c in scenario.candidates for s in scenario.sizes)
    verdicts = [r["verdict"] for r in results]
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
        "wrong": verdicts.count("wrong"),
        "right": verdicts.count("right"),
        "unsure": verdicts.count("unsure"),
        "outcomes": outcomes,
        "median_runs": statistics.median(r["runs"] for r in results),
        "median_blocks": statistics.median(r["blocks"] for r in results),
        "median_seconds": statistics.median(r["seconds"] for r in results),
        "uniform_runs_a_side": uniform_n,
        "uniform_runs": uniform_n * len(scenario.candidates) * len(scenario.sizes),
        "uniform_seconds": uniform_n * one_pass,
        "plain_seconds": one_pass,
        "replay_seconds": round(time.monotonic() - started, 1),
    }


def table(data: dict[str, Any]) -> tuple[str, int]:
    rules = data["rules"]
    lines = [
        f"race replays: confidence {rules['confidence']:g}, zone {rules['zone']:.0%}, first test "
        f"after {rules['first_test']} blocks, at most {rules['max_blocks']} blocks, "
        f"futility {rules.get('futility', 0.0):.0%}; {data['replays']} replays a scenario",
        "wrong: a winner or tie more than the zone slower than the true best, or a size "
        "change that is not there; unsure: not separated within the budget (or stopped "
        "early for futility)",
        "",
        "| scenario | mode | topologies | wrong | right | unsure | median blocks | runs / uniform "
        "| node-seconds / uniform | node-seconds / 1 plain iteration |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    failed = 0
    for s in data["scenarios"]:
        n = s["replays"]
        wrong = s["wrong"] / n
        promised = s.get("promised", True)
        failed += promised and wrong > WRONG_AT_MOST
        over = " (over 5%)" if wrong > WRONG_AT_MOST else ""
        lines.append(
            f"| {s['name']} | {s['mode']} | {s['candidates']} | {wrong:.1%}{over}"
            f"{'' if promised else ' (not promised)'} | {s['right'] / n:.1%} | "
            f"{s['unsure'] / n:.1%} | {s['median_blocks']:g} | "
            f"{s['median_runs'] / s['uniform_runs']:.2f} | "
            f"{s['median_seconds'] / s['uniform_seconds']:.2f} | "
            f"{s['median_seconds'] / s['plain_seconds']:.2f} |"
        )
    lines += ["", "| scenario | what | uniform design |", "|---|---|---|"]
    for s in data["scenarios"]:
        lines.append(
            f"| {s['name']} | {s['what']} | {s['uniform_runs_a_side']} runs a side at every size "
            f"({s['uniform_runs']} runs) |"
        )
    lines.append("")
    verdict = (
        "every scenario kary race runs by default within"
        if not failed
        else f"{failed} scenario(s) over"
    )
    lines.append(
        f"{verdict} {WRONG_AT_MOST:.0%} wrong answers (not promised: CPU-bound box "
        "topologies, which kary race refuses unless --allow-cpu-bound)"
    )
    return "\n".join(lines) + "\n", 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replays", type=int, default=1000)
    parser.add_argument("--only", action="append", help="scenario name (repeatable)")
    parser.add_argument("--json", type=Path, help="keep the results here")
    parser.add_argument("--from-json", type=Path, help="print kept results, run nothing")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    if args.from_json:
        data = json.loads(args.from_json.read_text())
    else:
        rules = RaceRules()
        chosen = [s for s in scenarios() if not args.only or s.name in args.only]
        if not chosen:
            print(f"race_replay.py: no scenario named {args.only}", file=sys.stderr)
            return 2
        _CHOSEN[:] = chosen
        with multiprocessing.get_context("fork").Pool(args.workers) as pool:
            results = [run_scenario(i, args.replays, rules, pool) for i in range(len(chosen))]
        data = {
            "rules": dataclasses.asdict(rules),
            "replays": args.replays,
            "scenarios": results,
        }  # fmt: skip
        if args.json:
            args.json.write_text(json.dumps(data, indent=1) + "\n")
    text, code = table(data)
    print(text, end="")
    return code


if __name__ == "__main__":
    sys.exit(main())
