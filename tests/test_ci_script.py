""".ci/run says what happens when it cannot install a tool: under the CI=true it
exports, the tests that need the tool fail (tests/unavailable.py), they never skip."""

from __future__ import annotations

from pathlib import Path

import pytest
from unavailable import unavailable

CI_RUN = Path(__file__).resolve().parents[1] / ".ci" / "run"


def test_a_tool_ci_could_not_install_fails_its_tests_and_ci_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = CI_RUN.read_text()
    assert 'export PATH="$FLUX_BIN:$PATH" CI=true' in script
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true but chromium is not installed"):
        unavailable("chromium is not installed")
    assert "will skip" not in script
    said = [
        line for line in script.splitlines() if "could not install" in line or "not root" in line
    ]
    assert len(said) == 2 and all("the tests that need them will fail" in line for line in said)
