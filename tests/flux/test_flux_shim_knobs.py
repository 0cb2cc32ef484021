"""The Flux knobs kary sets, on the emulator's `flux` and on flux-core 0.88: same answers.

--chunksize and --mmap on `flux archive create`, and the cache reload with its
backing store's, run as rank 0 of a real `flux start --test-size=2` instance
and of the emulator; outputs and exit codes must match line by line.  A bad
knob value is compared by exit code only: flux-core's optparse words it its
own way.
"""

from __future__ import annotations

import sys
from pathlib import Path

from script_run import run_script

SCRIPT = r"""
exec 2>&1
mkdir -p "$T/src" "$T/dst" && head -c 3000000 /dev/urandom > "$T/src/blob"
create() { flux archive create --directory "$T/src" "$@" blob; echo rc=$?; }
refused() { flux archive create --directory "$T/src" "$@" blob >/dev/null 2>&1; echo rc=$?; }
echo "== chunksize"; create --name c --chunksize=256K
flux exec -r 1 flux archive extract --name c -C "$T/dst"; echo rc=$?
cmp "$T/src/blob" "$T/dst/blob" && echo same
echo "== chunksize in bytes, mmap"; create --name m --mmap --chunksize=262144
echo "== mmap off rank 0"; flux exec -r 1 flux archive create -C "$T/src" --name m2 --mmap blob
echo rc=$?
echo "== chunksize 0"; create --name z --chunksize=0
echo "== bad chunksize"; refused --name d --chunksize=lots
echo "== chunksize too big"; refused --name d --chunksize=4G
echo "== remove"; for a in c m z; do flux archive remove --name $a; done; echo rc=$?
echo "== backing module"; flux getattr content.backing-module
flux exec -r 1 flux getattr content.backing-module; echo rc=$?
echo "== reload"; flux exec -r all flux module reload content purge-target-size=4194304; echo rc=$?
echo "== reload backing"; flux module reload "$(flux getattr content.backing-module)"; echo rc=$?
"""


def _run(command: list[str], scratch: Path, name: str) -> str:
    return run_script(command, SCRIPT, scratch, name)


def test_the_knobs_behave_on_the_emulator_as_on_flux_core(flux: str, scratch: Path) -> None:
    real = _run([flux, "start", "--test-size=2"], scratch, "real")
    emulated = _run(
        [sys.executable, "-m", "experiments.emulator.instance", "--root", str(scratch / "i"),
         "--size", "2", "--topo", "kary:2", "--"],
        scratch,
        "emu",
    )  # fmt: skip
    assert "same" in real and "--mmap only works on the rank 0 broker" in real
    # refused: --mmap off rank 0, two bad sizes, the backing module asked of rank 1
    assert real.count("rc=1") == 4
    assert emulated.splitlines() == real.splitlines()
