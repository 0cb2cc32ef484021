"""Find the shipped resource folders (templates/, designs/, clusters/).

From a clone (or an editable install) they sit at the top of the repository;
from a wheel they travel inside the package as `experiments/_resources/`.
"""

from __future__ import annotations

from pathlib import Path

from experiments.errors import UserError

_PACKAGE_DIR = Path(__file__).resolve().parent
_CANDIDATES = (_PACKAGE_DIR / "_resources", _PACKAGE_DIR.parent)

RESOURCE_FOLDERS = ("templates", "designs", "clusters")


def resource_dir(kind: str) -> Path:
    """The folder holding one kind of shipped resource."""
    if kind not in RESOURCE_FOLDERS:
        raise ValueError(f"unknown resource folder {kind!r}")
    for base in _CANDIDATES:
        candidate = base / kind
        if candidate.is_dir():
            return candidate
    raise UserError(f"kary is installed without its {kind}/ folder; reinstall the package")


def resource_path(kind: str, name: str) -> Path:
    """One shipped file, e.g. resource_path('designs', 'kary-designs.json')."""
    return resource_dir(kind) / name
