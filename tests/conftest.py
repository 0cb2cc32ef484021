"""Shared fixtures: the reference data in ../shared, and a sealed environment.

No test may reach the network or a real account: the autouse fixture strips
proxy and cloud credential variables and points HOME at a temporary folder.
"""

from __future__ import annotations

import fcntl
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from sealed_environment import sealed
from unavailable import unavailable

# A suite started with SIGINT ignored (`make check &` from a script: POSIX shells
# ignore SIGINT in a non-interactive shell's background jobs) would pass that on:
# Python then installs no Ctrl-C handler, a test's os.kill(SIGINT) does nothing,
# and every kary a test starts inherits the ignored signal.  The tests are about
# Ctrl-C, not about how they were started: Python's own handler is put back, and
# since exec resets a handled signal to its default, so is each child's.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("KARY_SHARED", REPO.parent / "shared"))
REFERENCE = SHARED / "reference"


@pytest.fixture(autouse=True)
def _sealed_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    for name in [n for n in os.environ if sealed(n)]:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    # Caches (the emulator's calibration, `kary bench`'s fidelity) under that HOME too:
    # never a developer's, and never one that another test or pytest -n worker writes.
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    # boto3 must never find real credentials or a real config.
    monkeypatch.setenv("AWS_CONFIG_FILE", str(home / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(home / "aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("KUBECONFIG", str(home / "kubeconfig"))


@pytest.fixture(autouse=True)
def _fewer_race_replays(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A race plan replays its race 200 times (and each fixed blocked design it tries 100):
    seconds a plan, paid by every test that plans a race.  Tests take 40 and 20, the same
    code on fewer seeds; a test marked `full_replays` keeps kary's own counts."""
    if request.node.get_closest_marker("full_replays"):
        return
    import experiments.race.plan_model as plan_model

    monkeypatch.setattr(plan_model, "REPLAYS", 40)
    monkeypatch.setattr(plan_model, "BLOCKED_REPLAYS", 20)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Under pytest-xdist (`make test` runs -n 2), a test marked `alone` runs with no
    other test beside it: from its setup (its module's and session's fixtures too) to
    its teardown it holds a lock exclusively that every other test holds shared.  A
    turnstile taken before the lock lets a waiting `alone` test in before the other
    worker's next test, so a stream of short tests cannot starve it.  Serially: nothing."""
    basetemp = item.config.option.basetemp
    if "PYTEST_XDIST_WORKER" not in os.environ or not basetemp:
        return (yield)
    # A worker's basetemp is the run's pytest-N/popen-gwK: its parent is shared by
    # this run's workers and by no other run on the machine.
    folder = Path(basetemp).parent
    alone = item.get_closest_marker("alone") is not None
    with (folder / "alone.turnstile").open("a") as gate, (folder / "alone.lock").open("a") as lock:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            return (yield)
        finally:
            # Explicitly: a child the test forked (not exec'd) may still share the file.
            fcntl.flock(lock, fcntl.LOCK_UN)


def _reference(*parts: str) -> Path:
    path = REFERENCE.joinpath(*parts)
    if not path.exists():
        unavailable(f"reference data {path} is absent (needs the shared/ folder beside the repo)")
    return path


@pytest.fixture(scope="session")
def flux_distribute() -> Path:
    """../shared/reference/flux-distribute, or skip with the reason."""
    return _reference("flux-distribute")


@pytest.fixture
def minicluster_crd() -> Path:
    """The Flux Operator's MiniCluster CRD, or skip with the reason."""
    return _reference("flux-operator", "flux-framework.org_miniclusters.yaml")


@pytest.fixture
def answering_flux(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `flux` first on PATH that answers `flux version` as flux-core 0.88 does (a plan
    asks it) and nothing else; no FLUX_URI.  Its folder."""
    bin_dir = tmp_path / "answering-flux"
    bin_dir.mkdir()
    (bin_dir / "flux").write_text("#!/bin/sh\necho 'commands:    \t\t0.88.0'\n")
    (bin_dir / "flux").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("FLUX_URI", raising=False)
    return bin_dir
