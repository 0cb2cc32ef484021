"""The suite passes in any shell: the variables a caller may carry are cleared per test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sealed_environment import sealed

REPO = Path(__file__).resolve().parent.parent


def test_the_caller_s_cloud_kube_and_proxy_settings_are_cleared() -> None:
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2", "aws_region", "HTTPS_PROXY",
                 "no_proxy", "KUBERNETES_SERVICE_HOST", "CLOUDSDK_CORE_PROJECT"):  # fmt: skip
        assert sealed(name), name
    for name in ("PATH", "HOME", "CI", "TMPDIR", "PYTHONPATH"):
        assert not sealed(name), name
    # Inside a test, none is left but those the fixture sets to files of its own HOME.
    left = {n for n in os.environ if sealed(n)}
    own = {"AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_EC2_METADATA_DISABLED"}
    assert left <= own | {"KUBECONFIG"}


def test_a_test_that_stubs_boto3_passes_with_an_endpoint_set_in_the_shell() -> None:
    # With AWS_ENDPOINT_URL in the caller's environment, boto3 aimed the cluster tests'
    # calls at it instead of their stubs (23 failed before the fixture cleared it).
    env = dict(os.environ, AWS_ENDPOINT_URL="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9")
    test = (
        "tests/clusters/test_cluster_spot.py::"
        "test_eks_up_creates_a_spot_managed_group_of_the_listed_types"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
