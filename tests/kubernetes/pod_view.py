"""The Flux Operator's flux view as the box's pods see it: Flux on PATH last, and its rc dir.

The operator's pods get Flux from the view an init container copies to
/mnt/flux/view, and the start script (pkg/flux/templates/components.sh at
flux-operator 0d75cef8, `wait-view` and `paths`, included by wait.sh lines
18-19) sets up the environment kary's entrypoint then runs in:

- `export PATH=$PATH:${viewbin}` (line 30): the view's bin goes *after* the
  image's own PATH ("in case software in container duplicated"), so an image
  with a `flux` of its own runs that one;
- `rm -rf $viewroot/bin/python3` and `bin/python` (lines 66-67, when the view's
  versioned python is there): a `python3` on PATH is the image's, if any;
- `export FLUX_RC_EXTRA=$viewroot/etc/flux/rc1.d` unless
  spec.flux.scheduler.simple (line 80), which kary leaves unset.  flux-core
  0.88 runs `<dir>/rc1.d/*` for each dir in FLUX_RC_EXTRA
  (src/bindings/python/flux/modprobe.py run_all_rc_scripts), so it looks in
  `.../rc1.d/rc1.d`: whether Fluxion loads depends on the view's build, which
  is why kary records the scheduler the instance loaded (`flux module list`).

The box's view holds the host's flux-core (no Fluxion), so its instances run
sched-simple; the pods' base PATH has no flux, as an image without Flux has none.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["make_view", "pods_path", "view_script"]


def make_view(folder: Path, flux: str) -> Path:
    """The view under `folder`: bin/flux (the host's flux-core) and an empty etc/flux/rc1.d."""
    view = folder / "view"
    (view / "bin").mkdir(parents=True)
    (view / "bin" / "flux").symlink_to(Path(flux).resolve())
    (view / "etc" / "flux" / "rc1.d").mkdir(parents=True)
    return view


def pods_path() -> str:
    """The pods' PATH before the start script: this machine's, less every dir holding a
    `flux` (an image without Flux has none)."""
    kept = [
        part
        for part in os.environ.get("PATH", "/usr/bin:/bin").split(":")
        if part and not (Path(part) / "flux").exists()
    ]
    return ":".join(kept) or "/usr/bin:/bin"


def view_script(view: Path) -> str:
    """components.sh's lines for a kary MiniCluster (quiet, Flux from the view)."""
    return (
        f"viewroot={view}\n"
        "viewbin=${viewroot}/bin\n"
        "export PATH=$PATH:${viewbin}\n"
        "rm -rf $viewroot/bin/python3\n"
        "rm -rf $viewroot/bin/python\n"
        "export FLUX_RC_EXTRA=$viewroot/etc/flux/rc1.d\n"
    )
