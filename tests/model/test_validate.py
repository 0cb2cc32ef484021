"""Validation helpers and atomic files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from experiments.errors import UserError
from experiments.files import read_document, write_atomic
from experiments.formats.cell_layout import format_size
from experiments.model.validate import parse_size, parse_sizes, safe_path


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("512M", 512 * 2**20),
        ("4G", 4 * 2**30),
        ("20G", 20 * 2**30),
        ("1GiB", 2**30),
        ("1.5G", 3 * 2**29),
        ("64k", 64 * 2**10),
        ("1T", 2**40),
        ("2 GB", 2 * 2**30),
    ],
)
def test_sizes_take_binary_units(text: str, size: int) -> None:
    assert parse_size(text) == size
    assert parse_size(format_size(size)) == size


@pytest.mark.parametrize("text", ["1", "G", "-1G", "1X", "1G;rm", "0M", "0.3K", ""])
def test_bad_sizes_are_user_errors(text: str) -> None:
    with pytest.raises(UserError, match="size"):
        parse_size(text)


def test_size_lists_keep_order_and_refuse_repeats() -> None:
    assert parse_sizes("2G, 512M") == [2 * 2**30, 512 * 2**20]
    with pytest.raises(UserError, match="listed twice"):
        parse_sizes("1G,1024M")


@pytest.mark.parametrize("text", ["/tmp/a b", "/tmp/$(id)", "/tmp/x;y", "", "~/x", "/tmp/`x`"])
def test_paths_that_a_shell_would_read_are_refused(text: str) -> None:
    with pytest.raises(UserError):
        safe_path(text)


def test_write_atomic_replaces_whole_files_with_normal_permissions(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "file.txt"
    write_atomic(target, "one")
    write_atomic(target, b"two")
    assert target.read_text() == "two"
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~mask
    assert [p.name for p in target.parent.iterdir()] == ["file.txt"]  # no temp left


def test_read_document_errors_are_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "x.yaml"
    bad.write_text("a: [")
    with pytest.raises(UserError, match="is not valid YAML"):
        read_document(bad, "thing", "yaml")
    with pytest.raises(UserError, match="thing .* does not exist"):
        read_document(tmp_path / "nope", "thing", "json")
