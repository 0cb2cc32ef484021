"""The emulator's `flux` says what flux-core 0.88 says, for every command kary's template uses.

The same script runs as rank 0 of a real `flux start --test-size=4` instance and of
the emulator; outputs are compared line by line after masking what must differ
(host names: the emulator names ranks as a MiniCluster does; versions, URIs,
build options; cache counts, which depend on what each instance did at start).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from script_run import run_script

SCRIPT = r"""
exec 2>&1
echo "== overlay"; flux overlay status
echo "== version"; flux version
echo "== stats"; flux module stats content
echo "== parse"; flux module stats --parse count content >/dev/null; echo rc=$?
echo "== getattr"; flux getattr size; flux getattr rank; flux getattr tbon.topo
echo "== getattr missing"; flux getattr bogus; echo rc=$?
echo "== dropcache"; flux content dropcache; echo rc=$?
echo "== exec exit"; flux exec -r 1-2 false; echo rc=$?
echo "== exec status"; flux exec -r 1 sh -c 'exit 3'; echo rc=$?
echo "== exec missing"; flux exec -r 1 /no/such/command; echo rc=$?
mkdir -p "$T/src" "$T/dst" && head -c 3000000 /dev/urandom > "$T/src/blob"
echo "== create"; flux archive create --name a --directory "$T/src" blob; echo rc=$?
echo "== create again"; flux archive create --name a --directory "$T/src" blob; echo rc=$?
echo "== extract"; flux archive extract --name a -C "$T/dst"; echo rc=$?
cmp "$T/src/blob" "$T/dst/blob" && echo same
echo "== extract again"; flux archive extract --name a -C "$T/dst"; echo rc=$?
echo "== remove"; flux archive remove --name a; echo rc=$?
echo "== extract missing"; flux archive extract --name a -C "$T/dst"; echo rc=$?
echo "== remove missing"; flux archive remove --name a; echo rc=$?
echo "== create missing"; flux archive create --name b --directory "$T/src" nosuch; echo rc=$?
"""

_MASKS = [
    (
        re.compile(r"^(commands|libflux-core|broker|FLUX_URI|build-options):(\s+).*$", re.M),
        r"\1:\2X",
    ),
    (re.compile(r"(\d+) [\w.-]+: full"), r"\1 HOST: full"),
    (re.compile(r'"(count|valid|size)": \d+'), r'"\1": N'),
]


def _masked(text: str) -> str:
    for pattern, repl in _MASKS:
        text = pattern.sub(repl, text)
    # The emulator's own counters are an addition, clearly keyed as its own.
    return re.sub(r',\n "emulator": \{[^}]*\}', "", text)


def _run(command: list[str], scratch: Path, name: str) -> str:
    return run_script(command, SCRIPT, scratch, name)


def test_the_emulators_flux_prints_what_flux_core_prints(flux: str, scratch: Path) -> None:
    real = _run([flux, "start", "--test-size=4", "-Stbon.topo=kary:2"], scratch, "real")
    emulated = _run(
        [sys.executable, "-m", "experiments.emulator.instance", "--root", str(scratch / "i"),
         "--size", "4", "--topo", "kary:2", "--"],
        scratch,
        "emu",
    )  # fmt: skip
    assert "== extract missing" in real and "same" in real
    assert _masked(emulated).splitlines() == _masked(real).splitlines()
