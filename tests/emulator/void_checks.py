"""A failed precondition voids what it guards: the same checks on either backend.

Each check runs one small cell with exactly one command made to fail
(failing_commands), parses it, and holds every consumer to the void: the
rows say `void: <reason>` with no time, and summary.csv, `kary compare`, the
report's verdicts and failures, and the time model's history fit see no
timing of them.  tests/emulator runs them on the emulator, tests/flux on
real flux-core.
"""

from __future__ import annotations

from pathlib import Path

from failing_commands import fail_once, fired, rows, run_and_parse, short_blob_once

from analysis.compare import compare_parsed, format_comparison
from analysis.page.facts import collect_facts
from analysis.page.results import strategy_samples
from analysis.tables.parsed_dir import Parsed
from experiments.estimate.history import load_sweep
from experiments.formats.kary_line import (
    VOID_BLOB,
    VOID_CACHE_SIZE,
    VOID_COLD_CACHE,
    VOID_NO_ARCHIVE,
)

__all__ = ["CHECKS"]


def _assert_void(parsed: Parsed, parsed_dir: Path, void: set[tuple[str, str]], reason: str) -> None:
    """`void` rows are void for `reason` and reach no derived number; the others are not void."""
    table = rows(parsed.events)
    assert void <= set(table), sorted(table)
    for key in void:
        assert table[key] == (f"void: {reason}", None, reason), key
    # The cell failed (its precondition did), so it gives no timing at all: each other
    # step it timed is void too, for the cell's failure (analysis.read.cell).
    for key, (status, seconds, _) in table.items():
        if key not in void:
            assert status == "failed" or status.startswith("void: cell failed: "), (key, status)
            assert seconds is None, key
    # summary.csv: no group made of void rows, and no void row counted in one.
    summary = {(str(r.event), str(r.size_label)): r for r in parsed.summary.itertuples()}
    for key in void:
        assert key not in summary, key
    # The report: the failures section lists each with its reason, the verdicts see none.
    facts = collect_facts(parsed)
    listed = {(f.event, f.size) for f in facts.failures if f.reason == f"void: {reason}"}
    timed_void = {k for k in void if k[0] != "generate-blob"}
    assert {(event, size.replace(" ", "")) for event, size in listed} >= {
        (event, size) for event, size in timed_void
    }
    all_void = {k for k, (status, _, _) in table.items() if status.startswith("void")}
    assert facts.steps_void == len({k for k in all_void if k[0] != "generate-blob"})
    samples = strategy_samples(parsed.events)
    assert not samples["status"].astype(str).str.startswith("void").any()
    # kary compare: counted apart, never a median, never a "newly failing".
    comparison = compare_parsed(parsed, parsed)
    for row in comparison.table.itertuples():
        key = (str(row.event), str(row.size_label))
        if key in void:
            assert (row.n_after, row.void_after, row.mark) == (0, 1, ""), key
    assert "void" in format_comparison(comparison) or not timed_void
    # The time model's fit from history holds no time of a void step.
    (cell,) = load_sweep(parsed_dir).cells
    held = {(event, size) for event, size in cell.seconds}
    sizes = dict(zip(parsed.events["size_label"], parsed.events["size_bytes"], strict=True))
    for event, label in void:
        assert (event, int(sizes[label])) not in held, (event, label)


def check_cold_cache(backend: str, scratch: Path) -> None:
    """The first cache drop fails: that size and strategy's distribution is void, nothing else."""
    wrapper = scratch / "wrap"
    env = fail_once(wrapper, " content dropcache ")
    done, record, parsed, parsed_dir = run_and_parse(
        backend, scratch, env, ["--sizes", "1M", "--strategy", "all,leaves"]
    )
    assert fired(wrapper)
    assert done.returncode == 1, done.stderr
    assert record["state"] == "failed"
    assert (
        "2 of 11 steps void: distribute-all-nodes 1M (cold cache not established)"
        in (record["error"])
    )
    void = {("distribute-all-nodes", "1M"), ("verify-distribute-all-nodes", "1M")}
    _assert_void(parsed, parsed_dir, void, VOID_COLD_CACHE)
    table = rows(parsed.events)
    # Ran, but in a cell that failed: no timing either (analysis.read.cell).
    for key in (("create-archive", "1M"), ("distribute-leaf-nodes", "1M")):
        status, seconds, _ = table[key]
        assert status.startswith("void: cell failed: ") and seconds is None, key


def check_cache_size(backend: str, scratch: Path) -> None:
    """The cache-size reload fails: every step of the cell is void."""
    wrapper = scratch / "wrap"
    env = fail_once(wrapper, " module reload content purge-target-size=")
    done, record, parsed, parsed_dir = run_and_parse(
        backend, scratch, env, ["--sizes", "1M", "--strategy", "all", "--purge-target-size", "4M"]
    )
    assert fired(wrapper)
    assert done.returncode == 1, done.stderr
    assert record["state"] == "failed" and "failed precondition(s)" in record["error"]
    void = set(rows(parsed.events))
    assert ("distribute-all-nodes", "1M") in void and ("generate-blob", "1M") in void
    _assert_void(parsed, parsed_dir, void, VOID_CACHE_SIZE)
    assert parsed.summary.empty


def check_short_blob(backend: str, scratch: Path) -> None:
    """The first blob comes out short: its generation fails and its size is void."""
    wrapper = scratch / "wrap"
    env = short_blob_once(wrapper)
    done, record, parsed, parsed_dir = run_and_parse(
        backend, scratch, env, ["--sizes", "1M,2M", "--strategy", "all"]
    )
    assert fired(wrapper)
    assert done.returncode == 1, done.stderr
    assert record["state"] == "failed"
    table = rows(parsed.events)
    assert table[("generate-blob", "1M")][:2] == ("failed", None), table[("generate-blob", "1M")]
    void = {k for k in table if k[1] == "1M" and k[0] != "generate-blob"}
    assert ("distribute-all-nodes", "1M") in void
    _assert_void(parsed, parsed_dir, void, VOID_BLOB)
    # Ran, but in a cell that failed: no timing either (analysis.read.cell).
    status, seconds, _ = table[("distribute-all-nodes", "2M")]
    assert status.startswith("void: cell failed: ") and seconds is None


def check_no_archive(backend: str, scratch: Path) -> None:
    """`flux archive create --chunksize` fails: its distribution is not run (an extract
    would wait for the archive forever), and is void."""
    wrapper = scratch / "wrap"
    env = fail_once(wrapper, " archive create ")
    done, record, parsed, parsed_dir = run_and_parse(
        backend, scratch, env, ["--sizes", "1M", "--strategy", "all", "--chunksize", "256K"]
    )
    assert fired(wrapper)
    assert done.returncode == 1, done.stderr
    assert record["state"] == "failed"
    table = rows(parsed.events)
    assert table[("create-archive", "1M")][:2] == ("failed", None)
    void = {("distribute-all-nodes", "1M"), ("verify-distribute-all-nodes", "1M")}
    _assert_void(parsed, parsed_dir, void, VOID_NO_ARCHIVE)


CHECKS = {
    "cold-cache": check_cold_cache,
    "cache-size": check_cache_size,
    "short-blob": check_short_blob,
    "no-archive": check_no_archive,
}
