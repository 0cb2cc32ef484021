"""`--backend flux` on real flux-core: a test instance here, and nested in an allocation.

Every test runs `kary` as a separate process, as a user does, with a unique
TMPDIR; a broker left behind still carries that path in its environment, so
`processes_mentioning` finds it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "emulator"))
from emulator_helpers import processes_mentioning, wait_for_no_processes  # noqa: E402

from analysis.tables.parsed_dir import load_parsed  # noqa: E402
from analysis.tree import parse_tree  # noqa: E402
from experiments.formats.kary_line import kary_records  # noqa: E402
from experiments.formats.run_record import KARY_SPANS  # noqa: E402
from experiments.initial_exit import NO_JOB_CLEANUP  # noqa: E402

KARY = [sys.executable, "-c", "from experiments.cli import main; main()"]
CELL = ["--exact-nodes", "4", "--topo", "kary:2", "--iters", "1"]


def _env(scratch: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, TMPDIR=str(scratch), **extra)
    env.pop("FLUX_URI", None)
    return env


def _kary(
    args: list[str], scratch: Path, timeout: float = 180, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KARY, *args],
        env=_env(scratch, **env),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _record(data_dir: Path, cell: str = "4/kary-2/0") -> dict[str, object]:
    record: dict[str, object] = json.loads((data_dir / cell / "run.json").read_text())
    return record


def _flux_version(flux: str) -> str:
    out = subprocess.run([flux, "version"], capture_output=True, text=True, check=True).stdout
    match = re.search(r"^commands:\s+(\S+)", out, flags=re.M)
    assert match, out
    return match.group(1)


def test_a_cell_runs_on_a_real_test_instance_and_parses_like_any_other(
    flux: str, scratch: Path
) -> None:
    data = scratch / "raw"
    args = ["run", *CELL, "--sizes", "4M", "--strategy", "all,leaves,middle"]
    # kary started by a program, not a shell (SHLVL 0): Flux's rc scripts' `bash -c`
    # must still not run the user's ~/.bashrc on every broker (site.flux_env).
    home, bashrc_ran = scratch / "home", scratch / "bashrc-ran"
    home.mkdir()
    (home / ".bashrc").write_text(f"echo $$ >> {bashrc_ran}\n")
    done = _kary([*args, "--data-dir", str(data)], scratch, HOME=str(home), SHLVL="0")
    assert done.returncode == 0, done.stderr
    assert not bashrc_ran.exists(), bashrc_ran.read_text()
    assert "real Flux (flux start --test-size) on this machine" in done.stderr
    record = _record(data)
    assert record["state"] == "succeeded"
    assert record["backend"] == "flux" and record["place"] == "test-instance"
    assert record["flux_version"] == _flux_version(flux)
    # Where the cell's time went: the runner's parts and the test instance's start and stop.
    assert list(record["kary_seconds"]) == list(KARY_SPANS)
    log = (data / "4/kary-2/0/topology-experiment.out").read_text()
    # Each rank extracted into its own folder, and each distribution started cold.
    cold = [r for r in kary_records(log) if r is not None and r.get("meta") == "cold-cache"]
    assert [c["strategy"] for c in cold] == ["all", "leaves", "middle"]
    assert all(c["cached_blobs"] == {"1": 0, "2": 0, "3": 0} for c in cold)
    parse_tree(data, scratch / "parsed", plots=False)
    events = load_parsed(scratch / "parsed").events
    distributes = events[events["event"].str.startswith("distribute-")]
    assert len(distributes) == 4 and set(distributes["status"]) == {"ok"}
    assert (distributes["time_seconds"] > 0).all()
    assert set(events["backend"]) == {"flux"}
    assert wait_for_no_processes(str(scratch)) == []


def test_without_backend_kary_uses_real_flux_when_it_is_on_path(flux: str, scratch: Path) -> None:
    plan = _kary(["plan", *CELL], scratch)
    assert plan.returncode == 0, plan.stderr
    assert "backend flux" in plan.stdout
    no_flux = dict(_env(scratch))
    no_flux["PATH"] = os.pathsep.join(
        p for p in no_flux["PATH"].split(os.pathsep) if not (Path(p) / "flux").exists()
    )
    emulated = subprocess.run(
        [*KARY, "plan", *CELL], env=no_flux, cwd=REPO, capture_output=True, text=True
    )
    assert emulated.returncode == 0, emulated.stderr
    assert "backend local" in emulated.stdout


def test_a_failing_extract_fails_the_cell_and_no_time_is_kept(flux: str, scratch: Path) -> None:
    template = scratch / "template"
    shutil.copytree(REPO / "templates", template)
    entry = template / "entrypoint.sh.j2"
    text = entry.read_text()
    assert 'flux archive extract --name "$1"' in text
    entry.write_text(
        text.replace(
            'flux archive extract --name "$1"', 'flux archive extract --name "no-$1"'
        ).replace("--waitcreate ", "")
    )
    data = scratch / "raw"
    done = _kary(
        ["run", *CELL, "--sizes", "2M", "--template", str(template), "--data-dir", str(data)],
        scratch,
    )
    assert done.returncode == 1, done.stderr
    record = _record(data)
    assert record["state"] == "failed"
    assert "distribute-all-nodes" in str(record["error"])
    parse_tree(data, scratch / "parsed", plots=False)
    events = load_parsed(scratch / "parsed").events
    row = events[events["event"] == "distribute-all-nodes"].iloc[0]
    assert row["status"] == "failed" and row["time_seconds"] != row["time_seconds"]  # NaN


def _start_kary(scratch: Path, args: list[str]) -> subprocess.Popen[str]:
    """`kary ARGS` started in the background, as a user's terminal would."""
    return subprocess.Popen(
        [*KARY, *args],
        env=_env(scratch),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _start_long_cell(scratch: Path, data: Path, *extra: str) -> subprocess.Popen[str]:
    return _start_kary(
        scratch,
        ["run", "--exact-nodes", "8", "--topo", "kary:2", "--sizes", "256M", *extra,
         "--data-dir", str(data)],
    )  # fmt: skip


def _wait_for_brokers(scratch: Path, count: int, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        brokers = [p for p in processes_mentioning(str(scratch)) if "flux-broker" in p]
        if len(brokers) >= count:
            return
        time.sleep(0.2)
    raise AssertionError(
        f"fewer than {count} brokers came up: {processes_mentioning(str(scratch))}"
    )


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL])
def test_ctrl_c_or_a_killed_kary_leaves_no_broker_behind(
    flux: str, scratch: Path, how: signal.Signals
) -> None:
    data = scratch / "raw"
    proc = _start_long_cell(scratch, data)
    try:
        _wait_for_brokers(scratch, 8)
        proc.send_signal(how)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    if how == signal.SIGINT:
        assert proc.returncode == 130
        assert _record(data, "8/kary-2/0")["state"] == "interrupted"
    else:
        assert proc.returncode == -signal.SIGKILL
    assert wait_for_no_processes(str(scratch), 20) == []


def test_a_timeout_stops_the_instance_and_records_timeout(flux: str, scratch: Path) -> None:
    data = scratch / "raw"
    proc = _start_long_cell(scratch, data, "--timeout", "6")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    record = _record(data, "8/kary-2/0")
    assert record["state"] == "timeout"
    assert "timed out after 6 s" in str(record["error"])
    assert wait_for_no_processes(str(scratch), 20) == []


def _in_allocation(
    flux: str, scratch: Path, size: int, args: list[str], then: str = ""
) -> subprocess.CompletedProcess[str]:
    """`kary ARGS` as the initial program of a SIZE-node instance: a user's `flux alloc`;
    `then`, a bash line run in the instance after kary (its status is kary's)."""
    program = [*KARY, *args]
    if then:
        program = ["bash", "-c", f'"$@"; rc=$?; {then}; exit $rc', "kary", *program]
    return subprocess.run(
        [flux, "start", f"--test-size={size}", *program],
        env=_env(scratch),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_inside_an_allocation_each_cell_is_a_nested_batch_job(flux: str, scratch: Path) -> None:
    # All 8 "nodes" of a test instance are this host: the shared-filesystem case.
    data = scratch / "raw"
    jobspec = scratch / "jobspec.json"
    done = _in_allocation(
        flux,
        scratch,
        8,
        ["run", *CELL, "--sizes", "2M", "--strategy", "all,leaves", "--data-dir", str(data)],
        then=f"flux job info --original $(flux jobs -a -no {{id}}) jobspec >{jobspec}",
    )
    assert done.returncode == 0, done.stderr
    assert "nested in this Flux allocation" in done.stderr
    record = _record(data)
    assert record["state"] == "succeeded", record
    assert record["place"] == "allocation"
    assert re.fullmatch(r"f[1-9A-HJ-NP-Za-km-z]+", str(record["jobid"]))
    assert record["hosts"]
    assert record["flux_version"] == _flux_version(flux)
    log = (data / "4/kary-2/0/topology-experiment.out").read_text()
    assert '"size_attr": "4"' in log  # the cell ran in its own 4-broker instance
    # The cell's instance runs no job, so it skips rc1's job cleanup at its stop.
    environment = json.loads(jobspec.read_text())["attributes"]["system"]["environment"]
    name, value = NO_JOB_CLEANUP.split("=")
    assert environment[name] == value
    assert wait_for_no_processes(str(scratch)) == []


def test_inside_an_allocation_a_cell_bigger_than_it_is_refused_before_anything_runs(
    flux: str, scratch: Path
) -> None:
    data = scratch / "raw"
    done = _in_allocation(flux, scratch, 2, ["run", *CELL, "--data-dir", str(data)])
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error" in line.lower()]
    assert errors[0] == (
        "kary: error: cell 4/kary-2/0 needs 4 nodes but this Flux instance has 2: "
        "ask for a bigger allocation or plan fewer nodes"
    )
    assert "Traceback" not in done.stderr
    assert not (data / "4").exists()


def test_a_flux_uri_with_no_instance_behind_it_is_one_line(flux: str, scratch: Path) -> None:
    env = dict(_env(scratch), FLUX_URI=f"local://{scratch}/gone")
    done = subprocess.run(
        [*KARY, "run", *CELL, "--backend", "flux", "--data-dir", str(scratch / "raw")],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("kary: error: cannot ask Flux for its ")
    assert last.endswith("(FLUX_URI is set: is that instance still running?)")
    assert "Traceback" not in done.stderr and not (scratch / "raw" / "4").exists()
