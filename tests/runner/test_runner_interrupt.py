"""Ctrl-C and SIGTERM for real: a `kary run` process stopped in the middle of a cell.

What must hold: exit 130, no emulator process left, no half-written cell (the
interrupted cell says so in run.json, the next one was never started), and the
same command run again does only what is missing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "emulator"))
from emulator_helpers import wait_for_no_processes  # noqa: E402


@pytest.fixture
def scratch() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="ki-", dir="/tmp"))
    try:
        yield folder
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)


def _ignore_int_and_hup() -> None:
    """As `nohup kary ... &` from a script starts it: SIGINT and SIGHUP ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


def _kary(data_dir: Path, scratch: Path, nohup: bool = False) -> subprocess.Popen[str]:
    env = dict(os.environ, TMPDIR=str(scratch))
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from experiments.cli import main; main()",
            "run",
            "--exact-nodes",
            "4",
            "--topo",
            "kary:1",
            "--topo",
            "kary:2",
            "--topo",
            "kary:3",
            "--sizes",
            "1M",
            "--backend",
            "local",
            "--data-dir",
            str(data_dir),
        ],
        env=env,
        stdout=subprocess.PIPE,
        # One stream: the summary is on stdout, progress and hints on stderr.
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=_ignore_int_and_hup if nohup else None,
    )


def _state(cell_dir: Path) -> str | None:
    try:
        return str(json.loads((cell_dir / "run.json").read_text())["state"])
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def _signalled_in_cell(
    proc: subprocess.Popen[str], cell_dir: Path, signal_it: Callable[[], None]
) -> str:
    """Once `cell_dir`'s cell runs, `signal_it()`; kary's output when it has ended."""
    try:
        deadline = time.monotonic() + 60
        while _state(cell_dir) != "running" and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        assert _state(cell_dir) == "running"
        signal_it()
        err, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return err


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_leaves_nothing_behind_and_resumes(
    scratch: Path, signum: signal.Signals
) -> None:
    data = scratch / "raw"
    first, second, third = (data / "4" / f"kary-{k}" / "0" for k in (1, 2, 3))
    proc = _kary(data, scratch)

    def interrupt() -> None:
        time.sleep(0.3)  # inside the cell: brokers up, the benchmark going
        proc.send_signal(signum)

    err = _signalled_in_cell(proc, second, interrupt)
    assert proc.returncode == 130, err
    assert "1 succeeded, 0 failed, 1 interrupted" in err
    assert "run the same command again" in err
    assert wait_for_no_processes(str(scratch)) == []
    assert [p.name for p in scratch.iterdir()] == ["raw"]  # emulator folders are gone
    assert _state(first) == "succeeded" and _state(second) == "interrupted"
    assert not third.exists()
    assert [p for p in data.rglob("*") if p.name.startswith(".")] == []  # no temp files
    kept = (first / "run.json").read_bytes(), (first / "run.json").stat().st_mtime_ns

    again = _kary(data, scratch)
    err, _ = again.communicate(timeout=120)
    assert again.returncode == 0, err
    assert "kary run: 2 cells on emulated Flux" in err
    assert "2 succeeded, 0 failed, 1 skipped (1 done before)" in err
    assert _state(second) == _state(third) == "succeeded"
    assert ((first / "run.json").read_bytes(), (first / "run.json").stat().st_mtime_ns) == kept
    moved = list((data / ".replaced").glob("*/4/kary-2/0/run.json"))
    assert [json.loads(p.read_text())["state"] for p in moved] == ["interrupted"]
    assert wait_for_no_processes(str(scratch)) == []


@pytest.mark.slow
def test_a_run_started_with_int_and_hup_ignored_keeps_them_ignored_and_stops_on_term(
    scratch: Path,
) -> None:
    data = scratch / "raw"
    second = data / "4" / "kary-2" / "0"
    proc = _kary(data, scratch, nohup=True)

    def hang_up_then_terminate() -> None:
        # Closing the terminal and Ctrl-C there: the user asked, with nohup, to go on.
        proc.send_signal(signal.SIGHUP)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)  # still stops it, cleanly

    err = _signalled_in_cell(proc, second, hang_up_then_terminate)
    assert proc.returncode == 130, err
    assert ", 1 interrupted" in err  # the cell SIGTERM met, not one that SIGINT/SIGHUP did
    assert wait_for_no_processes(str(scratch)) == []
