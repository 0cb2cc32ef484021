"""A kept blob is read whole and checked before a nested cell reuses it (finding 4).

Its pages were last touched a cell or hours earlier, so `direct` and --mmap would
read it cold from disk while a fresh blob sits in the page cache: the entrypoint
reads it whole (hashing it) before the first timed step, and a blob that no
longer matches its sha256 is made anew instead of distributed.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

from experiments.model.render import render_cell

SIZE = 1 << 16


def _functions(script: str, *names: str) -> str:
    """The named bash functions of the rendered entrypoint, as text to source."""
    found = []
    for name in names:
        match = re.search(rf"^{name}\(\) {{\n.*?^}}\n", script, re.M | re.S)
        assert match is not None, name
        found.append(match.group(0))
    return "".join(found)


def _reuse(tmp_path: Path, kept: bytes, sha: str) -> tuple[int, bool]:
    """kary_reuse_blob on a cache holding `kept` with `sha`: its status, and whether the
    kept blob is still there."""
    script = render_cell(4, "kary:2", [SIZE], ["all"], "4/kary-2/0").entrypoint_sh
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / f"blob-random-{SIZE}").write_bytes(kept)
    (cache / f"blob-random-{SIZE}.sha256").write_text(sha + "\n")
    done = subprocess.run(
        [
            "bash",
            "-c",
            _functions(script, "kary_sha256", "kary_reuse_blob")
            + f'KARY_BLOB_CACHE={cache} kary_reuse_blob "$1" {SIZE}',
            "reuse",
            str(tmp_path / "blob"),
        ],
        capture_output=True,
        text=True,
    )
    return done.returncode, (cache / f"blob-random-{SIZE}").exists()


def test_an_intact_kept_blob_is_reused(tmp_path: Path) -> None:
    data = bytes(range(256)) * (SIZE // 256)
    assert _reuse(tmp_path, data, hashlib.sha256(data).hexdigest()) == (0, True)
    assert (tmp_path / "blob").read_bytes() == data


def test_a_kept_blob_that_no_longer_matches_is_made_anew(tmp_path: Path) -> None:
    data = bytes(range(256)) * (SIZE // 256)
    damaged = b"\xff" + data[1:]
    assert _reuse(tmp_path, damaged, hashlib.sha256(data).hexdigest()) == (1, False)
    assert not (tmp_path / "blob").exists()
