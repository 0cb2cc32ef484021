"""`kary race` end to end on a fake backend (cells' logs made with chosen times), on the
emulator and on a real-Flux test instance: stops, ties, voids, resume, refusal, budget."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from fake_backend import FakeBackend, fake_log
from typer.testing import CliRunner

from experiments.backends import RunResult
from experiments.cli import app
from experiments.errors import UserError
from experiments.formats.race_state import read_race
from experiments.formats.run_record import read_record
from experiments.model.sweep import Sweep
from experiments.race.rules import ACROSS, TIE, WINNER, RaceRules
from experiments.race.run import plan_race, run_race

MIB = 2**20


def _sweep(data_dir: Path, topos: list[str], **extra: object) -> Sweep:
    return Sweep(
        **{  # type: ignore[arg-type]
            "exact_nodes": 4,
            "topos": topos,
            "sizes": "1M,2M,4M",
            "backend": "local",
            "data_dir": data_dir,
            "seed": 11,
            **extra,
        }
    )


def _backend(
    means: dict[str, float],
    spread: float = 0.03,
    fail: set[int] = frozenset(),
    stop_at: int | None = None,
):  # type: ignore[assignment]
    noise = random.Random(5)
    made: list[FakeBackend] = []
    calls = [0]

    def handler(cell, rendered, timeout):  # type: ignore[no-untyped-def]
        calls[0] += 1
        if stop_at is not None and calls[0] == stop_at:
            raise KeyboardInterrupt
        seconds = means[cell.topo] * cell.sizes[0] / MIB * math.exp(noise.gauss(0, spread))
        failed = (
            {"distribute-all-nodes"} if cell.iteration in fail and cell.topo == "kary:2" else set()
        )
        return RunResult(
            log=fake_log(cell, failed=failed, seconds=seconds, cold_cache=True),
            rc=1 if failed else 0,
        )

    def make(name, settings):  # type: ignore[no-untyped-def]
        backend = FakeBackend(handler)
        made.append(backend)
        return backend

    make.calls = calls  # type: ignore[attr-defined]
    return make


def test_a_race_stops_early_on_a_clear_winner(tmp_path: Path) -> None:
    planned = plan_race(_sweep(tmp_path, ["kary:1", "kary:2", "kary:3"]), RaceRules(), ACROSS)
    outcome = run_race(
        planned,
        make_backend=_backend({"kary:1": 1.0, "kary:2": 1.8, "kary:3": 3.0}),
        echo=lambda _: None,
    )
    race = outcome.race
    assert outcome.exit_code == 0
    assert race.lanes[0].outcome == WINNER and race.lanes[0].survivors == ["kary:1"]
    assert len(race.blocks) == RaceRules().first_test < RaceRules().max_blocks
    # Every race cell is an ordinary cell of the raw tree, one size each, succeeded.
    record = read_record(tmp_path / "4" / "kary-2" / "0")
    assert record is not None and record.state == "succeeded" and record.sizes == [MIB]
    kept = read_race(tmp_path)
    assert kept is not None and kept.race["lanes"][0]["outcome"] == WINNER


def test_a_race_states_a_tie_inside_the_zone(tmp_path: Path) -> None:
    rules = RaceRules(first_test=5, max_blocks=20)
    planned = plan_race(_sweep(tmp_path, ["kary:1", "kary:2"]), rules, ACROSS)
    outcome = run_race(
        planned,
        make_backend=_backend({"kary:1": 1.0, "kary:2": 1.0}, spread=0.005),
        echo=lambda _: None,
    )
    lane = outcome.race.lanes[0]
    assert lane.outcome == TIE
    from experiments.race.answer import answer_text

    assert answer_text(outcome.race).startswith("tie within 5% at 95% confidence: kary:1, kary:2")


def test_a_race_never_drops_on_a_voided_block_and_runs_it_again(tmp_path: Path) -> None:
    planned = plan_race(_sweep(tmp_path, ["kary:1", "kary:2", "kary:3"]), RaceRules(), ACROSS)
    lines: list[str] = []
    outcome = run_race(
        planned,
        make_backend=_backend({"kary:1": 1.0, "kary:2": 1.8, "kary:3": 3.0}, fail={1}),
        echo=lines.append,
    )
    race = outcome.race
    void = race.blocks[1]
    assert void.void is not None and "4/kary-2/1 failed" in void.void
    assert 1 not in race.lanes[0].blocks
    assert race.blocks[2].size_bytes == void.size_bytes
    assert any("void, runs again" in line for line in lines)
    assert race.lanes[0].decisions[-1].blocks == len(race.lanes[0].blocks)
    assert race.lanes[0].outcome == WINNER
    # The void block stopped at its failed cell: the cells after it never ran, and
    # the race counts only the runs it paid for.
    failed_at = void.order.index("kary:2")
    assert failed_at < len(void.order) - 1  # a cell came after it in the order
    ran = [(tmp_path / "4" / topo.replace(":", "-") / "1").is_dir() for topo in void.order]
    assert ran == [i <= failed_at for i in range(len(void.order))]
    assert void.ran == failed_at + 1
    assert race.runs() == sum(len(b.order) for b in race.blocks if b.times) + failed_at + 1


def test_a_race_reads_each_cells_record_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cell is judged before the next one starts (so a void block stops early); the
    block's verdict reuses those judgements rather than reading every run.json again."""
    import experiments.race.blocks as blocks

    reads: list[Path] = []

    def counted(folder: Path):  # type: ignore[no-untyped-def]
        reads.append(Path(folder))
        return read_record(folder)

    monkeypatch.setattr(blocks, "read_record", counted)
    planned = plan_race(_sweep(tmp_path, ["kary:1", "kary:2", "kary:3"]), RaceRules(), ACROSS)
    outcome = run_race(
        planned,
        make_backend=_backend({"kary:1": 1.0, "kary:2": 1.8, "kary:3": 3.0}),
        echo=lambda _: None,
    )
    assert outcome.race.runs() == len(reads) > 0
    assert len(set(reads)) == len(reads)


def test_a_race_resumes_after_ctrl_c_reusing_the_cells_it_ran(tmp_path: Path) -> None:
    means = {"kary:1": 1.0, "kary:2": 1.8, "kary:3": 3.0}
    sweep = _sweep(tmp_path, list(means))
    first = _backend(means, stop_at=8)
    outcome = run_race(
        plan_race(sweep, RaceRules(), ACROSS), make_backend=first, echo=lambda _: None
    )
    assert outcome.interrupted and outcome.exit_code == 130
    kept = read_race(tmp_path)
    assert kept is not None
    pending = [b for b in kept.race["blocks"] if b["times"] is None and b["void"] is None]
    assert [b["iteration"] for b in pending] == [2]
    again = _backend(means)
    outcome = run_race(
        plan_race(sweep, RaceRules(), ACROSS), make_backend=again, echo=lambda _: None
    )
    assert outcome.exit_code == 0 and outcome.race.lanes[0].outcome == WINNER
    # Block 2's first cell had succeeded before Ctrl-C: it is reused, not run again.
    assert again.calls[0] == 3 * RaceRules().first_test - 7  # type: ignore[attr-defined]


def test_a_race_refuses_a_changed_setting(tmp_path: Path) -> None:
    means = {"kary:1": 1.0, "kary:2": 1.8, "kary:3": 3.0}
    run_race(
        plan_race(_sweep(tmp_path, list(means)), RaceRules(), ACROSS),
        make_backend=_backend(means),
        echo=lambda _: None,
    )
    # One line naming what differs, not every rule (issue 60, item 5).
    with pytest.raises(
        UserError, match=r"race.json is a race with rules.zone 0.05, now 0.1: "
    ) as e:
        run_race(
            plan_race(_sweep(tmp_path, list(means)), RaceRules(zone=0.1), ACROSS),
            make_backend=_backend(means),
            echo=lambda _: None,
        )
    assert "confidence" not in str(e.value) and "{" not in str(e.value)
    # Another seed would be another race: refused, not silently ignored.
    with pytest.raises(UserError, match=r"race.json is a race with seed 11, not --seed 12"):
        run_race(
            plan_race(_sweep(tmp_path, list(means), seed=12), RaceRules(), ACROSS),
            make_backend=_backend(means),
            echo=lambda _: None,
        )


def test_a_larger_budget_resumes_a_race_that_was_not_separated(tmp_path: Path) -> None:
    # Two topologies 3% apart at a 3% spread: 3 blocks cannot separate or tie them.
    means = {"kary:1": 1.0, "kary:2": 1.03}
    small = RaceRules(first_test=3, max_blocks=3, futility=0.0)
    first = run_race(
        plan_race(_sweep(tmp_path, list(means)), small, ACROSS),
        make_backend=_backend(means),
        echo=lambda _: None,
    )
    assert first.race.lanes[0].outcome == "not-separated" and len(first.race.blocks) == 3
    spent = first.race.lanes[0].spent()
    larger = RaceRules(first_test=3, max_blocks=6, futility=0.0)
    again = run_race(
        plan_race(_sweep(tmp_path, list(means)), larger, ACROSS),
        make_backend=_backend(means),
        echo=lambda _: None,
    )
    lane = again.race.lanes[0]
    # Its first three blocks and the error their look spent are kept, and it went on.
    assert [b.iteration for b in again.race.blocks[:3]] == [0, 1, 2]
    assert lane.spent()[: len(spent)] == spent and len(again.race.blocks) > 3
    # Looks already taken still count: no look spends past the new budget's alpha.
    assert sum(lane.spent()) <= larger.alpha + 1e-12


def test_the_race_plan_worst_case_holds_max_cost(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["race", "--cluster", "clusters/eks-6.yaml", "--exact-nodes", "6", "--min-size", "1",
         "--max-size", "3", "--max-cost", "3", "--dry-run", "--json", "--data-dir", str(tmp_path)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    cases = {c["key"]: c for c in json.loads(result.output)["cases"]}
    # Uncapped, the worst case (20 blocks of 4) costs more than $3 here.
    assert cases["worst"]["usd"] <= 3.0
    assert cases["best"]["runs"] <= cases["worst"]["runs"] < 20 * 4
    assert "as many as --max-cost pays for" in cases["worst"]["note"]
    assert cases["expected"]["usd"] <= cases["worst"]["usd"]


def test_a_race_whose_budget_misses_the_first_test_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["race", "--cluster", "clusters/eks-6.yaml", "--exact-nodes", "6", "--min-size", "1",
         "--max-size", "3", "--max-cost", "0.5", "--dry-run", "--data-dir", str(tmp_path)],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "does not pay for the race's first test" in result.output


@pytest.mark.slow
def test_a_race_on_the_emulator_records_ordinary_cells_that_parse(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    result = CliRunner().invoke(
        app,
        ["race", "--backend", "local", "--exact-nodes", "4", "--topo", "kary:1", "--topo", "kary:3",
         "--sizes", "1M", "--first-test", "2", "--max-blocks", "2", "--data-dir", str(raw),
         "--seed", "3"],
    )  # fmt: skip
    # Two blocks decide only a clear gap (a paired t-test on one degree of freedom).
    assert result.exit_code in (0, 1), result.output
    answer = result.output.strip().splitlines()[-1]
    assert ("not separated" in answer) == (result.exit_code == 1), answer
    kept = read_race(raw)
    assert kept is not None and len(kept.race["blocks"]) == 2
    assert all(b["times"] for b in kept.race["blocks"])
    parsed = CliRunner().invoke(
        app, ["parse", "--data", str(raw), "--out", str(tmp_path / "p"), "--no-plots"]
    )
    assert parsed.exit_code == 0, parsed.output
    rows = (tmp_path / "p" / "topologies-events.csv").read_text().splitlines()
    assert sum(",distribute-all-nodes," in row for row in rows) == 4


def test_parse_keeps_the_race_and_the_report_shows_it(tmp_path: Path) -> None:
    from analysis.page.builder import build_report
    from analysis.tree import parse_tree

    means = {"kary:1": 1.0, "kary:2": 1.8, "kary:3": 3.0}
    raw = tmp_path / "raw"
    run_race(
        plan_race(_sweep(raw, list(means)), RaceRules(), ACROSS),
        make_backend=_backend(means, fail={1}),
        echo=lambda _: None,
    )
    parsed = tmp_path / "parsed"
    result = parse_tree(raw, parsed, plots=False)
    assert parsed / "race.json" in result.written
    # The race's state is kary's own file at the raw root, not a stray.
    assert [p for p in result.problems if "race.json" in str(p)] == []
    page = build_report([parsed])
    assert "The race</h2>" in page
    assert "fastest within 5% at 95% confidence: kary:1" in page
    # One answer: the per-size verdicts say the race's is the one above them.
    assert "These runs are a race's, and its answer is the one above" in page
    # The look's test is named once; each look's row shows the error it spent.
    assert "Each look's test: paired t-tests on log times" in page
    assert "<th>error spent</th>" in page
    # The chart: kary:2 and kary:3 dropped (a cross each), block 1 voided (hollow squares).
    assert page.count(">✕</text>") == 2
    assert 'fill="none" stroke="#999"' in page
    assert "4/kary-2/1 failed" in page
    assert "(3 of them in voided blocks)" in page
    assert "uniform design that could reach the same confidence 45" in page


def test_a_race_kept_before_a_rule_existed_resumes_with_todays(tmp_path: Path) -> None:
    # race.json written before --futility: its rules lack the key, which is no change
    # of the race (no decision so far used it); a changed zone still is (above).
    means = {"kary:1": 1.0, "kary:2": 1.8, "kary:3": 3.0}
    sweep = _sweep(tmp_path, list(means))
    first = run_race(
        plan_race(sweep, RaceRules(), ACROSS),
        make_backend=_backend(means, stop_at=4),
        echo=lambda _: None,
    )
    assert first.interrupted
    path = tmp_path / "race.json"
    kept = json.loads(path.read_text())
    del kept["settings"]["rules"]["futility"]
    path.write_text(json.dumps(kept))
    again = run_race(
        plan_race(sweep, RaceRules(), ACROSS), make_backend=_backend(means), echo=lambda _: None
    )
    assert again.race.lanes[0].outcome == WINNER


def test_a_nested_race_on_kubernetes_pays_its_minicluster_once_not_per_block(
    tmp_path: Path,
) -> None:
    from types import SimpleNamespace

    from experiments.formats.run_record import NESTED
    from experiments.model.render_nested import FEED_EXPECTED_S
    from experiments.race.plan import _run_and_block_seconds

    def cell_time(topo: str, size: int, distribute: float) -> SimpleNamespace:
        parts = {"overhead": 100.0, "generate": size / MIB, "distribute": distribute}
        return SimpleNamespace(
            cell=SimpleNamespace(topo=topo, sizes=(size,)), parts=parts, seconds=sum(parts.values())
        )

    estimate = SimpleNamespace(
        cells=[cell_time(t, s * MIB, d) for t, d in (("kary:1", 5.0), ("kary:2", 7.0))
               for s in (10, 20)]
    )  # fmt: skip
    runs, blocks, once = _run_and_block_seconds(estimate, NESTED, 6, FEED_EXPECTED_S)
    assert blocks == {10 * MIB: FEED_EXPECTED_S, 20 * MIB: FEED_EXPECTED_S}
    assert once == 100.0 + 10 + 20  # one MiniCluster start, each size's blob once
    assert runs[("kary:2", 10 * MIB)] > runs[("kary:1", 10 * MIB)]
    # Per cell, every run pays its whole cell and nothing is shared.
    runs_apart, blocks_apart, once_apart = _run_and_block_seconds(estimate, "per-cell", 6, 0.0)
    assert blocks_apart == {} and once_apart == 0.0
    assert runs_apart[("kary:1", 10 * MIB)] == 100.0 + 10 + 5.0
    shown = CliRunner().invoke(
        app,
        ["race", "--cluster", "clusters/eks-6.yaml", "--exact-nodes", "6", "--min-size", "1",
         "--max-size", "3", "--layout", "nested", "--dry-run", "--data-dir", str(tmp_path)],
    )  # fmt: skip
    assert shown.exit_code == 0, shown.output
    assert "one allocation for the whole race" in shown.output
    assert f"about {FEED_EXPECTED_S // 60} min" in shown.output


def test_a_race_holds_one_backend_for_all_its_blocks_and_releases_it_inside_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import contextlib

    from experiments.planned import PlannedSweep

    events: list[str] = []
    made: list[FakeBackend] = []

    class Recording(FakeBackend):
        def stay_up(self) -> None:
            events.append("stay up")

        def down(self) -> None:
            super().down()
            events.append("backend down")

    def make(name, settings):  # type: ignore[no-untyped-def]
        means = {"kary:1": 1.0, "kary:2": 1.8, "kary:3": 3.0}
        backend = Recording(_backend(means)("fake", settings).handler)
        made.append(backend)
        return backend

    class Guard:
        cap = type("Cap", (), {"max_usd": None})()

        @contextlib.contextmanager
        def session(self):  # type: ignore[no-untyped-def]
            yield
            events.append("session end")  # where --down tears a cluster down

    monkeypatch.setattr(PlannedSweep, "guard", lambda self, *a, **k: Guard())
    planned = plan_race(_sweep(tmp_path, ["kary:1", "kary:2", "kary:3"]), RaceRules(), ACROSS)
    outcome = run_race(planned, make_backend=make, echo=lambda _: None)
    assert outcome.exit_code == 0 and len(outcome.race.blocks) >= RaceRules().first_test
    assert len(made) == 1 and made[0].downs == 1 and made[0].ups == len(outcome.race.blocks)
    assert events == ["stay up", "backend down", "session end"]
