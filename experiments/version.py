"""kary's version, recorded in every run.json and parsed tree, and the commit of the
kary checkout the code runs from (`kary_commit`), recorded in every run.json; `git_text`
is the one way kary and its benchmark scripts ask git anything."""

from __future__ import annotations

import os
import subprocess
from functools import cache
from pathlib import Path

__version__ = "0.1.0"

# The folder holding the `experiments` package: a checkout's top, or site-packages.
KARY_ROOT = Path(__file__).resolve().parent.parent


@cache
def kary_commit() -> str | None:
    """The commit (12 hex) of the kary checkout this code runs from, `-dirty` appended when
    tracked files differ from it; None for an installed kary or where git cannot say.

    Asked once per process; a run never fails over it.
    """
    return commit_of(KARY_ROOT)


def commit_of(root: Path) -> str | None:
    """The commit (12 hex, `-dirty` when tracked files differ) of the git checkout whose
    top is `root`; None when `root` is not one (or is only a folder inside one, as
    site-packages in a venv inside a checkout is), or git is missing or fails."""
    top = git_text(root, "rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != Path(root).resolve():
        return None
    head = git_text(root, "rev-parse", "--verify", "HEAD")
    # --no-optional-locks: asking must not take the index lock others may be holding.
    changed = git_text(root, "--no-optional-locks", "status", "--porcelain", "--untracked-files=no")
    if not head or changed is None:
        return None
    return head[:12] + ("-dirty" if changed else "")


def git_text(root: Path, *args: str) -> str | None:
    """git's stripped output, run in `root`; None when git is missing or fails."""
    # GIT_DIR and friends (set inside a git hook) would point git at another repository.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def shallow_clone(root: Path) -> bool:
    """True when `root` is in a shallow git clone: its oldest commits are not there, so
    git cannot say when a file was first committed."""
    return git_text(root, "rev-parse", "--is-shallow-repository") == "true"
