"""The plot process forked at the start of a parse: same plots, errors raised in the parse,
nothing left running or lying around after a failure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from analysis_samples import legacy_log, write_cell

# Run in a fresh interpreter: it has one thread, so it may fork (pytest's may not).
_PARSE = """
import json, multiprocessing, sys
from pathlib import Path
import analysis.tree as parse
import analysis.plots.figures as plots
from experiments.errors import UserError
if sys.argv[3] == "plot-bug":
    def broken(parsed):
        raise ValueError("a bug in a plot")
    plots._plan = broken
used = []
import analysis.plots.process as plot_process
original = plot_process.PlotProcess.__init__
def counted(self, *args, **kwargs):
    used.append(1)
    original(self, *args, **kwargs)
plot_process.PlotProcess.__init__ = counted
try:
    parse.parse_tree(Path(sys.argv[1]), Path(sys.argv[2]))
    outcome = "ok"
except (ValueError, UserError) as err:
    outcome = f"{type(err).__name__}: {err}"
print(json.dumps({"outcome": outcome, "plot_process": len(used),
                  "children": len(multiprocessing.active_children())}))
"""


def _parse(raw: Path, out: Path, case: str, tmp: Path) -> dict[str, object]:
    env = {**os.environ, "TMPDIR": str(tmp)}
    done = subprocess.run(
        [sys.executable, "-c", _PARSE, str(raw), str(out), case],
        capture_output=True, text=True, check=True, env=env,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _tree(root: Path) -> Path:
    for iteration in range(3):
        write_cell(root, f"4/kary-2/{iteration}", legacy_log(4, "kary:2", sizes=(1, 2)))
    return root


def test_the_plot_process_draws_what_the_parse_process_would(tmp_path: Path) -> None:
    from analysis import read_tree
    from analysis.plots.figures import write_plots

    raw = _tree(tmp_path / "raw")
    (tmp_path / "tmp").mkdir()
    result = _parse(raw, tmp_path / "out", "ok", tmp_path / "tmp")
    assert result == {"outcome": "ok", "plot_process": 1, "children": 0}
    drawn = write_plots(read_tree(raw, jobs=1)[0], tmp_path / "here", jobs=1)
    names = sorted(p.name for p in drawn)
    assert names == sorted(p.name for p in (tmp_path / "out" / "plots").iterdir())
    for name in names:
        assert (tmp_path / "out" / "plots" / name).read_bytes() == (
            tmp_path / "here" / name
        ).read_bytes()
    assert (tmp_path / "out" / "report.html").is_file()
    assert list((tmp_path / "tmp").iterdir()) == []  # the tables' pickle is gone


def test_a_bug_in_a_plot_is_raised_by_the_parse_and_nothing_is_left_running(
    tmp_path: Path,
) -> None:
    raw = _tree(tmp_path / "raw")
    (tmp_path / "tmp").mkdir()
    result = _parse(raw, tmp_path / "out", "plot-bug", tmp_path / "tmp")
    assert result == {"outcome": "ValueError: a bug in a plot", "plot_process": 1, "children": 0}
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_tree_that_cannot_be_parsed_stops_the_plot_process(tmp_path: Path) -> None:
    empty = tmp_path / "raw"
    empty.mkdir()
    (tmp_path / "tmp").mkdir()
    result = _parse(empty, tmp_path / "out", "ok", tmp_path / "tmp")
    assert result["plot_process"] == 1
    assert str(result["outcome"]).startswith("UserError: --data")
    assert result["children"] == 0
    assert list((tmp_path / "tmp").iterdir()) == []


def test_ctrl_c_during_a_parse_with_plots_leaves_nothing_running_or_half_written(
    tmp_path: Path,
) -> None:
    import signal
    import time

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "emulator"))
    from emulator_helpers import wait_for_no_processes

    raw = tmp_path / "raw"
    for nodes in (4, 8):
        for topo in ("kary:1", "kary:2", "binomial"):
            for iteration in range(4):
                rel = f"{nodes}/{topo.replace(':', '-')}/{iteration}"
                write_cell(raw, rel, legacy_log(nodes, topo, sizes=(1, 2, 4)))
    (tmp_path / "tmp").mkdir()
    out = tmp_path / "out"
    kary = Path(sys.executable).parent / "kary"
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    proc = subprocess.Popen(
        [str(kary), "parse", "--data", str(raw), "--out", str(out)],
        env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        # Ctrl-C as a terminal sends it; a background job would have it ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    try:
        # Into the plotting: the plot process is drawing by then.
        deadline = time.monotonic() + 30
        while not list(out.glob("plots/*.png")) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGINT)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130
    assert wait_for_no_processes(str(tmp_path)) == []
    assert list((tmp_path / "tmp").iterdir()) == []  # the tables' pickle is gone
    assert [p.name for p in out.rglob(".*")] == []  # no half-written file
