"""scripts/flux-bin, how `make demo` gets real Flux: it says what it waits for
(issue 60, item 1: the demo printed nothing for 3 minutes while another build held
the lock)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "flux-bin"


def _fake_build(tmp_path: Path, prefix: Path) -> Path:
    """A build script that waits for the lock, then builds for 2.5 s, as the real one does."""
    build = tmp_path / "build-flux-core"
    build.write_text(
        "#!/usr/bin/env bash\n"
        f'exec 9>"{prefix}.lock"; flock 9\n'
        f'echo "build-flux-core: building flux-core 0.88.0 into {prefix}" >&2\n'
        "sleep 2.5\n"
        f'echo "{prefix}/bin"\n'
    )
    build.chmod(0o755)
    return build


def _env(prefix: Path) -> dict[str, str]:
    # No flux on this PATH: the script must ask the build.
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(prefix.parent),
        "KARY_FLUX_PREFIX": str(prefix),
        "KARY_PROGRESS_EVERY": "1",
    }


def test_waiting_for_another_build_and_building_are_said_and_the_bin_dir_printed(
    tmp_path: Path,
) -> None:
    prefix = tmp_path / "flux-core-0.88.0"
    build = _fake_build(tmp_path, prefix)
    # Another build holds the lock for the first 3 s.
    other = subprocess.Popen(["flock", f"{prefix}.lock", "sleep", "3"])
    try:
        deadline = time.monotonic() + 10
        while not Path(f"{prefix}.lock").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        done = subprocess.run(
            [str(SCRIPT), str(build)], capture_output=True, text=True, env=_env(prefix), timeout=60
        )
    finally:
        other.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{prefix}/bin"
    said = done.stderr.splitlines()
    assert any(line.startswith("kary: waiting for another build of flux-core") for line in said)
    assert any(line.startswith("kary: still building flux-core") for line in said), said
    # The build's own lines are passed on.
    assert f"build-flux-core: building flux-core 0.88.0 into {prefix}" in said


def test_flux_on_path_asks_nothing_and_no_build_script_says_the_emulator(tmp_path: Path) -> None:
    prefix = tmp_path / "flux-core-0.88.0"
    with_flux = tmp_path / "bin"
    with_flux.mkdir()
    (with_flux / "flux").write_text("#!/bin/sh\n")
    (with_flux / "flux").chmod(0o755)
    env = _env(prefix) | {"PATH": f"{with_flux}{os.pathsep}/usr/bin:/bin"}
    found = subprocess.run(
        [str(SCRIPT), str(tmp_path / "missing")], capture_output=True, text=True, env=env
    )
    assert (found.returncode, found.stdout, found.stderr) == (0, "", "")
    missing = subprocess.run(
        [str(SCRIPT), str(tmp_path / "missing")], capture_output=True, text=True, env=_env(prefix)
    )
    assert missing.returncode == 0 and missing.stdout == ""
    assert "the demo runs kary's emulator" in missing.stderr


def test_make_demo_links_the_flux_it_gets_into_the_venv_for_the_next_commands(
    tmp_path: Path,
) -> None:
    """Issue 60, item 3: after `make demo`, `source .venv/bin/activate` finds the same flux,
    so the README's next command plans real Flux, not the emulator (which would not mix)."""
    prefix = tmp_path / "flux-core-0.88.0"
    build = tmp_path / "build-flux-core"
    build.write_text(f'#!/bin/sh\necho "{prefix}/bin"\n')
    build.chmod(0o755)
    env = _env(prefix) | {"PATH": f"{os.path.dirname(_make())}:/usr/bin:/bin"}
    done = subprocess.run(
        [_make(), "-n", "demo", f"FLUX_BUILD={build}", "PYTHON=python3"],
        cwd=REPO, capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    link = f"ln -sf {prefix}/bin/flux .venv/bin/flux"
    assert link in lines
    run = next(line for line in lines if "kary run --exact-nodes 30 --topo kary:16" in line)
    assert lines.index(link) < lines.index(run) and run.startswith(f'PATH="{prefix}/bin:')


def _make() -> str:
    import shutil

    found = shutil.which("make")
    assert found is not None, "make is not on PATH"
    return found
