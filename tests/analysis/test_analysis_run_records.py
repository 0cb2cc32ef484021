"""run.json through its one reader: refused records are noted per cell, and the report
works from the parsed tables alone (runs.csv carries what it needs of run.json)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from analysis_samples import kary_log, run_record, write_cell

from analysis import load_parsed, parse_tree, read_tree
from analysis.page.builder import REPORT_NAME, write_report
from analysis.page.facts import collect_facts
from experiments.errors import UserError
from experiments.formats.parsed import RECORD_FACTS
from experiments.formats.run_record import UnreadableRecord, read_record


def _tree(root: Path, **record: object) -> Path:
    for it in range(3):
        write_cell(
            root,
            f"4/kary-2/{it}",
            kary_log(4, "kary:2", it, sizes=("16M",)),
            run_record(4, "kary:2", it, **record),
        )
    return root


def test_a_newer_run_json_is_one_note_and_the_rest_of_the_tree_is_parsed(tmp_path: Path) -> None:
    _tree(tmp_path)
    write_cell(
        tmp_path,
        "4/kary-2/3",
        kary_log(4, "kary:2", 3, sizes=("16M",)),
        run_record(4, "kary:2", 3, format=2, state="failed"),
    )
    parsed, problems, cells, _ = read_tree(tmp_path)
    assert [str(p) for p in problems] == [
        "warning 4/kary-2/3/run.json: run.json ignored: format 2 is newer than this "
        "kary's 1: upgrade kary"
    ]
    assert cells == 4
    # The newer cell's log still counts, identified from its folder; its record does not.
    assert sorted(parsed.events["iteration"].unique()) == [0, 1, 2, 3]
    states = dict(zip(parsed.runs["iteration"], parsed.runs["state"], strict=True))
    assert states == {0: "succeeded", 1: "succeeded", 2: "succeeded", 3: ""}


def test_a_run_json_that_is_no_record_is_noted_and_ignored(tmp_path: Path) -> None:
    write_cell(tmp_path, "4/kary-2/0", kary_log(4, "kary:2", 0, sizes=("16M",)), "[1, 2]")
    write_cell(tmp_path, "4/kary-2/1", kary_log(4, "kary:2", 1, sizes=("16M",)), '{"nodes": 4}')
    parsed, problems, _, _ = read_tree(tmp_path)
    assert [str(p) for p in problems] == [
        "warning 4/kary-2/0/run.json: run.json ignored: not a JSON object but list",
        "warning 4/kary-2/1/run.json: run.json ignored: not a valid run record: "
        "cell: Field required",
    ]
    assert len(parsed.runs) == 2 and set(parsed.runs["state"]) == {""}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"format": 2}', "format 2 is newer than this kary's 1: upgrade kary"),
        ('{"format": "2"}', "format '2' is not a version number"),
        ("\xff", "not readable JSON"),
    ],
)
def test_the_runner_refuses_a_record_it_cannot_use_in_one_line(
    tmp_path: Path, text: str, reason: str
) -> None:
    (tmp_path / "run.json").write_text(text, encoding="latin-1")
    with pytest.raises(UserError) as caught:
        read_record(tmp_path)
    assert isinstance(caught.value, UnreadableRecord)
    assert caught.value.reason.startswith(reason)
    assert str(caught.value).startswith(f"{tmp_path / 'run.json'}: ")
    assert "\n" not in str(caught.value)


def test_the_report_needs_no_raw_tree(tmp_path: Path) -> None:
    emulator = {"fidelity": "within x1.5 here", "faults": ["corrupt:3", "kill:2"]}
    raw = _tree(
        tmp_path / "raw",
        place="test-instance",
        emulator=emulator,
        template_hash="h1",
        kary_commit="0123456789ab",
    )
    parse_tree(raw, tmp_path / "parsed", plots=False)
    before = collect_facts(load_parsed(tmp_path / "parsed"))
    shutil.rmtree(raw)
    after = collect_facts(load_parsed(tmp_path / "parsed"))
    assert after == before
    provenance = dict(after.provenance)
    assert (after.started, after.finished) == ("2026-01-01 00:00 UTC", "2026-01-01 00:01 UTC")
    assert after.wall_seconds == 3 * 60
    assert provenance["template hash"] == "h1"
    assert provenance["kary commit"] == "0123456789ab"
    assert provenance["where Flux ran"] == "test-instance"
    assert provenance["emulator fidelity"] == "within x1.5 here"
    assert provenance["faults injected (testing only)"] == "corrupt:3, kill:2"
    assert provenance["run records"] == "3 of 3 cells have a readable run.json"
    assert after.cost == "$0: ran on this machine (emulated Flux)"


def test_the_runs_table_carries_the_kary_commit_of_each_cell(tmp_path: Path) -> None:
    raw = _tree(tmp_path / "raw", kary_commit="0123456789ab-dirty")
    write_cell(
        raw, "4/kary-2/3", kary_log(4, "kary:2", 3, sizes=("16M",)), run_record(4, "kary:2", 3)
    )
    parse_tree(raw, tmp_path / "parsed", plots=False)
    runs = load_parsed(tmp_path / "parsed").runs
    commits = dict(zip(runs["iteration"], runs["kary_commit"], strict=True))
    assert commits == {
        0: "0123456789ab-dirty",
        1: "0123456789ab-dirty",
        2: "0123456789ab-dirty",
        3: "",
    }


def test_a_parsed_tree_from_before_the_record_columns_says_not_recorded(tmp_path: Path) -> None:
    parse_tree(_tree(tmp_path / "raw"), tmp_path / "parsed", plots=False)
    runs_csv = tmp_path / "parsed" / "runs.csv"
    old = pd.read_csv(runs_csv).drop(columns=list(RECORD_FACTS))
    old.to_csv(runs_csv, index=False)
    facts = collect_facts(load_parsed(tmp_path / "parsed"))
    assert (facts.started, facts.finished, facts.cost) == (None, None, None)
    assert facts.parsed_without_record_facts
    assert dict(facts.provenance)["template hash"].startswith("not recorded")
    page = write_report([tmp_path / "parsed"], tmp_path / REPORT_NAME).read_text()
    assert "dates not recorded (parsed by an older kary)" in page
