"""A cell's instance ends once its entrypoint has left its exit status (initial_exit.py).

The session guard is tested here with plain processes standing in for the
brokers: what it proves (the status is the entrypoint's, nothing of the session
is left, a half-written file is not taken) does not depend on Flux.  Real Flux
cells end this way in every test-instance and box test (tests/flux, tests/box).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from experiments.backends.entry_stamps import stamped
from experiments.backends.flux.session_guard import session_members
from experiments.backends.waiting import communicate_or_stop
from experiments.initial_exit import EXIT_NAME, read_exit_status

GUARD = [sys.executable, "-m", "experiments.backends.flux.session_guard"]


def _guarded(end_file: Path, script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*GUARD, "--end-file", str(end_file), "--", "bash", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        # The guard kills its whole session: it must lead one, as kary starts it.
        start_new_session=True,
    )


def test_the_stamped_entrypoint_leaves_its_exit_status_last(tmp_path: Path) -> None:
    entrypoint = tmp_path / "entrypoint.sh"
    entrypoint.write_text("exit 3\n")
    done = subprocess.run(["bash", str(stamped(entrypoint))], capture_output=True)
    assert done.returncode == 3
    assert read_exit_status(tmp_path / EXIT_NAME) == 3
    # After the stamps: a guard that sees the status finds both stamps written.
    assert (tmp_path / "entry.began").exists() and (tmp_path / "entry.ended").exists()


def test_a_status_not_yet_whole_is_not_taken(tmp_path: Path) -> None:
    status = tmp_path / EXIT_NAME
    assert read_exit_status(status) is None
    for partial in ("", "1", "one\n", "-1\n"):
        status.write_text(partial)
        assert read_exit_status(status) is None, partial
    status.write_text("0\n")
    assert read_exit_status(status) == 0


def test_the_guard_ends_on_the_status_and_kills_what_still_runs(tmp_path: Path) -> None:
    """The command (the brokers' stand-in) goes on after the status is written, as
    brokers run their rc3: the guard exits with the status, output kept, and
    nothing of its session survives to write the marker."""
    end_file, marker = tmp_path / EXIT_NAME, tmp_path / "still-running"
    script = f'echo timed; printf "5\\n" > {end_file}; sleep 60; touch {marker}'
    done = _guarded(end_file, script)
    assert done.returncode == 5, done.stderr
    assert done.stdout == "timed\n"
    assert not marker.exists()


def test_without_a_whole_status_the_guard_waits_for_its_command(tmp_path: Path) -> None:
    """A status written without its newline is never taken: the guard waits for the
    command and exits with the command's own status."""
    end_file, marker = tmp_path / EXIT_NAME, tmp_path / "ran-to-the-end"
    script = f"printf 5 > {end_file}; sleep 0.5; touch {marker}; exit 7"
    done = _guarded(end_file, script)
    assert done.returncode == 7, done.stderr
    assert marker.exists()


def test_the_guards_session_is_empty_when_it_has_ended_on_the_status(tmp_path: Path) -> None:
    end_file = tmp_path / EXIT_NAME
    # A child in a process group of its own (bash's job control), as some of flux
    # start's processes are.
    script = f'set -m; sleep 60 & printf "0\\n" > {end_file}; wait'
    guard = subprocess.Popen(
        [*GUARD, "--end-file", str(end_file), "--", "bash", "-c", script],
        start_new_session=True,
    )
    assert guard.wait(timeout=120) == 0
    assert session_members(guard.pid) == []


# The nested layout's cells end the same way without a guard: kary asks for the status
# while it waits for `flux job attach` (experiments/backends/flux/allocation.py).


def _waited(tmp_path: Path, script: str, timeout: float) -> tuple[bytes, bool, list[str]]:
    """communicate_or_stop on `bash -c script`, ended once tmp_path's entry.exit is whole."""
    proc = subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    called: list[str] = []

    def stop() -> None:
        called.append("stop")
        proc.kill()

    def end_if_over() -> bool:
        if read_exit_status(tmp_path / EXIT_NAME) is None:
            return False
        called.append("end")
        proc.kill()
        return True

    out, _, timed_out = communicate_or_stop(proc, timeout, stop, end_if_over)
    return out, timed_out, called


def test_a_wait_ends_at_the_status_keeps_the_output_and_is_no_timeout(tmp_path: Path) -> None:
    exit_file = tmp_path / EXIT_NAME
    out, timed_out, called = _waited(
        tmp_path, f'echo said; printf "5\\n" >{exit_file}; exec sleep 600', timeout=120
    )
    assert (out, timed_out, called) == (b"said\n", False, ["end"])


def test_without_the_status_a_wait_still_times_out(tmp_path: Path) -> None:
    partial = tmp_path / EXIT_NAME
    out, timed_out, called = _waited(
        tmp_path, f'echo said; printf "5" >{partial}; exec sleep 600', timeout=1
    )
    assert (out, timed_out, called) == (b"said\n", True, ["stop"])


def test_folders_a_nested_instance_cannot_have_are_the_cells_one_line_error(
    tmp_path: Path,
) -> None:
    from experiments.backends.base import BackendError
    from experiments.backends.flux.allocation import _StateFolders

    with pytest.raises(BackendError, match="cannot make the nested instance's folders"):
        _StateFolders(tmp_path, {"TMPDIR": str(tmp_path / "no-such-folder")})
    cell = tmp_path / "cell"
    cell.mkdir()
    made = _StateFolders(cell, {"TMPDIR": str(tmp_path)})
    # Sticky, so each broker makes its own folder inside (flux-core's rundir.c).
    assert made.run.stat().st_mode & 0o1000 and made.state.stat().st_mode & 0o1000
    made.remove()
    assert not made.state.exists()
