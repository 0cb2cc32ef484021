"""A machine that cannot build a box is told so in one line, before anything starts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from experiments.cli import app

runner = CliRunner()
_ARGS = ["run", "--exact-nodes", "2", "--topo", "kary:1", "--sizes", "1M", "--place", "box"]


def _fake_tool(folder: Path, name: str, stderr: str) -> None:
    """`name` on PATH that fails as the real one does when the kernel or the rights say no."""
    folder.mkdir(exist_ok=True)
    tool = folder / name
    tool.write_text(f"#!/bin/sh\necho '{stderr}' >&2\nexit 1\n")
    tool.chmod(0o755)


def _real(name: str) -> str:
    import shutil

    found = shutil.which(name)
    assert found is not None, f"{name} is not on PATH"
    return found


def _refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *extra: str) -> str:
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    data = tmp_path / "raw"
    result = runner.invoke(app, [*_ARGS, *extra, "--data-dir", str(data)])
    assert result.exit_code == 2, result.output
    assert not data.exists()
    assert not list(tmp_path.glob("kary-box-*"))
    lines = result.stderr.splitlines()
    assert len([line for line in lines if line.startswith("kary: error:")]) == 1
    return lines[-1]


def test_without_root_or_user_namespaces_the_box_refuses(
    box_flux: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    _fake_tool(tmp_path / "bin", "unshare", "unshare: unshare failed: Operation not permitted")
    assert _refused(tmp_path, monkeypatch) == (
        "kary: error: the box needs root or unprivileged user namespaces, and this machine "
        "allows neither to uid 1000 (`unshare --user --map-root-user --net`: "
        "unshare: unshare failed: Operation not permitted)"
    )


@pytest.mark.parametrize(
    ("flags", "kind", "missing"),
    [
        (
            ["--link-bandwidth", "100Mbit"],
            "tbf",
            "tbf, which --link-bandwidth needs (CONFIG_NET_SCH_TBF)",
        ),
        (
            ["--link-bandwidth", "100Mbit"],
            "htb",
            "htb, which --link-queue fair needs (CONFIG_NET_SCH_HTB) (--link-queue fifo shapes "
            "with tbf alone)",
        ),
        (
            ["--link-bandwidth", "100Mbit"],
            "u32",
            "u32, which --link-queue fair needs (CONFIG_NET_CLS_U32)",
        ),
        (["--link-latency", "1ms"], "netem", "netem, which --link-latency needs"),
    ],
)
def test_a_kernel_without_the_qdisc_a_link_needs_is_refused(
    box_flux: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    flags: list[str],
    kind: str,
    missing: str,
) -> None:
    # A tc that refuses `kind` alone, as a kernel built without it does.
    (tmp_path / "bin").mkdir()
    tc = tmp_path / "bin" / "tc"
    script = (
        "#!/bin/sh\n"
        f'case " $* " in *" {kind} "*) '
        'echo "Error: Specified qdisc kind is unknown." >&2; exit 1;; esac\n'
        f'exec {_real("tc")} "$@"\n'
    )
    tc.write_text(script)
    tc.chmod(0o755)
    line = _refused(tmp_path, monkeypatch, *flags)
    assert line.startswith(f"kary: error: cannot build a box here: this kernel has no {missing}")
    assert line.endswith("failed in a probe namespace") and f" {kind} " in line


def test_the_box_needs_its_tools(
    box_flux: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "bin").mkdir()
    # A PATH with flux but no iproute2: ip and tc are missing.
    (tmp_path / "bin" / "flux").symlink_to(box_flux)
    (tmp_path / "bin" / "unshare").symlink_to("/usr/bin/unshare")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    result = runner.invoke(app, [*_ARGS, "--data-dir", str(tmp_path / "raw")])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[-1].startswith("kary: error: the box needs ip, tc on PATH")
