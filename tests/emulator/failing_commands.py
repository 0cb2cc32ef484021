"""Make exactly one command of a benchmark run fail, on the emulator or on real Flux.

A wrapper named like the command (`flux`, `openssl`) goes first on the
entrypoint's PATH: the first time its arguments contain a pattern it fails
(or, for openssl, writes a short blob) and leaves a marker file; every other
call execs the real command found on PATH without the wrapper's folder.

The wrapper cannot go first on PATH by the test's environment alone: the
emulator puts its own `flux` first for the entrypoint.  So BASH_ENV names a
file that prepends the wrapper folder: bash reads it before the entrypoint
runs, under either backend; `sh -c` on the other ranks (dash) does not, and
sees the real commands.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.tables.parsed_dir import Parsed, load_parsed
from analysis.tree import parse_tree
from experiments.formats.kary_line import format_kary_line, kary_records

__all__ = ["fail_once", "fired", "rows", "run_and_parse", "short_blob_once"]

REPO = Path(__file__).resolve().parents[2]
KARY = [sys.executable, "-c", "from experiments.cli import main; main()"]

# Finds the real command: PATH without this wrapper's folder.
_REAL = """here={here}
real_path=$(printf '%s' "$PATH" | tr ':' '\\n' | grep -vxF "$here" | paste -sd:)
"""


def _install(folder: Path, name: str, body: str) -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    here = shlex.quote(str(folder))
    script.write_text("#!/bin/bash\n" + _REAL.format(here=here) + body)
    script.chmod(0o755)
    bash_env = folder / "bash-env.sh"
    bash_env.write_text(f"PATH={here}:$PATH\n")
    return {"BASH_ENV": str(bash_env)}


def fail_once(folder: Path, pattern: str) -> dict[str, str]:
    """A `flux` that fails the first call whose arguments hold `pattern`; the env to set."""
    marker = shlex.quote(str(folder / "fired"))
    body = f"""if [[ " $* " == *{shlex.quote(pattern)}* ]] && mkdir {marker} 2>/dev/null; then
    echo "injected failure: flux $*" >&2
    exit 1
fi
PATH=$real_path exec flux "$@"
"""
    return _install(folder, "flux", body)


def short_blob_once(folder: Path, length: int = 1000) -> dict[str, str]:
    """An `openssl` whose first `enc` writes `length` bytes and stops; the env to set."""
    marker = shlex.quote(str(folder / "fired"))
    body = f"""if [ "${{1:-}}" = enc ] && mkdir {marker} 2>/dev/null; then
    head -c {length} /dev/urandom
    exit 0
fi
PATH=$real_path exec openssl "$@"
"""
    return _install(folder, "openssl", body)


def fired(folder: Path) -> bool:
    """True once the wrapper has failed its command: a test that injected nothing proves nothing."""
    return (folder / "fired").is_dir()


def rows(events: pd.DataFrame) -> dict[tuple[str, str], tuple[str, float | None, str]]:
    """(event, size label) -> (status, seconds or None, reason)."""
    out = {}
    columns = (events[name] for name in ("event", "size_label", "status", "reason"))
    times = events["time_seconds"].to_numpy(dtype=float)
    for event, label, status, reason, seconds in zip(*columns, times, strict=True):
        time = None if math.isnan(seconds) else float(seconds)
        out[(str(event), str(label))] = (str(status), time, str(reason))
    return out


def run_and_parse(
    backend: str, scratch: Path, env: dict[str, str], args: list[str]
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], Parsed, Path]:
    """`kary run` of one 4-node kary:2 cell as a separate process, with `env` added,
    then `kary parse`: (the run, run.json, the parsed tables, the parsed folder)."""
    raw, parsed_dir = scratch / "raw", scratch / "parsed"
    command = [*KARY, "run", "--backend", backend, "--exact-nodes", "4", "--topo", "kary:2"]
    command += ["--iters", "1", "--data-dir", str(raw), *args]
    full_env = dict(os.environ, TMPDIR=str(scratch), **env)
    full_env.pop("FLUX_URI", None)
    done = subprocess.run(
        command, env=full_env, cwd=REPO, capture_output=True, text=True, timeout=180
    )
    (record_path,) = raw.glob("**/run.json")
    record = json.loads(record_path.read_text())
    # The template writes its void lines as experiments.formats.kary_line does.
    log = (record_path.parent / "topology-experiment.out").read_text()
    for line in log.splitlines():
        (parsed_line,) = list(kary_records(line)) or [{}]
        if parsed_line and "event" in parsed_line:
            assert line == format_kary_line(parsed_line), line
    parse_tree(raw, parsed_dir, plots=False)
    return done, record, load_parsed(parsed_dir), parsed_dir
