"""benchmarks/box_topologies.py's tables: each says what made its runs, names a winner
only by the one rule (a tie is a tie), marks CPU-bound cells, and samples from two
templates or kary commits make no table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "tests" / "analysis"))

import box_topologies  # noqa: E402
from analysis_samples import box_record, kary_log, write_cell  # noqa: E402

from experiments.formats.cell_layout import cell_id  # noqa: E402

SCRIPT = [sys.executable, str(REPO / "benchmarks" / "box_topologies.py"), "--from-json"]
TOPOS = ["kary:1", "kary:2", "kary:4", "kary:15"]
# N=16 at 100 Mbit/s as the box measured it: kary:1 and kary:2 within noise (p = 0.34).
BOX = {
    "kary:1": [13.12, 13.0, 12.83, 14.35],
    "kary:2": [13.87, 14.25, 13.82, 13.49],
    "kary:4": [27.62, 26.76, 26.48, 28.7],
    "kary:15": [84.41, 84.38, 84.36, 84.45],
}
EMULATED = {
    "kary:1": [8.67, 8.56, 8.3, 8.23],
    "kary:2": [11.36, 11.46, 11.42, 11.37],
    "kary:4": [22.08, 22.15, 22.22, 22.13],
    "kary:15": [80.82, 80.91, 80.8, 80.81],
}


def _made(
    templates: list[str | None] | None = None,
    commits: list[str | None] | None = None,
    cpu_bound: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "runs": 16,
        "template_hash": templates or ["34a26727090491be"],
        "kary_commit": commits or [None],
        "started": "2026-11-25T03:05:05+00:00",
        "finished": "2026-11-25T03:23:09+00:00",
        "cpu_bound": cpu_bound or [],
    }


def _data(box_made: dict[str, Any] | None = None, emulator: bool = False) -> dict[str, Any]:
    return {
        "nodes": 16,
        "size": "64M",
        "topos": TOPOS,
        "speeds": ["100Mbit"],
        "runs": 4,
        "box": {"100Mbit": BOX},
        "emulator": {"100Mbit": EMULATED} if emulator else {},
        "provenance": {
            "box": {"100Mbit": box_made or _made()},
            "emulator": {"100Mbit": None} if emulator else {},
        },
        "wall_seconds": 600.0,
        "busy_share": 0.3,
    }


def test_each_section_starts_with_what_made_its_runs() -> None:
    text = box_topologies.table(_data(emulator=True))
    lines = text.splitlines()
    # Samples that do not say their link queue were made under tbf's one FIFO.
    title = lines.index(
        "box, N=16, 64M, links 100Mbit (both ways, every node; one FIFO per link, --link-queue "
        "fifo), `distribute-all-nodes` seconds"
    )
    assert lines[title + 1] == (
        "box runs: template 34a26727090491be, kary commit not recorded, "
        "2026-11-25T03:05:05+00:00 to 2026-11-25T03:23:09+00:00"
    )
    emulated = lines.index(
        "emulator vs box, N=16, 64M, links 100Mbit: `distribute-all-nodes` medians"
    )
    assert lines[emulated + 1] == (
        "emulator runs: provenance unknown (not recorded with these samples)"
    )


def test_a_recorded_commit_is_named_and_runs_without_one_are_said() -> None:
    text = box_topologies.table(_data(_made(commits=["0123456789ab", None])))
    assert "kary commit 0123456789ab (some runs did not record one), " in text


def test_kary_1_and_kary_2_within_noise_are_a_tie_not_a_winner() -> None:
    text = box_topologies.table(_data(emulator=True))
    assert "\nfastest: none (kary:1 and kary:2 tie: p = 0.34)\n" in text
    assert "| kary:1 vs kary:2 | 0.343 | 4/4 | tie |" in text
    # The emulator separates kary:1, the box does not: nothing to agree on.
    assert (
        "fastest: box none (kary:1 and kary:2 tie: p = 0.34), emulator kary:1: "
        "no winner to agree on"
    ) in text


def test_clearly_separated_topologies_name_the_fast_one() -> None:
    data = _data(emulator=True)
    data["box"]["100Mbit"] = {**BOX, "kary:1": [8.0, 8.1, 8.2, 8.3]}
    text = box_topologies.table(data)
    assert "\nfastest: kary:1 (median 8.15 s)\n" in text
    assert "fastest: box kary:1, emulator kary:1: same" in text


def test_a_cpu_bound_cell_is_marked_in_every_table() -> None:
    text = box_topologies.table(_data(_made(cpu_bound=["kary:1"]), emulator=True))
    assert "| kary:1 (cpu-bound) | 13.06 | 12.96-13.43 | 4 | 5.4 | 2.43 |" in text
    assert "| kary:2 | 13.84 |" in text  # the others are not
    assert "| kary:1 (cpu-bound) vs kary:2 | 0.343 | 4/4 | tie |" in text
    assert "| kary:1 (cpu-bound) | 13.06 | 8.43 | 0.65 | 4/4 | NO |" in text
    assert "(cpu-bound): in at least one of its runs kary judged" in text


def test_no_cell_is_marked_where_none_was_cpu_bound() -> None:
    assert "cpu-bound" not in box_topologies.table(_data(emulator=True))


def _refused(tmp_path: Path, data: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    saved = tmp_path / "samples.json"
    saved.write_text(json.dumps(data))
    return subprocess.run([*SCRIPT, str(saved)], capture_output=True, text=True)


def test_samples_of_two_templates_make_no_table(tmp_path: Path) -> None:
    done = _refused(tmp_path, _data(_made(templates=["34a26727090491be", "46fdc2f6d9455630"])))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [
        "box_topologies.py: refused: the runs come from 2 template hashes "
        "(34a26727090491be: box 100Mbit; 46fdc2f6d9455630: box 100Mbit)"
    ]


def test_samples_of_two_kary_commits_make_no_table(tmp_path: Path) -> None:
    data = _data(_made(commits=["0123456789ab"]), emulator=True)
    data["provenance"]["emulator"]["100Mbit"] = _made(commits=["0123456789ab-dirty", None])
    done = _refused(tmp_path, data)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "box_topologies.py: refused: the runs come from 2 kary commits "
        "(0123456789ab: box 100Mbit; 0123456789ab-dirty: emulator 100Mbit)"
    ]


def test_samples_kept_without_provenance_still_make_their_table(tmp_path: Path) -> None:
    data = _data()
    del data["provenance"]
    text = box_topologies.table(data)
    assert "box runs: provenance unknown (not recorded with these samples)" in text


def test_a_fresh_run_keeps_provenance_and_refuses_mixed_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    made = {"50Mbit": _made(), "100Mbit": _made(templates=["46fdc2f6d9455630"])}
    monkeypatch.setattr(box_topologies, "run_one", lambda *args: None)
    monkeypatch.setattr(box_topologies, "samples", lambda out, place, speed: (BOX, made[speed]))
    saved = tmp_path / "samples.json"
    argv = ["box_topologies.py", "--runs", "1", "--out", str(tmp_path), "--json", str(saved)]
    monkeypatch.setattr(sys, "argv", argv)
    assert box_topologies.main() == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "box_topologies.py: refused: the runs come from 2 template hashes "
        "(34a26727090491be: box 50Mbit; 46fdc2f6d9455630: box 100Mbit)"
    )
    # The measurement is kept, with what made it, for a look at why.
    kept = json.loads(saved.read_text())
    assert kept["provenance"]["box"] == made


def test_provenance_comes_from_the_parsed_runs_table_of_the_raw_tree(tmp_path: Path) -> None:
    raw = tmp_path / "raw-box-100Mbit"
    for topo, seconds in (("kary:1", 1.0), ("kary:2", 2.0)):
        for it in range(2):
            record = json.loads(box_record(4, topo, it, "100Mbit", cpu_bound=topo == "kary:2"))
            record.update(
                template_hash="34a26727090491be",
                kary_commit="0123456789ab" if it else None,
                started=f"2026-11-25T03:0{it}:00+00:00",
                finished=f"2026-11-25T03:0{it}:30+00:00",
            )
            log = kary_log(4, topo, it, sizes=("16M",), seconds=seconds + it / 10)
            write_cell(raw, cell_id(4, topo, it), log, json.dumps(record))
    times, made = box_topologies.samples(tmp_path, "box", "100Mbit")
    assert times == {"kary:1": [2.0, 2.2], "kary:2": [4.0, 4.2]}
    assert made == {
        "runs": 4,
        "template_hash": ["34a26727090491be"],
        "kary_commit": ["0123456789ab", None],
        "started": "2026-11-25T03:00:00+00:00",
        "finished": "2026-11-25T03:01:30+00:00",
        "cpu_bound": ["kary:2"],
    }


def test_the_samples_say_the_link_queue_they_were_made_under() -> None:
    fair = box_topologies.table({**_data(emulator=False), "link_queue": "fair"})
    assert "(both ways, every node; fair queues, --link-queue fair)" in fair
    assert "one FIFO" not in fair
