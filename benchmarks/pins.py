"""Which installed packages differ from the versions CI pins (constraints.txt).

    .venv/bin/python benchmarks/pins.py      # one line per difference; exit 1 if any

Every committed figure is made with the packages constraints.txt names (`make
setup` installs from it).  A figure that comes out otherwise on another machine
is first a question of which package moved: `make figures` prints this list
when a figure differs, and a test fails on it, so a venv that drifted from the
pins is named rather than guessed at.  The BLAS kernel OpenBLAS picks for the
CPU is not a package: the fits that once moved with it are solved exactly
(experiments/estimate/nonnegative.py).
"""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONSTRAINTS = REPO / "constraints.txt"


def canonical(name: str) -> str:
    """A distribution's name as PEP 503 compares it (case, '-', '_' and '.' alike)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned(path: Path = CONSTRAINTS) -> dict[str, str]:
    """name -> version of every `name==version` line (comments and blanks skipped)."""
    pins: dict[str, str] = {}
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep or not name.strip() or not version.strip():
            raise ValueError(f"{path.name}:{number}: not name==version: {raw!r}")
        pins[canonical(name.strip())] = version.strip()
    return pins


def installed() -> dict[str, str]:
    """name -> version of every distribution this interpreter sees."""
    return {canonical(d.metadata["Name"]): d.version for d in metadata.distributions()}


def differences(pins: dict[str, str], have: dict[str, str]) -> list[str]:
    """One line per pinned package that is missing or at another version."""
    lines = []
    for name, version in sorted(pins.items()):
        got = have.get(name)
        if got != version:
            lines.append(f"{name}: pinned {version}, installed {got or 'none'}")
    return lines


def main() -> int:
    lines = differences(pinned(), installed())
    for line in lines:
        print(line)
    if lines:
        print(f"{len(lines)} package(s) differ from {CONSTRAINTS.name}: `make setup` pins them")
        return 1
    print(f"every package pinned in {CONSTRAINTS.name} is installed at its version")
    return 0


if __name__ == "__main__":
    sys.exit(main())
