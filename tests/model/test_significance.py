"""A study whose iterations cannot reach the report's p < 0.05 is warned of before it runs
(issue 36), and the numbers are the report's own: computed here with its rank test."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from fake_backend import FakeBackend, fake_log
from typer.testing import CliRunner

import experiments.backends
from analysis.tables import stats
from experiments import Sweep, plan, run
from experiments.backends.base import Backend, BackendSettings, RunResult
from experiments.cli import app
from experiments.execution.progress import SilentReporter
from experiments.model import significance
from experiments.model.plan import Cell
from experiments.model.significance import iterations_needed, significance_warning, smallest_p

runner = CliRunner()
WARNING_AT_3 = (
    "warning: with 3 iterations the report cannot tell the 3 topologies at 8 nodes apart: "
    "its test (Mann-Whitney U, two-sided, p < 0.05 against every other) gives at best "
    "p = 0.1 with 3 runs a side; --iters 4 could (at best p = 0.029)"
)


def test_the_constants_are_the_reports() -> None:
    assert significance.ALPHA == stats.ALPHA
    assert significance.MIN_RUNS == stats.MIN_RUNS
    assert significance.TEST_NAME == stats.TEST_NAME


def _p(faster: np.ndarray, slower: np.ndarray) -> float:
    test = stats.rank_test(faster, slower)
    assert test is not None
    return test.p


@pytest.mark.parametrize("runs", range(1, 7))
def test_the_smallest_p_is_the_rank_tests_own(runs: int) -> None:
    # Every run of one side faster than every run of the other: the test's best case.
    assert smallest_p(runs) == pytest.approx(_p(np.arange(runs), np.arange(runs, 2 * runs)))


def test_no_ordering_of_three_runs_a_side_beats_it() -> None:
    timings = np.arange(6.0)
    best = min(
        _p(timings[list(side)], np.delete(timings, list(side)))
        for side in itertools.combinations(range(6), 3)
    )
    assert best == pytest.approx(smallest_p(3)) and best >= stats.ALPHA


def test_the_iterations_needed_are_the_fewest_that_can_decide() -> None:
    need = iterations_needed()
    assert need == 4
    assert smallest_p(need) < stats.ALPHA <= smallest_p(need - 1)


def test_one_design_compares_nothing_and_ping_ranks_nothing() -> None:
    plain = plan(Sweep(exact_nodes=8, topos=["kary:2"], sizes="1M", backend="local"))
    assert significance_warning(plain.plan.cells) is None
    ping = plan(
        Sweep(exact_nodes=8, topos=["kary:1", "kary:2"], backend="local", experiment="ping")
    )
    assert significance_warning(ping.plan.cells) is None


def _plan(tmp_path: Path, iters: int) -> list[str]:
    args = ["plan", "--backend", "local", "--exact-nodes", "8", "--sizes", "1M"]
    args += ["--topo", "kary:1", "--topo", "kary:2", "--topo", "kary:3"]
    result = runner.invoke(app, [*args, "--iters", str(iters), "--data-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def test_the_plan_warns_and_says_how_many_iterations_would_do(tmp_path: Path) -> None:
    assert WARNING_AT_3 in _plan(tmp_path, 3)
    assert not [line for line in _plan(tmp_path, 4) if "cannot tell" in line]


def test_run_warns_before_the_first_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeBackend(lambda cell, rendered, timeout: RunResult(fake_log(cell), 0))

    def make_backend(name: str, settings: BackendSettings | None = None) -> Backend:
        return fake

    monkeypatch.setattr(experiments.backends, "make_backend", make_backend)
    sweep = Sweep(
        exact_nodes=8,
        topos=["kary:1", "kary:2", "kary:3"],
        sizes="1M",
        iterations=3,
        backend="local",
        data_dir=tmp_path,
    )
    said: list[str] = []
    summary = run(plan(sweep), reporter=SilentReporter(), echo=said.append)
    assert summary.exit_code == 0
    assert f"kary run: {WARNING_AT_3}" in said


def test_two_blob_kinds_are_two_comparisons_not_two_runs() -> None:
    """A study of both kinds has one run a side per kind, never two (zeros are never
    ranked against random)."""
    cells = [
        Cell(4, topo, 0, (2**20,), ("all",), blob=blob)
        for topo in ("kary:1", "kary:2")
        for blob in ("random", "zeros")
    ]
    warning = significance_warning(cells)
    assert warning is not None and "with 1 iteration" in warning
    assert "the 2 topologies at 4 nodes" in warning


def test_the_plan_warns_that_zero_blobs_cannot_rank_fan_outs(tmp_path: Path) -> None:
    # Enough iterations for the test, yet every topology is predicted alike: zeros move
    # one chunk, so the plan says so beside the iteration warning.
    args = ["plan", "--backend", "local", "--exact-nodes", "8", "--sizes", "1M", "--iters", "4"]
    args += ["--topo", "kary:1", "--topo", "kary:7", "--data-dir", str(tmp_path)]
    zeros = runner.invoke(app, [*args, "--blob", "zeros"])
    assert zeros.exit_code == 0, zeros.output
    assert (
        "warning: zeros blobs cannot rank fan-outs: each is one distinct chunk, so the 2 "
        "topologies at 8 nodes move almost no data and are predicted alike; --blob random "
        "ranks them (docs/formats.md, blobs)"
    ) in zeros.stdout.splitlines()
    random = runner.invoke(app, args)
    assert random.exit_code == 0 and "cannot rank fan-outs" not in random.stdout
    one = [Cell(8, "kary:2", it, (2**20,), ("all",), blob="zeros") for it in range(4)]
    assert significance.zero_blobs_warning(one) is None  # one topology: nothing ranked


def test_the_formats_page_states_the_runs_a_verdict_needs_as_the_report_does() -> None:
    # The report says "it needs at least 4 runs a side"; the page must not say 3.
    page = " ".join((Path(__file__).parents[2] / "docs" / "formats.md").read_text().split())
    need = iterations_needed()
    assert f"against every other topology with at least {need} runs a side" in page
    assert f"(3 vs 3 gives at best p = {smallest_p(3):.2g})" in page
