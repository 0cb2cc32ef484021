"""Shared fixtures: the reference data in ../shared, and a sealed environment.

No test may reach the network or a real account: the autouse fixture strips
proxy and cloud credential variables and points HOME at a temporary folder.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
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

_SEALED_VARIABLES = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "CLOUDSDK_CONFIG",
    "KUBECONFIG",
)


@pytest.fixture(autouse=True)
def _sealed_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    for name in _SEALED_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    # boto3 must never find real credentials or a real config.
    monkeypatch.setenv("AWS_CONFIG_FILE", str(home / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(home / "aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("KUBECONFIG", str(home / "kubeconfig"))


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
