"""Validation helpers and atomic files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import yaml

from experiments.errors import UserError
from experiments.files import load_yaml, read_document, write_atomic
from experiments.model.validate import safe_path


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


def test_yaml_is_read_by_libyaml_into_pyyamls_documents_with_pyyamls_errors(
    tmp_path: Path,
) -> None:
    """Every YAML file kary ships reads the same through load_yaml as through
    yaml.safe_load; a refused text gets PyYAML's own words (libyaml's do not name the
    character), in read_document's one line too."""
    repo = Path(__file__).resolve().parents[2]
    shipped = sorted((repo / "clusters").rglob("*.yaml")) + sorted(repo.glob("*.yaml"))
    assert len(shipped) > 3
    for path in shipped:
        text = path.read_text()
        assert load_yaml(text) == yaml.safe_load(text), path
    assert yaml.__with_libyaml__  # PyYAML's wheels carry it: the fast path is the one tested
    bad = tmp_path / "tab.yaml"
    bad.write_text("\tnodes: 4\n")
    with pytest.raises(UserError) as refused:
        read_document(bad, "sweep file", "yaml")
    assert str(refused.value) == (
        f"sweep file {bad} is not valid YAML (line 1, column 1): "
        "found character '\\t' that cannot start any token"
    )


def test_write_atomic_writes_a_text_in_pieces_as_one(tmp_path: Path) -> None:
    """A parse's events table comes in pieces (one per worker's slice), never joined."""
    target = tmp_path / "events.csv"
    long = "é,1.5\n" * 1_000_000  # longer than one encoding step, not ASCII
    write_atomic(target, ["uid,t\n", long, "", "x,2\n"])
    assert target.read_text() == "uid,t\n" + long + "x,2\n"
