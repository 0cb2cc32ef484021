"""benchmarks/box_model_holdout.py: every ratio is actual / predicted, and each protocol
says how many of its runs started before it was committed (a fake commit, fake starts)."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest
from benchmark_scripts import load_benchmark

REPO = Path(__file__).resolve().parents[2]
SWEEPS = REPO / "benchmarks" / "results" / "box-sweeps"


def _holdout() -> ModuleType:
    return load_benchmark("box_model_holdout")


def _section(out: str, name: str) -> list[str]:
    """The lines of one protocol's section of the output, from its name line on."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{name}: fit on"))
    end = next((i for i in range(start + 1, len(lines)) if ": fit on" in lines[i]), len(lines))
    return lines[start:end]


def test_every_ratio_is_actual_over_predicted(capsys: pytest.CaptureFixture[str]) -> None:
    status = _holdout().main(["--protocol", str(REPO / "benchmarks" / "box_model_protocol.json")])
    out = capsys.readouterr().out
    assert status == 1  # the first protocol fails its rule, and says so
    assert "every ratio is actual / predicted" in out.splitlines()[0]
    nodes = _section(out, "other node counts")
    # N=16 at 100 Mbit/s ran slower than the N=8 fit predicted: above 1, not 10.4 / 13.1.
    row = next(line for line in nodes if line.startswith("| n16-100Mbit | kary:1 |"))
    assert "| 13.1 s (4) | 10.4 s (9.9-10.8) | x1.26 | 0/4 | 6.5 s | x2.00 |" in row
    assert "cell medians, actual / predicted: x0.91-x1.26 over 8 cells" in "\n".join(nodes)
    assert "10 of 32 predicted runs inside their 80% interval (31%): FAIL" in nodes
    speeds = _section(out, "other link speeds")
    assert "cell medians, actual / predicted: x0.80-x1.06 over 8 cells" in "\n".join(speeds)
    assert "8 of 32 predicted runs inside their 80% interval (25%): FAIL" in speeds
    # Each row's ratio is its printed actual over its printed prediction (both to 0.1 s).
    for line in nodes + speeds:
        if line.startswith("| n"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            actual, predicted = float(cells[2].split()[0]), float(cells[3].split()[0])
            shown = float(cells[4].removeprefix("x"))
            low, high = (actual - 0.05) / (predicted + 0.05), (actual + 0.05) / (predicted - 0.05)
            assert low - 0.005 <= shown <= high + 0.005, line


def _fake_sweeps(root: Path, starts: list[str]) -> None:
    """Two fitted sweeps as kept, and a predicted one whose runs started at `starts`."""
    for name in ("n8-50Mbit", "n8-100Mbit", "n16-100Mbit"):
        shutil.copytree(SWEEPS / name, root / "box-sweeps" / name)
    runs_csv = root / "box-sweeps" / "n16-100Mbit" / "runs.csv"
    with runs_csv.open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(starts) == 16
    for row, started in zip(rows, starts, strict=True):
        row["started"] = started
    with runs_csv.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    protocol = {
        "sweeps": {
            name: {"dir": f"box-sweeps/{name}"}
            for name in ("n8-50Mbit", "n8-100Mbit", "n16-100Mbit")
        },
        "protocols": [
            {"name": "fake", "fit": ["n8-50Mbit", "n8-100Mbit"], "predict": ["n16-100Mbit"]}
        ],
    }
    (root / "protocol.json").write_text(json.dumps(protocol))


COMMITTED = "2026-01-02T03:04:05+00:00"
# Three runs before the fake commit (one in another zone's clock), one unrecorded.
STARTS = [
    "2026-01-02T03:04:04+00:00",
    "2026-01-01T23:00:00+00:00",
    "2026-01-02T04:00:00+01:00",  # 03:00 UTC: before
    "",
    "2026-01-02T03:04:05+00:00",  # the same instant: not before
    *["2026-01-03T00:00:00+00:00"] * 11,
]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_runs_started_before_the_protocols_commit_are_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    _fake_sweeps(tmp_path, STARTS)
    dated = dict(os.environ, GIT_COMMITTER_DATE=COMMITTED, GIT_AUTHOR_DATE=COMMITTED)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    git += ["-c", "commit.gpgsign=false"]
    for args in (["init", "-q"], ["add", "protocol.json"], ["commit", "-q", "-m", "protocol"]):
        subprocess.run([*git, *args], cwd=tmp_path, env=dated, check=True)
    # A later commit of the same file changes nothing: the first one counts.
    (tmp_path / "protocol.json").write_text((tmp_path / "protocol.json").read_text() + "\n")
    later = dict(dated, GIT_COMMITTER_DATE="2026-02-01T00:00:00+00:00")
    subprocess.run([*git, "commit", "-q", "-am", "later"], cwd=tmp_path, env=later, check=True)

    _holdout().main(["--protocol", str(tmp_path / "protocol.json")])
    out = capsys.readouterr().out.splitlines()
    assert f"protocol protocol.json: first committed {COMMITTED};" in out[0]
    assert (
        f"3 of 16 predicted runs started before this protocol was committed ({COMMITTED}) "
        "(1 without a start time)"
    ) in out
    assert f"0 of 32 fitted runs started before this protocol was committed ({COMMITTED})" in out


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_shallow_clone_does_not_take_its_oldest_commit_for_the_protocols_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    origin, clone = tmp_path / "origin", tmp_path / "clone"
    origin.mkdir()
    _fake_sweeps(origin, STARTS)
    dated = dict(os.environ, GIT_COMMITTER_DATE=COMMITTED, GIT_AUTHOR_DATE=COMMITTED)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    git += ["-c", "commit.gpgsign=false"]
    for args in (["init", "-q"], ["add", "protocol.json"], ["commit", "-q", "-m", "protocol"]):
        subprocess.run([*git, *args], cwd=origin, env=dated, check=True)
    (origin / "notes").write_text("later\n")
    later = dict(dated, GIT_COMMITTER_DATE="2026-02-01T00:00:00+00:00")
    subprocess.run([*git, "add", "notes"], cwd=origin, env=later, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "later"], cwd=origin, env=later, check=True)
    url = f"file://{origin}"
    subprocess.run(["git", "clone", "-q", "--depth", "1", url, str(clone)], check=True)
    shutil.copytree(origin / "box-sweeps", clone / "box-sweeps")
    # Depth 1 holds only the later commit, where git would say the file was added.
    _holdout().main(["--protocol", str(clone / "protocol.json")])
    out = capsys.readouterr().out.splitlines()
    assert "first committed (commit time unknown)" in out[0]
    assert "2026-02-01" not in out[0]


def test_an_uncommitted_protocol_says_its_commit_time_is_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    _fake_sweeps(tmp_path, STARTS)
    _holdout().main(["--protocol", str(tmp_path / "protocol.json")])
    out = capsys.readouterr().out.splitlines()
    assert "first committed (commit time unknown)" in out[0]
    assert (
        "commit time unknown: whether any of the 16 predicted runs started before this "
        "protocol was committed cannot be said"
    ) in out


def test_each_sweeps_templates_are_said_and_a_mixed_sweep_is_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The committed N=16 sweeps were made by 2 and 3 versions of the entrypoint (their
    # runs.csv template_hash), N=8's by one.
    _holdout().main(["--protocol", str(REPO / "benchmarks" / "box_model_protocol.json")])
    section = _section(capsys.readouterr().out, "other node counts")
    assert (
        "entrypoint templates: n8-50Mbit 34a26727; n8-100Mbit 34a26727; n16-50Mbit 34a26727, "
        "46fdc2f6; n16-100Mbit 238a08d7, 34a26727, 46fdc2f6"
    ) in section
    assert (
        "mixed templates: n16-50Mbit (2), n16-100Mbit (3): runs of different templates "
        "judged together"
    ) in section


def test_a_shallow_clone_reads_the_protocols_first_commit_from_the_committed_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    holdout = _holdout()
    benchmarks = Path(holdout.__file__).parent
    protocols = sorted(benchmarks.glob("box_model_protocol*.json"))
    recorded = json.loads((benchmarks / holdout.RECORDED_COMMITS).read_text())
    assert sorted(recorded) == [p.name for p in protocols]  # every protocol has its time
    if not holdout.shallow_clone(benchmarks):
        # Where git has the history, the record says what git says.
        assert {p.name: holdout.first_committed(p) for p in protocols} == recorded
    monkeypatch.setattr(holdout, "shallow_clone", lambda root: True)
    assert {p.name: holdout.first_committed(p) for p in protocols} == recorded
