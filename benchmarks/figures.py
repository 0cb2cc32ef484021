"""Re-make every README and docs/ figure from its committed command, and check that the
golden file and each page that shows it still read the same (`make figures`).

    .venv/bin/python benchmarks/figures.py            # every figure (seconds)
    .venv/bin/python benchmarks/figures.py --update   # write what the commands make now
    .venv/bin/python benchmarks/figures.py --pages    # the pages' blocks from the golden files
    .venv/bin/python benchmarks/figures.py --timed    # and time the demo (real Flux)

A figure is the whole stdout of a command run on committed data: a plan from
files, tables of kept samples, fits of stored sweeps.  Its golden file
(docs/figures/<name>.txt or .md, benchmarks/figure_files.py) holds that output
byte for byte, and a page shows the golden file between `<!-- figure NAME -->`
markers with a caption naming the command.  The check re-runs each command and
compares the whole output with the golden file (a diff when they differ) and its
exit status with the one kept in docs/figures/exit-codes.json, then
compares every block in README.md and docs/*.md with its golden file; a block
naming no figure, or a figure no page shows, fails too.  `--update` writes the
golden files and the blocks from what the commands make now: review the diff.

Plans are priced as on one fixed day (SOURCE_DATE_EPOCH, PRICED_ON below), so a
catalog's age and a control plane's support tier do not drift with the calendar.
The timed demo is not a figure: it is compared with its stated seconds, fails
outside its factor on an idle machine, and says "unsure" when other work kept the
cores busy (this 2-core machine is shared).  Exit 1 when anything does not match.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("KARY_SHARED", REPO.parent / "shared"))
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from figure_files import (  # noqa: E402
    EXIT_CODES,
    BlockError,
    block_body,
    blocks_in,
    check_name,
    golden_path,
    read_exit_codes,
    replace_blocks,
    write_exit_codes,
)
from machine_load import CpuMeter  # noqa: E402
from pins import differences, installed, pinned  # noqa: E402
from prose_check import problems as prose_problems  # noqa: E402

from analysis.read.workers import usable_cores  # noqa: E402

PYTHON = sys.executable
KARY = [PYTHON, "-c", "from experiments.cli import main; main()"]
# The day every plan figure is priced on (the catalog's age, the control plane's tier).
PRICED_ON = datetime(2026, 11, 26, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Figure:
    name: str
    command: list[str]
    machine: str  # where the data it reads came from
    env: dict[str, str] = field(default_factory=dict)
    text: bool = False  # a script that prints aligned text, not Markdown tables

    def __post_init__(self) -> None:
        check_name(self.name)  # the pages' markers can only hold such a name

    @property
    def markdown(self) -> bool:
        """Most benchmark scripts print Markdown tables (shown as they are); a `kary`
        command, or a script marked `text`, prints aligned text (shown in a fence)."""
        return not self.text and self.command[: len(KARY)] != KARY


@dataclass(frozen=True)
class Timed:
    """A wall time the README states: its seconds, the noise it allows (a factor), and
    the share of the cores other work may keep busy for the comparison to count."""

    name: str
    command: list[str]
    machine: str
    seconds: float
    factor: float = 1.5
    max_busy: float = 0.25


_PLAN_DAY = {"SOURCE_DATE_EPOCH": str(int(PRICED_ON.timestamp()))}
_SEED_HISTORY = str(SHARED / "reference/flux-distribute/parsed-eks-exact-6")
_PLAN_INPUTS = (
    "flux-distribute's EKS 6-node history, clusters/prices.yaml's dated prices as on 2026-11-26, "
    "the levers measured on a 2-core VM with flux-core 0.88"
)


def seed_study_plan(name: str, cluster: str, max_size: int, *flags: str) -> Figure:
    """`kary plan` of flux-distribute's EKS 30-node study (16 topologies, sizes 1 to `max_size`
    GB, one run each) on `cluster`, from files alone, priced on PRICED_ON's day."""
    command = [
        *KARY, "plan", "--cluster", cluster, "--exact-nodes", "30", "--min-size", "1",
        "--max-size", str(max_size), "--iters", "1", *flags, "--history", _SEED_HISTORY,
    ]  # fmt: skip
    return Figure(name, command, f"files alone ({_PLAN_INPUTS})", env=_PLAN_DAY)


def seed_study_race() -> Figure:
    """`kary race --dry-run` of flux-distribute's EKS 30-node question (every design, 1-10 GB,
    random blobs, spot, nested), from files alone, priced on PRICED_ON's day."""
    command = [
        *KARY, "race", "--cluster", "clusters/eks-30-spot.yaml", "--exact-nodes", "30",
        "--min-size", "1", "--max-size", "10", "--blob", "random", "--layout", "nested",
        "--history", _SEED_HISTORY, "--dry-run",
    ]  # fmt: skip
    return Figure("race-plan-seed", command, f"files alone ({_PLAN_INPUTS})", env=_PLAN_DAY)


# How a box race's figure was made (race_box.py reads what the race left).
_BOX_RACE = (
    "a race on this 2-core VM, root, flux-core 0.88 in the box, nothing else running "
    "(race.json, runs.csv and the race's plan.json kept in benchmarks/results/)"
)


FIGURES = [
    seed_study_plan("plan-layouts", "clusters/eks-30.yaml", 10),
    seed_study_race(),
    Figure(
        "race-replays",
        [PYTHON, "benchmarks/race_replay.py", "--from-json",
         "benchmarks/results/race-replays-1000.json"],
        "replays on this 2-core VM (seeded: the same on any machine), the box samples "
        "kept in benchmarks/results/box-topologies-n*.json",
    ),
    Figure(
        "race-replays-before",
        [PYTHON, "benchmarks/race_replay.py", "--from-json",
         "benchmarks/results/race-replays-before-1000.json"],
        "replays on this 2-core VM of the engine at kary commit 05d0fda, scored by today's "
        "benchmarks/race_replay.py (seeded: the same on any machine)",
    ),
    Figure(
        "race-box-n8",
        [PYTHON, "benchmarks/race_box.py", "benchmarks/results/race-box-n8-100Mbit",
         "--plain", "benchmarks/results/box-topologies-n8.json", "--speed", "100Mbit"],
        _BOX_RACE,
    ),
    Figure(
        "race-box-n16-across",
        [PYTHON, "benchmarks/race_box.py", "benchmarks/results/race-box-n16-100Mbit-across",
         "--plain", "benchmarks/results/box-topologies-n16.json", "--speed", "100Mbit"],
        _BOX_RACE,
    ),
    Figure(
        "race-box-n16-64m",
        [PYTHON, "benchmarks/race_box.py", "benchmarks/results/race-box-n16-100Mbit-64M",
         "--plain", "benchmarks/results/box-topologies-n16.json", "--speed", "100Mbit"],
        _BOX_RACE,
    ),
    Figure(
        "cell-overhead",
        [PYTHON, "benchmarks/cell_overhead.py", "--from-json",
         "benchmarks/results/cell-overhead-flux-0.88-2cores.json"],
        "2-core VM, root, flux-core 0.88, nothing else running (the samples kept in "
        "benchmarks/results/)",
    ),
    seed_study_plan(
        "plan-spot", "clusters/eks-30-spot.yaml", 10, "--blob", "random", "--layout", "nested"
    ),
    seed_study_plan(
        "plan-spot-max-8", "clusters/eks-30-spot.yaml", 8, "--blob", "random", "--layout", "nested"
    ),
    Figure(
        "levers",
        [PYTHON, "benchmarks/levers.py", "--from-json",
         "benchmarks/results/levers-flux-0.88-2cores.json", "--markdown"],
        "2-core VM, flux-core 0.88 (the samples kept in benchmarks/results/)",
    ),
    Figure(
        "nested-manifest",
        [PYTHON, "benchmarks/nested_manifest.py"],
        "files alone (the plan of flux-distribute's 30-node study and kary's templates)",
        text=True,
    ),
    Figure(
        "emulator-fidelity",
        [
            PYTHON, "benchmarks/fidelity.py", "--from-json",
            "benchmarks/results/fidelity-flux-0.88-2cores.json",
        ],
        "2-core VM, flux-core 0.88 (the samples kept in benchmarks/results/)",
    ),
    Figure(
        "emulator-fidelity-held-out",
        [
            PYTHON, "benchmarks/fidelity.py", "--from-json",
            "benchmarks/results/fidelity-heldout-n12-128M-flux-0.88-2cores.json",
        ],
        "2-core VM, nothing else running, flux-core 0.88 (the samples kept in benchmarks/results/)",
    ),
    Figure(
        "emulator-fidelity-mis-calibrated",
        [
            PYTHON, "benchmarks/fidelity.py", "--from-json",
            "benchmarks/results/fidelity-miscalibrated-x4-n12-128M-flux-0.88-2cores.json",
        ],
        "2-core VM, nothing else running, flux-core 0.88 (the samples kept in benchmarks/results/)",
    ),
    Figure(
        "box-topologies-n16",
        [PYTHON, "benchmarks/box_topologies.py", "--from-json",
         "benchmarks/results/box-topologies-n16.json"],
        "2-core VM, root, flux-core 0.88 in the box (the samples kept in benchmarks/results/)",
    ),
    Figure(
        "box-fairness",
        [PYTHON, "benchmarks/box_fairness.py", "--from-json",
         "benchmarks/results/box-fairness-n16-100Mbit-64M.json"],
        "2-core VM, root, flux-core 0.88 in the box (the cells kept in benchmarks/results/)",
    ),
    Figure(
        "box-fair-topologies-n16",
        [PYTHON, "benchmarks/box_topologies.py", "--from-json",
         "benchmarks/results/box-fair-topologies-n16.json"],
        "2-core VM, root, flux-core 0.88 in the box (the samples kept in benchmarks/results/)",
    ),
    Figure(
        "box-topologies-n8",
        [PYTHON, "benchmarks/box_topologies.py", "--from-json",
         "benchmarks/results/box-topologies-n8.json"],
        "2-core VM, root, flux-core 0.88 in the box (the samples kept in benchmarks/results/)",
    ),
    Figure(
        "box-model-holdout",
        [PYTHON, "benchmarks/box_model_holdout.py"],
        "2-core VM, flux-core 0.88 in the box (the sweeps kept in benchmarks/results/box-sweeps/)",
    ),
    Figure(
        "box-topologies-n12",
        [PYTHON, "benchmarks/box_topologies.py", "--from-json",
         "benchmarks/results/box-topologies-n12.json"],
        "2-core VM, root, flux-core 0.88 in the box (the samples kept in benchmarks/results/)",
    ),
    Figure(
        "box-topologies-n20",
        [PYTHON, "benchmarks/box_topologies.py", "--from-json",
         "benchmarks/results/box-topologies-n20.json"],
        "2-core VM, root, flux-core 0.88 in the box (the samples kept in benchmarks/results/)",
    ),
    Figure(
        "box-model-holdout-v2",
        [PYTHON, "benchmarks/box_model_holdout.py", "--protocol",
         "benchmarks/box_model_protocol_v2.json"],
        "2-core VM, flux-core 0.88 in the box (the sweeps kept in benchmarks/results/box-sweeps/)",
    ),
    Figure(
        "blob-kinds",
        [PYTHON, "benchmarks/blob_kinds.py", "--from-json",
         "benchmarks/results/blob-kinds-flux-0.88-2cores.json"],
        "2-core VM, root, flux-core 0.88 in the box, helpers' work beside it (the samples "
        "kept in benchmarks/results/)",
    ),
    Figure(
        "local-model-protocol",
        [PYTHON, "benchmarks/model_holdout.py", "--protocol",
         "benchmarks/model_holdout_protocol.json"],
        "2-core VM, flux-core 0.88 test instances, nothing else running (pass-3, kept in "
        "benchmarks/results/model-sweeps/)",
        text=True,
    ),
    Figure(
        "local-model-holdout",
        [PYTHON, "benchmarks/model_holdout.py", "--sweeps",
         "benchmarks/results/model-sweeps/pass-1", "--sweeps",
         "benchmarks/results/model-sweeps/pass-2"],
        "2-core VM, flux-core 0.88 test instances, under other load (passes 1-2, kept in "
        "benchmarks/results/model-sweeps/)",
        text=True,
    ),
]  # fmt: skip

DEMO = Timed(
    "demo-wall-time",
    [*KARY, "run", "--exact-nodes", "30", "--topo", "kary:16", "--iters", "1", "--backend", "flux"],
    "an idle 2-core VM, flux-core 0.88 (`flux start --test-size=30`)",
    seconds=25.0,
    factor=1.5,
)
PAGES = ("README.md", "docs/*.md")


@dataclass
class Result:
    name: str
    ok: bool | None  # None: unsure (the timed demo on a busy machine)
    seen: str
    detail: list[str] = field(default_factory=list)  # a diff, shown under the table


def _run(command: list[str], env: dict[str, str], cwd: Path) -> tuple[str, int, float]:
    started = time.monotonic()
    done = subprocess.run(
        command,
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    return done.stdout, done.returncode, time.monotonic() - started


def make(figure: Figure) -> tuple[str, int]:
    """The figure's text as its command makes it now, and the command's exit status.

    A plan runs in an empty directory, so its data dir is a fresh `data/raw`
    whatever this checkout holds; every path it reads is given whole."""
    if figure.command[: len(KARY)] == KARY:
        with tempfile.TemporaryDirectory(prefix="kary-figure-") as scratch:
            env = {**figure.env, "PYTHONPATH": str(REPO)}
            out, code, _ = _run(_absolute(figure.command), env, Path(scratch))
        return out, code
    out, code, _ = _run(figure.command, figure.env, REPO)
    return out, code


def made(figures: list[Figure]) -> list[tuple[str, int]]:
    """`make` of every figure, in order, the commands run side by side.

    Each is a child process on committed data (its own scratch folder), CPU-bound
    and independent of the others: one per usable core, not one after another.
    """
    with ThreadPoolExecutor(max_workers=usable_cores()) as pool:
        return list(pool.map(make, figures))


def _absolute(command: list[str]) -> list[str]:
    """Repository-relative paths in a command made absolute (for a run elsewhere)."""
    return [str(REPO / part) if (REPO / part).is_file() else part for part in command]


def check_golden(figure: Figure, text: str, code: int) -> Result:
    """The command's output and its exit status both as kept: a hold-out that starts
    to pass (or to fail) changes its figure even when its table reads the same."""
    golden = golden_path(REPO, figure.name, figure.markdown)
    if not golden.exists():
        return Result(figure.name, False, f"no golden file {golden.relative_to(REPO)}")
    kept_code = read_exit_codes(REPO).get(figure.name)
    if kept_code is None:
        return Result(figure.name, False, f"no exit status kept for it in {EXIT_CODES}")
    kept = golden.read_text()
    if text == kept and code == kept_code:
        return Result(figure.name, True, f"{len(text.splitlines())} lines, same, exit {code}")
    if text == kept:
        return Result(figure.name, False, f"exit {code}, its golden file says exit {kept_code}")
    diff = difflib.unified_diff(
        kept.splitlines(), text.splitlines(), str(golden.relative_to(REPO)), "now", lineterm=""
    )
    status = f" (exit {code}, kept {kept_code})" if code != kept_code else ""
    return Result(figure.name, False, f"differs from its golden file{status}", list(diff)[:60])


def caption(figure: Figure) -> str:
    code = read_exit_codes(REPO).get(figure.name, 0)
    exits = f", which exits {code}," if code else ""
    return (
        f"<sub>Made by `{shown(figure.command)}`{exits} from {figure.machine}; "
        f"`make figures` re-makes and checks it "
        f"(docs/figures/{golden_path(REPO, figure.name, figure.markdown).name}).</sub>"
    )


def expected_body(figure: Figure) -> str:
    golden = golden_path(REPO, figure.name, figure.markdown)
    text = golden.read_text() if golden.exists() else ""
    return block_body(text, figure.markdown, caption(figure))


def pages() -> list[Path]:
    return sorted({p for pattern in PAGES for p in REPO.glob(pattern)})


def check_prose() -> Result:
    """benchmarks/prose_check.py: no cent figure in prose that no figure of its page shows,
    no long sentence said twice in a page."""
    found = prose_problems()
    return Result("prose", not found, f"{len(found)} problems", found)


def check_pages(figures: list[Figure]) -> list[Result]:
    """Every block in every page matches its golden file; every figure is shown somewhere."""
    known = {f.name: f for f in figures}
    shown_in: dict[str, list[str]] = {f.name: [] for f in figures}
    results = []
    for page in pages():
        where = str(page.relative_to(REPO))
        try:
            blocks = blocks_in(page.read_text(), where)
        except BlockError as error:
            results.append(Result(where, False, str(error)))
            continue
        for block in blocks:
            place = f"{where}:{block.line}"
            if block.name not in known:
                results.append(Result(place, False, f"no figure is named {block.name!r}"))
                continue
            shown_in[block.name].append(place)
            want = expected_body(known[block.name])
            if block.body != want:
                diff = difflib.unified_diff(
                    want.splitlines(), block.body.splitlines(), "golden", place, lineterm=""
                )
                results.append(
                    Result(
                        place, False, f"{block.name} differs from its golden file", list(diff)[:40]
                    )
                )
    for name, places in shown_in.items():
        if not places:
            results.append(Result(name, False, "no page shows it (README.md, docs/*.md)"))
        else:
            results.append(Result(name, True, "shown in " + ", ".join(places)))
    return results


def update(figures: list[Figure], commands: bool = True) -> list[Result]:
    """Write each golden file from its command (unless `commands` is False), then every
    page's blocks from the golden files."""
    results = []
    codes = read_exit_codes(REPO)
    remade = list(zip(figures, made(figures), strict=True)) if commands else []
    for figure, (text, code) in remade:
        golden = golden_path(REPO, figure.name, figure.markdown)
        golden.parent.mkdir(parents=True, exist_ok=True)
        if code != 0 and not text:
            results.append(Result(figure.name, False, f"the command exited {code} with no output"))
            continue
        same = golden.exists() and golden.read_text() == text and codes.get(figure.name) == code
        golden.write_text(text)
        codes[figure.name] = code
        results.append(Result(figure.name, True, "unchanged" if same else "written"))
    if commands:
        write_exit_codes(REPO, codes)
    bodies = {f.name: expected_body(f) for f in figures}
    for page in pages():
        old = page.read_text()
        new = replace_blocks(old, bodies)
        if new != old:
            page.write_text(new)
            results.append(Result(str(page.relative_to(REPO)), True, "blocks rewritten"))
    return results


def check_timed(figure: Timed) -> Result:
    with tempfile.TemporaryDirectory(prefix="kary-figure-") as scratch:
        meter = CpuMeter()
        command = [*figure.command, "--data-dir", str(Path(scratch) / "raw")]
        out, _, seconds = _run(command, {}, REPO)
        busy = meter.others()  # not the run's own work: what else used the cores
    if not re.search(r"\b1 succeeded, 0 failed", out):
        return Result(
            figure.name, False, f"the run did not succeed: {out.strip().splitlines()[-1:]}"
        )
    return judge_time(figure, seconds, busy)


def judge_time(figure: Timed, seconds: float, busy: float) -> Result:
    """Inside the stated factor: ok; outside it on an idle machine: FAIL; busy: unsure."""
    low, high = figure.seconds / figure.factor, figure.seconds * figure.factor
    seen = (
        f"{seconds:.1f} s (stated {figure.seconds:g} s, x{figure.factor:g}); "
        f"other work kept {busy:.0%} of the cores busy"
    )
    if low <= seconds <= high:
        return Result(figure.name, True, seen)
    if busy > figure.max_busy:
        return Result(figure.name, None, f"{seen}: unsure, more than {figure.max_busy:.0%}")
    return Result(figure.name, False, seen)


def shown(command: list[str]) -> str:
    """The command as a reader types it from the repository: `kary ...` or `python ...`."""
    words = [_relative(part) for part in command]
    if command[: len(KARY)] == KARY:
        return " ".join(["kary", *words[len(KARY) :]])
    return " ".join(["python", *words[1:]])


def _relative(part: str) -> str:
    if part.startswith(str(SHARED)):
        return "../shared" + part[len(str(SHARED)) :]
    return part


def listing(figures: list[Figure]) -> str:
    """A Markdown table of every figure, the pages that show it and the command that makes it."""
    places: dict[str, list[str]] = {f.name: [] for f in figures}
    for page in pages():
        where = str(page.relative_to(REPO))
        try:
            blocks = blocks_in(page.read_text(), where)
        except BlockError:
            continue
        for block in blocks:
            places.setdefault(block.name, []).append(where)
    lines = ["| figure | shown in | command |", "|---|---|---|"]
    for figure in figures:
        shown_in = ", ".join(dict.fromkeys(places[figure.name])) or "-"
        lines.append(f"| {figure.name} | {shown_in} | `{shown(figure.command)}` |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="write golden files and blocks")
    parser.add_argument(
        "--pages", action="store_true", help="rewrite the pages' blocks from the golden files"
    )
    parser.add_argument("--timed", action="store_true", help="also time the demo (real Flux)")
    parser.add_argument("--only", action="append", default=[], help="this figure alone")
    parser.add_argument(
        "--list", action="store_true", help="every figure: the pages that show it, its command"
    )
    args = parser.parse_args(argv)
    if args.list:
        print(listing(FIGURES), end="")
        return 0
    figures = [f for f in FIGURES if not args.only or f.name in args.only]
    if args.update or args.pages:
        results = update(figures, commands=args.update)
    else:
        results = [check_golden(f, *out) for f, out in zip(figures, made(figures), strict=True)]
        results += check_pages(FIGURES)
        results.append(check_prose())
    if args.timed:
        results.append(check_timed(DEMO))
    print("| figure | result | what was seen |")
    print("|---|---|---|")
    for result in results:
        word = {True: "ok", False: "FAIL", None: "unsure"}[result.ok]
        print(f"| {result.name} | {word} | {result.seen} |")
    for result in results:
        if result.detail:
            print(f"\n{result.name}:")
            print("\n".join(result.detail))
    failed = sum(r.ok is False for r in results)
    drift = differences(pinned(), installed())
    if failed and drift:  # the first question a differing figure raises
        print("\npackages that differ from constraints.txt (the figures were made with its pins):")
        print("\n".join(f"  {line}" for line in drift))
    print(f"{len(results) - failed} of {len(results)} checks pass" + (": FAIL" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
