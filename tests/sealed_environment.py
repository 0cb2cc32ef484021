"""Which of the caller's environment variables every test runs without (tests/conftest.py)."""

from __future__ import annotations

# Variables a caller's shell may carry that reach a client kary's tests stub (issue
# 60, item 14: with AWS_ENDPOINT_URL set, boto3 sent 23 tests' calls past their stubs):
# every AWS_*, Google Cloud and kube setting and every proxy is cleared, whatever its
# exact name (AWS_ENDPOINT_URL_EC2, no_proxy, ...), before the fixture sets its own.
_SEALED_PREFIXES = ("AWS_", "CLOUDSDK_", "GOOGLE_", "GCE_", "KUBE")
_SEALED_SUFFIXES = ("_PROXY",)


def sealed(name: str) -> bool:
    """Whether the test environment clears variable `name` (case-insensitive)."""
    upper = name.upper()
    return upper.startswith(_SEALED_PREFIXES) or upper.endswith(_SEALED_SUFFIXES)
