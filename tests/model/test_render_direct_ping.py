"""The direct strategy and the ping experiment as rendered, and run against a stub `flux`.

The stub answers what the entrypoint asks with flux-core 0.88's own output
(captured from `flux ping` on a real test instance), so the template's parsing
of it is held to the real format without starting Flux.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from strict_schema import crd_schema, validate_strictly

from experiments.errors import UserError
from experiments.formats.kary_line import kary_records
from experiments.model.render import DIRECT_PORT, RenderOptions, render_cell

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "emulator"))
from emulator_helpers import wait_for_no_processes

MIB = 2**20


def _body(entrypoint: str) -> str:
    """The script after its helper functions: what it runs."""
    return entrypoint.split('echo "MODULE STATS')[1]


def test_direct_is_rendered_only_when_asked(tmp_path: Path) -> None:
    trees = render_cell(6, "kary:2", [MIB], ["all", "leaves", "middle"], "c")
    assert "kary_direct" not in trees.entrypoint_sh and "http.server" not in trees.entrypoint_sh
    assert "ports:" not in trees.minicluster_yaml
    assert 'trap \'kary_rc=$?; rm -rf "$SCRATCH"; ' in trees.entrypoint_sh

    both = render_cell(6, "kary:2", [MIB], ["all", "direct"], "c", RenderOptions(verify=True))
    body = _body(both.entrypoint_sh)
    assert 'kary_step create-direct 1M 1048576 \\\n    kary_direct_start "$SCRATCH"' in body
    assert "kary_step distribute-direct 1M 1048576 \\\n    kary_direct_fetch all blob-1M" in body
    assert "kary_step verify-distribute-direct 1M 1048576 \\\n    kary_verify all " in body
    assert "kary_step delete-direct 1M 1048576 \\\n    kary_direct_stop" in body
    # The server is stopped on every way out, and direct has no archive of its own.
    assert 'trap \'kary_rc=$?; kary_direct_stop; rm -rf "$SCRATCH"; ' in body
    assert "kary-direct-1M" not in body
    assert body.count("flux archive create") == 1  # the `all` strategy's
    script = tmp_path / "entrypoint.sh"
    script.write_text(both.entrypoint_sh)
    subprocess.run(["bash", "-n", str(script)], check=True)


def test_a_minicluster_with_direct_declares_the_port_and_stays_valid(
    minicluster_crd: Path,
) -> None:
    rendered = render_cell(4, "kary:1", [MIB], ["direct"], "c")
    document = yaml.safe_load(rendered.minicluster_yaml)
    validate_strictly(document, crd_schema(minicluster_crd))
    assert document["spec"]["containers"][0]["ports"] == [DIRECT_PORT]
    # On separate hosts the ranks ask for rank 0 by its name, on that port.
    assert f"DIRECT_BIND=0.0.0.0 DIRECT_PORT={DIRECT_PORT}" in rendered.entrypoint_sh


def test_ping_renders_flux_ping_per_rank_service_and_payload(tmp_path: Path) -> None:
    rendered = render_cell(5, "kary:2", [MIB, 16 * MIB], ["all", "direct"], "c", experiment="ping")
    body = _body(rendered.entrypoint_sh)
    assert "for rank in $(seq 0 4); do" in body
    assert "    for service in broker kvs; do" in body
    pads = [line.split()[3:] for line in body.splitlines() if "kary_ping " in line]
    assert pads == [["0", "0"], ["1M", "1048576"], ["16M", "16777216"]]
    assert 'flux ping --count=1 --pad="$bytes" --rank="$rank" "$service"' in rendered.entrypoint_sh
    # Nothing is distributed: no blob, no archive, no server.
    for absent in ('kary_make_blob "$BLOB"', "flux archive create", "kary_direct_start"):
        assert absent not in body
    script = tmp_path / "entrypoint.sh"
    script.write_text(rendered.entrypoint_sh)
    subprocess.run(["bash", "-n", str(script)], check=True)


@pytest.mark.parametrize(
    ("sizes", "experiment", "message"),
    [
        ([2**31], "ping", "too large for the ping experiment"),
        ([MIB], "pong", "unknown experiment 'pong'"),
    ],
)
def test_what_ping_cannot_do_is_refused(sizes: list[int], experiment: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        render_cell(4, "kary:1", sizes, ["all"], "c", experiment=experiment)


# flux-core 0.88's `flux ping` output (a real test instance, kary:1), by rank.
REAL_PING = {
    "0": "flux-ping 0!{s}\n0!{s}.ping pad={p} seq=0 time=0.828 ms (2292ad64!bd2bb5cc!ce424e1a{k})",
    "1": "flux-ping 1!{s}\n1!{s}.ping pad={p} seq=0 time=86.144 ms "
    "(877d7a79!bd2bb5cc!ce424e1a!306e6f90{k})",
    "2": "flux-ping: 2!{s}.ping: No route to host\nflux-ping 2!{s}",
}
STUB = r"""#!/bin/bash
# A stand-in for flux: what the entrypoint asks, answered as flux-core 0.88 answers.
case "$1" in
    module|overlay|version) exit 0 ;;
    getattr) echo 3 ;;
    ping)
        for arg in "$@"; do
            case "$arg" in --pad=*) pad=${arg#--pad=} ;; --rank=*) rank=${arg#--rank=} ;; esac
        done
        service=${*: -1}
        k=""; [ "$service" = kvs ] && k='!ce424e1a'
        python3 -c "$SHOW" "$PINGS" "$rank" "$service" "$pad" "$k"
        [ "$rank" != 2 ]
        ;;
    exec)
        # The direct download: stop the entrypoint right there, as a timeout or Ctrl-C would.
        kill -TERM "$PPID"
        exit 1
        ;;
    *) exit 1 ;;
esac
"""


def _stub_env(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "flux").write_text(STUB)
    (bin_dir / "flux").chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", PINGS=json.dumps(REAL_PING))
    env["SHOW"] = (
        "import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]]"
        ".format(s=sys.argv[3], p=sys.argv[4], k=sys.argv[5]))"
    )
    env["KARY_RANK_PREFIX"] = str(tmp_path / "rank0")
    env.pop("KARY_RANK_ROOT", None)
    return env


def test_each_ping_becomes_a_kary_line_read_from_flux_pings_own_output(tmp_path: Path) -> None:
    rendered = render_cell(3, "kary:1", [4096], ["all"], "c", experiment="ping")
    script = tmp_path / "entrypoint.sh"
    script.write_text(rendered.entrypoint_sh)
    done = subprocess.run(
        ["bash", str(script)], env=_stub_env(tmp_path), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1, done.stdout[-2000:]  # the pings of rank 2 failed
    records = [r for r in kary_records(done.stdout) if r is not None and "event" in r]
    assert len(records) == 3 * 2 * 2
    seen = {(r["event"], r["rank"], r["size"]): r for r in records}
    ok = seen[("flux-ping-kvs", 1, "4K")]
    assert (ok["ms"], ok["hops"], ok["rc"], ok["size_bytes"]) == (86.144, 5, 0, 4096)
    assert seen[("flux-ping-broker", 0, "0")]["hops"] == 3
    failed = seen[("flux-ping-broker", 2, "4K")]
    assert (failed["ms"], failed["hops"], failed["rc"]) == (None, None, 1)
    assert "EVENT flux-ping-broker-size-4K-rank-2\nflux-ping: 2!broker.ping: No route to host" in (
        done.stdout
    )
    done_line = [r for r in kary_records(done.stdout) if r and r.get("meta") == "done"]
    assert done_line == [{"meta": "done", "failed_steps": 4}]


def test_the_direct_server_is_stopped_when_the_entrypoint_is_killed(tmp_path: Path) -> None:
    rendered = render_cell(3, "kary:1", [MIB], ["direct"], "c")
    script = tmp_path / "entrypoint.sh"
    script.write_text(rendered.entrypoint_sh)
    proc = subprocess.Popen(
        ["bash", str(script)],
        env=_stub_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    out, _ = proc.communicate(timeout=60)
    # Killed by SIGTERM (from the stub's `flux exec`), after bash ran its EXIT trap.
    assert proc.returncode == -15, out[-2000:]
    started = [r for r in kary_records(out) if r and r.get("event") == "create-direct"]
    assert started and started[0]["rc"] == 0, out[-2000:]  # the server was up
    assert wait_for_no_processes(str(tmp_path / "rank0"), seconds=5) == []
    assert not (tmp_path / "rank0" / "tmp" / "kary").exists()  # the same trap cleaned up


def test_without_curl_the_ranks_download_with_python(tmp_path: Path) -> None:
    """The template's urllib download, run as a rank would, against the template's server."""
    rendered = render_cell(2, "kary:1", [MIB], ["direct"], "c").entrypoint_sh
    serve = rendered.split("KARY_SERVE_PY='")[1].split("'\n")[0]
    fetch = rendered.split("KARY_FETCH_PY='")[1].split("'\n")[0]
    (tmp_path / "blob").write_bytes(os.urandom(MIB + 7))
    port_file = tmp_path / "port"
    server = subprocess.Popen(
        [sys.executable, "-c", serve, str(tmp_path), "127.0.0.1", "0", str(port_file)]
    )
    try:
        deadline = time.monotonic() + 20
        while not port_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port_file.read_text()}/blob"
        fetch_command = [sys.executable, "-c", fetch]
        subprocess.run([*fetch_command, url, str(tmp_path / "copy")], check=True, timeout=30)
        missing = subprocess.run(
            [*fetch_command, url + "-none", str(tmp_path / "none")],
            capture_output=True,
            text=True,
            timeout=30,
        )
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert (tmp_path / "copy").read_bytes() == (tmp_path / "blob").read_bytes()
    assert missing.returncode != 0 and "404" in missing.stderr
