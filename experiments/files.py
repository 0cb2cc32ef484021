"""Reading JSON and YAML documents with one-line errors, and atomic file writes: a reader
sees the old file or the new one, never half of one."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import yaml

from experiments.errors import UserError

__all__ = ["check_data_dir", "load_yaml", "read_document", "write_atomic"]


# libyaml's parser where PyYAML has it (its wheels do): clusters/prices.yaml, read by
# every plan, parsed in 0.8 ms against the pure-Python parser's 8.3 ms (2-core VM,
# 2026-11-29), into the same document (the constructor is PyYAML's own either way).
_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """`yaml.safe_load(text)`, faster.  libyaml words some errors less helpfully ("found
    character that cannot start any token", not which), so a text it refuses is parsed
    again by PyYAML's own parser, whose error (line, column, problem) is the one raised."""
    try:
        return yaml.load(text, Loader=_FAST_LOADER)  # a safe loader, C or Python
    except yaml.YAMLError:
        return yaml.safe_load(text)


def read_document(path: Path, what: str, fmt: Literal["json", "yaml"]) -> Any:
    """Load a JSON or YAML file; a missing, unreadable or malformed one is one UserError line."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise UserError(f"{what} {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as err:
        raise UserError(f"{what} {path} is not readable: {err}") from None
    try:
        return json.loads(text) if fmt == "json" else load_yaml(text)
    except json.JSONDecodeError as err:
        raise UserError(f"{what} {path} is not valid JSON: {err}") from None
    except yaml.YAMLError as err:
        # PyYAML's message spans lines (the text and a caret): one line, with where.
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise UserError(f"{what} {path} is not valid YAML{where}: {problem}") from None


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# A long text is encoded this many characters at a time (see write_atomic).
_ENCODE_CHARS = 1 << 22


def write_atomic(path: Path, data: str | bytes | Iterable[str | bytes]) -> None:
    """Write via a temporary file in the same folder, fsync it, then rename over `path`.

    `data` may be texts (or bytes) in pieces, written one after the other: a large table
    (a parse's events, a few hundred MB at 100,000 cells) is then never joined into
    one text, nor encoded whole, which held it in memory twice more.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise UserError(f"cannot write {path}: {err.strerror}") from None
    try:
        # mkstemp makes the file 0600; results should be as readable as any new file.
        os.chmod(tmp, 0o666 & ~_current_umask())
        with os.fdopen(fd, "wb") as handle:
            if isinstance(data, bytes):
                handle.write(data)
            else:
                for text in [data] if isinstance(data, str) else data:
                    if isinstance(text, bytes):
                        handle.write(text)
                        continue
                    for start in range(0, len(text), _ENCODE_CHARS):
                        handle.write(text[start : start + _ENCODE_CHARS].encode())
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as err:  # a folder where the file goes, a full or read-only disk
        Path(tmp).unlink(missing_ok=True)
        raise UserError(f"cannot write {path}: {err.strerror or err}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_data_dir(path: Path, flag: str = "--data-dir") -> None:
    """A raw tree's folder kary will write, checked before anything is planned or started:
    a one-line UserError when it is a file, or when it (or, not yet made, the folder it
    would be made in) cannot be written (issue 60, item 9)."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{flag} {folder} is a file: name a folder for the raw tree")
    existing = next((p for p in (folder, *folder.absolute().parents) if p.exists()), None)
    if existing is None or not existing.is_dir():
        raise UserError(f"{flag} {folder}: {existing} is not a folder: name another")
    try:  # os.access says yes to root everywhere; a probe asks the file system itself
        probe = tempfile.mkdtemp(prefix=".kary-write-probe-", dir=existing)
    except OSError as err:
        raise UserError(
            f"{flag} {folder} cannot be written ({err.strerror} in {existing}): name a folder "
            "you can write"
        ) from None
    os.rmdir(probe)
