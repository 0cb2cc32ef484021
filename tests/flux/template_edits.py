"""The real templates with a line run first by the cells of chosen topologies (tests only)."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def template_with(scratch: Path, lines: dict[str, str]) -> Path:
    """A copy of templates/ in `scratch` whose entrypoint, in the cell of each topology
    in `lines`, runs that line before anything else (`sleep 600` stalls it, `exit 3`
    fails it)."""
    template = scratch / "template"
    shutil.copytree(REPO / "templates", template)
    entry = template / "entrypoint.sh.j2"
    text = entry.read_text()
    assert "set -u\n" in text
    first = "".join(
        f'{{% if topo == "{topo}" %}}\n{line}\n{{% endif %}}\n' for topo, line in lines.items()
    )
    entry.write_text(text.replace("set -u\n", "set -u\n" + first, 1))
    return template
