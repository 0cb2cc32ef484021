"""The emulator's `flux` command against six live brokers: output and exit codes like flux-core."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time

from emulator_helpers import Instance

from experiments.emulator.flux import VERSION
from experiments.model.topology import build_tree, render_overlay

EXTRACT = (
    'mkdir -p "${KARY_RANK_PREFIX:-}/tmp/x" && '
    'flux archive extract --name "$1" --waitcreate --overwrite -C "${KARY_RANK_PREFIX:-}/tmp/x"'
)


def _blob(instance: Instance, name: str, size: int) -> bytes:
    data = os.urandom(size)
    folder = instance.prefix(0) / "tmp" / "kary"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)
    return data


def test_overlay_status_is_flux_cores_text(instance: Instance) -> None:
    result = instance.flux("overlay", "status")
    assert result.returncode == 0
    assert result.stdout == render_overlay(build_tree("kary:2", 6), name="flux-sample")


def test_getattr_version_and_errors(instance: Instance) -> None:
    assert instance.flux("getattr", "size").stdout == "6\n"
    assert instance.flux("getattr", "rank", rank=4).stdout == "4\n"
    bad = instance.flux("getattr", "bogus")
    assert (bad.returncode, bad.stderr) == (1, "flux-getattr: bogus: No such file or directory\n")
    assert instance.flux("version").stdout.splitlines()[0] == f"commands:    \t\t{VERSION}"
    unknown = instance.flux("frobnicate")
    assert unknown.returncode == 1 and "unknown command" in unknown.stderr


def test_exec_runs_as_each_rank_in_parallel(instance: Instance) -> None:
    # A barrier, not a stopwatch: each rank says it started, then waits until all six
    # have; run one after another, rank 0 would wait alone and give up (exit 1).
    barrier = instance.root / "barrier"
    barrier.mkdir()
    wait_for_all = (
        f'touch {barrier}/$(basename "$KARY_RANK_PREFIX"); i=0; '
        f'while [ "$(ls {barrier} | wc -l)" -lt 6 ]; do '
        'i=$((i+1)); [ $i -gt 600 ] && exit 1; sleep 0.1; done; echo "$KARY_RANK_PREFIX"'
    )
    result = instance.flux("exec", "-r", "all", "sh", "-c", wait_for_all)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split()) == sorted(str(instance.prefix(r)) for r in range(6))
    uris = instance.flux("exec", "-r", "3-4", "-x", "4", "sh", "-c", "echo $FLUX_URI").stdout
    assert uris == f"local://{instance.root}/sock/3\n"


def test_exec_reports_failures_like_flux(instance: Instance) -> None:
    result = instance.flux("exec", "-r", "1-2,4", "-x", "4", "sh", "-c", "exit 3")
    assert (result.returncode, result.stderr) == (3, "[1-2]: Exit 3\n")
    one = instance.flux("exec", "-r", "5", "sh", "-c", "exit 2")
    assert (one.returncode, one.stderr) == (2, "5: Exit 2\n")
    killed = instance.flux("exec", "-r", "1", "sh", "-c", "kill -9 $$")
    assert (killed.returncode, killed.stderr) == (137, "1: Killed\n")
    missing = instance.flux("exec", "-r", "2", "/no/such/command")
    assert missing.returncode == 127
    assert missing.stderr == (
        "flux-exec: Error: rank 2: /no/such/command: error launching process: "
        "No such file or directory\n"
    )
    assert instance.flux("exec", "-r", "9", "true").returncode == 68
    empty = instance.flux("exec", "-r", "1", "-x", "1", "true")
    assert (empty.returncode, empty.stderr) == (1, "flux-exec: No targets specified\n")


def test_archive_round_trip_on_every_rank(instance: Instance) -> None:
    data = _blob(instance, "blob", 3 * 2**20 + 12345)  # a partial last blob
    folder = str(instance.prefix(0) / "tmp" / "kary")
    created = instance.flux("archive", "create", "--name", "rt", "--directory", folder, "blob")
    assert created.returncode == 0, created.stderr
    result = instance.flux("exec", "-r", "all", "-x", "0", "sh", "-c", EXTRACT, "x", "rt")
    assert result.returncode == 0, result.stderr
    digest = hashlib.sha256(data).hexdigest()
    for rank in range(1, 6):
        copy = (instance.prefix(rank) / "tmp" / "x" / "blob").read_bytes()
        assert hashlib.sha256(copy).hexdigest() == digest
    again = instance.flux("archive", "create", "-n", "rt", "-C", folder, "blob")
    assert again.returncode == 1 and "archive.rt: key exists" in again.stderr
    assert instance.flux("archive", "create", "-n", "rt", "-C", folder, "--overwrite", "blob")
    no_overwrite = instance.flux("archive", "extract", "-n", "rt", "-C", "tmp/x", rank=3)
    assert no_overwrite.returncode == 1
    assert "blob: write: Attempt to overwrite existing file" in no_overwrite.stderr
    assert instance.flux("archive", "remove", "--name", "rt").returncode == 0
    gone = instance.flux("archive", "extract", "-n", "rt", "-C", "tmp/y", rank=3)
    assert (gone.returncode, gone.stderr) == (
        1,
        "flux-archive: KVS lookup archive.rt: No such file or directory\n",
    )
    assert instance.flux("archive", "remove", "-n", "rt").returncode == 1
    assert instance.flux("archive", "remove", "-n", "rt", "-f").returncode == 0
    # The backing store drops blobs no archive needs any more.
    assert os.listdir(instance.root / "content") == []


def test_extract_waitcreate_waits_for_the_archive(instance: Instance) -> None:
    waiter = subprocess.Popen(
        ["flux", "archive", "extract", "-n", "later", "--waitcreate", "-C", "tmp/w"],
        env=instance.env(5),
        cwd=instance.prefix(5),
    )
    time.sleep(0.5)
    assert waiter.poll() is None
    data = _blob(instance, "later", 1000)
    folder = str(instance.prefix(0) / "tmp" / "kary")
    assert instance.flux("archive", "create", "-n", "later", "-C", folder, "later").returncode == 0
    assert waiter.wait(timeout=10) == 0
    assert (instance.prefix(5) / "tmp" / "w" / "later").read_bytes() == data
    instance.flux("archive", "remove", "-n", "later")


def test_content_cache_is_bounded_by_purge_target_size(instance: Instance) -> None:
    reload = instance.flux(
        "exec", "-r", "1,3", "flux", "module", "reload", "content", "purge-target-size=2097152"
    )
    assert reload.returncode == 0, reload.stderr
    stats = json.loads(instance.flux("module", "stats", "content", rank=3).stdout)
    assert (stats["count"], stats["size"], stats["emulator"]["purge-target-size"]) == (
        0,
        0,
        2097152,
    )
    _blob(instance, "big", 5 * 2**20)
    folder = str(instance.prefix(0) / "tmp" / "kary")
    instance.flux("archive", "create", "-n", "big", "-C", folder, "big")
    extracted = instance.flux("exec", "-r", "3", "sh", "-c", EXTRACT, "x", "big")
    assert extracted.returncode == 0, extracted.stderr
    for rank in (1, 3):
        stats = json.loads(instance.flux("module", "stats", "content", rank=rank).stdout)
        assert stats["size"] <= 2 * 2**20 and stats["count"] == 2
        assert stats["emulator"]["misses"] == 5 and stats["emulator"]["evictions"] == 3
    instance.flux("archive", "remove", "-n", "big")
    instance.flux("exec", "-r", "1,3", "flux", "module", "reload", "content")
