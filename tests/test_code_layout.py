"""The code's shape: import contracts that can fail, modules under 450 lines, and packages
whose `__init__` names what they export."""

from __future__ import annotations

import ast
import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("experiments", "analysis")
MAX_MODULE_LINES = 450
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (REPO / package).rglob("*.py"))


def test_no_module_is_over_450_lines() -> None:
    long = {
        str(path.relative_to(REPO)): count
        for path in _modules()
        if (count := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, f"split these by responsibility: {long}"


@pytest.mark.parametrize(
    "init",
    [p for p in _modules() if p.name == "__init__.py"],
    ids=lambda p: str(p.parent.relative_to(REPO)),
)
def test_every_package_says_what_it_is_and_names_what_it_exports(init: Path) -> None:
    tree = ast.parse(init.read_text())
    assert ast.get_docstring(tree), f"{init}: no docstring"
    exported = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
    ]
    assert len(exported) == 1, f"{init}: no __all__"
    names = ast.literal_eval(exported[0])
    package = ".".join(init.parent.relative_to(REPO).parts)
    module = importlib.import_module(package)
    for name in names:
        # A name is an attribute (maybe lazily imported) or one of the package's modules.
        found = hasattr(module, name) or (init.parent / f"{name}.py").is_file()
        assert found or (init.parent / name / "__init__.py").is_file(), f"{package}.{name}"


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports on the copy of the packages under `root`, with its pyproject."""
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(root / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def copied(tmp_path: Path) -> Path:
    """The packages and pyproject.toml copied, so a test may break them."""
    if not LINT_IMPORTS.exists():
        pytest.skip("lint-imports is not installed beside this Python (pip install -e '.[dev]')")
    for package in PACKAGES:
        shutil.copytree(
            REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_contracts_hold_on_the_copy(copied: Path) -> None:
    kept = _lint_imports(copied)
    assert kept.returncode == 0, kept.stdout[-3000:] + kept.stderr[-2000:]
    assert "0 broken" in kept.stdout


@pytest.mark.parametrize(
    ("module", "deliberate", "contract"),
    [
        (
            "experiments/backends/kubernetes/collect.py",
            "experiments.backends.flux.site",
            "backends never import each other (flux, kubernetes, emulator)",
        ),
        (
            "experiments/backends/kubernetes/nested.py",
            "experiments.box.layout",
            "the box is the flux backend's place: no other backend imports it",
        ),
        (
            "experiments/api.py",
            "experiments.backends.flux.site",
            "a backend's modules are its own: from outside, only its package's exports",
        ),
        (
            "experiments/backends/base.py",
            "experiments.backends.emulator",
            "the Backend contract and its helpers import no backend",
        ),
    ],
)
def test_a_deliberate_cross_import_breaks_its_contract(
    copied: Path, module: str, deliberate: str, contract: str
) -> None:
    path = copied / module
    path.write_text(path.read_text() + f"\nimport {deliberate}  # deliberate\n")
    broken = _lint_imports(copied)
    assert broken.returncode == 1, broken.stdout[-3000:]
    assert f"{contract} BROKEN" in broken.stdout, broken.stdout[-3000:]
    importer = ".".join(Path(module).with_suffix("").parts)
    assert f"{importer} -> {deliberate}" in broken.stdout, broken.stdout[-3000:]
