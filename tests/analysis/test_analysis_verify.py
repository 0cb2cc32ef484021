"""A copy that fails verification is a failed distribution: no time anywhere, a reason why."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from analysis_samples import kary_log, run_record, write_cell

from analysis import load_parsed, parse_tree
from analysis.page.results import strategy_samples
from analysis.read.kary_log import parse_kary
from analysis.read.log_text import LogText, decode_log

VERIFY = "verify-distribute-all-nodes-16M"
# What templates/entrypoint.sh.j2's kary_verify prints when rank 3's copy differs
# (taken from a run on the emulator with the fault corrupt:3).
MISMATCH_ON_3 = (
    "kary-verify: /tmp/kary-extract/blob-16M: sha256 mismatch or unreadable\n3: Exit 1\n"
)


def _parse(text: str) -> LogText:
    log = decode_log(text.encode())
    assert isinstance(log, LogText)
    return log


def _distribute(text: str) -> tuple[float | None, str, str]:
    kary = parse_kary(_parse(text))
    (step,) = [s for s in kary.steps if s.event == "distribute-all-nodes"]
    return step.seconds, step.status, step.reason


@pytest.mark.parametrize(
    ("printed", "reason"),
    [
        (MISMATCH_ON_3, "verify failed on rank 3: sha256 mismatch or unreadable"),
        (
            "kary-verify: /x: sha256 mismatch or unreadable\n[1-2]: Exit 1\n"
            "flux-exec: Error: rank 5: sh: connection lost\n",
            "verify failed on ranks 1-2,5: sha256 mismatch or unreadable",
        ),
        ("", "verify failed (ranks unknown): exit status 1"),
    ],
)
def test_a_failed_verify_fails_its_distribution(printed: str, reason: str) -> None:
    log = kary_log(sizes=("16M",), rc={VERIFY: 1}, output={VERIFY: printed})
    assert _distribute(log) == (None, "failed", reason)


def test_a_log_cut_inside_verify_leaves_the_copy_unverified() -> None:
    log = kary_log(sizes=("16M",), stop_before=VERIFY, done=False)
    assert _distribute(log) == (
        None,
        "failed",
        "verify failed (ranks unknown): log ends inside this step (truncated)",
    )


def test_a_passing_verify_keeps_the_time_and_a_failed_one_raises_no_false_warning() -> None:
    assert _distribute(kary_log(sizes=("16M",))) == (2.0, "ok", "")
    # The template's done line counts the verify step only; that is not a mismatch.
    log = kary_log(sizes=("16M",), rc={VERIFY: 1}, output={VERIFY: MISMATCH_ON_3})
    assert parse_kary(_parse(log)).notes == []


def test_an_unverified_copy_has_no_time_in_any_table(tmp_path: Path) -> None:
    root = tmp_path / "raw"
    # The bad copy was the fastest: counted, it would pull the median down to 0.2 s.
    for it, seconds in enumerate((1.0, 0.1, 2.0)):
        rc = {VERIFY: 1} if it == 1 else None
        output = {VERIFY: MISMATCH_ON_3}
        log = kary_log(4, "kary:2", it, sizes=("16M",), seconds=seconds, rc=rc, output=output)
        write_cell(root, f"4/kary-2/{it}", log, run_record(4, "kary:2", it))
    parse_tree(root, tmp_path / "parsed", plots=False)
    events = pd.read_csv(tmp_path / "parsed" / "topologies-events.csv")
    rows = events[(events["event"] == "distribute-all-nodes") & (events["iteration"] == 1)]
    assert rows["status"].tolist() == ["failed"]
    assert rows["time_seconds"].isna().all()
    assert rows["reason"].tolist() == ["verify failed on rank 3: sha256 mismatch or unreadable"]
    summary = pd.read_csv(tmp_path / "parsed" / "summary.csv")
    row = summary[summary["event"] == "distribute-all-nodes"].iloc[0]
    assert (row["n"], row["failed"], row["median"]) == (2, 1, 3.0)
    samples = strategy_samples(load_parsed(tmp_path / "parsed").events)
    assert samples.set_index("iteration")["status"].to_dict() == {0: "ok", 1: "failed", 2: "ok"}
