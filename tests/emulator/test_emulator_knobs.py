"""The emulator honours the Flux knobs a cell sets: --chunksize cuts the blobs a rank loads."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest
from emulator_helpers import Instance, running_instance


@pytest.fixture(scope="module")
def pair() -> Iterator[Instance]:
    with running_instance(2, "kary:1") as inst:
        yield inst


@pytest.mark.parametrize(("chunksize", "blobs"), [("256K", 8), ("1M", 2), ("0", 1)])
def test_chunksize_sets_how_many_blobs_rank_1_loads(
    pair: Instance, chunksize: str, blobs: int
) -> None:
    folder = pair.prefix(0) / "src"
    folder.mkdir(parents=True, exist_ok=True)
    data = os.urandom(2 * 2**20)
    (folder / "blob").write_bytes(data)
    name = f"c{chunksize}"
    created = pair.flux(
        "archive", "create", "--name", name, f"--chunksize={chunksize}", "-C", str(folder), "blob"
    )
    assert created.returncode == 0, created.stderr
    before = _misses(pair)
    out = pair.prefix(1) / name
    extracted = pair.flux("archive", "extract", "--name", name, "-C", str(out), rank=1)
    assert extracted.returncode == 0, extracted.stderr
    assert (out / "blob").read_bytes() == data
    assert _misses(pair) - before == blobs  # each blob asked of rank 0 once
    pair.flux("archive", "remove", "--name", name)


def _misses(pair: Instance) -> int:
    stats = json.loads(pair.flux("module", "stats", "content", rank=1).stdout)
    return int(stats["emulator"]["misses"])
