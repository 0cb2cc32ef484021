"""Run one bash script under a Flux instance (real flux-core, or the emulator) and keep
its output: how the shim tests compare the emulator's `flux` with flux-core's."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def run_script(command: list[str], script: str, scratch: Path, name: str) -> str:
    """`command bash t.sh` in `scratch/name` (exported as $T and $TMPDIR); its stdout.

    FLUX_URI is dropped so that a test run inside an allocation starts its own
    instance.  A non-zero exit fails the test with the script's stderr.
    """
    folder = scratch / name
    folder.mkdir()
    (folder / "t.sh").write_text(script)
    env = dict(os.environ, T=str(folder), TMPDIR=str(folder))
    env.pop("FLUX_URI", None)
    done = subprocess.run(
        [*command, "bash", str(folder / "t.sh")],
        env=env,
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout
