"""kary_commit: the kary source a run came from, or None where it cannot be told."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from experiments.version import KARY_ROOT, commit_of, kary_commit


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "kary"
    root.mkdir()
    _git(root, "init", "-q")
    (root / "tracked.py").write_text("x = 1\n")
    _git(root, "add", "tracked.py")
    _git(root, "commit", "-q", "-m", "one")
    return root


def test_a_clean_checkout_gives_its_commit_in_12_hex(checkout: Path) -> None:
    assert commit_of(checkout) == _git(checkout, "rev-parse", "HEAD")[:12]


def test_a_changed_tracked_file_marks_the_commit_dirty(checkout: Path) -> None:
    (checkout / "tracked.py").write_text("x = 2\n")
    assert commit_of(checkout) == _git(checkout, "rev-parse", "HEAD")[:12] + "-dirty"


def test_an_untracked_file_leaves_it_clean(checkout: Path) -> None:
    (checkout / "new.py").write_text("y = 1\n")
    assert commit_of(checkout) == _git(checkout, "rev-parse", "HEAD")[:12]


def test_a_folder_that_is_no_checkout_gives_none(tmp_path: Path) -> None:
    assert commit_of(tmp_path) is None


def test_a_folder_inside_a_checkout_is_not_that_checkout(checkout: Path) -> None:
    # An installed kary in a venv inside some repository must not claim its commit.
    inner = checkout / ".venv" / "site-packages"
    inner.mkdir(parents=True)
    assert commit_of(inner) is None


def test_without_git_it_is_none_not_an_error(
    checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(checkout / "nowhere"))
    assert commit_of(checkout) is None


def test_kary_commit_is_asked_once_and_is_this_checkouts() -> None:
    kary_commit.cache_clear()
    got = kary_commit()
    assert kary_commit() == got == commit_of(KARY_ROOT)
    assert kary_commit.cache_info().misses == 1
    assert got is None or re.fullmatch(r"[0-9a-f]{12}(-dirty)?", got)
