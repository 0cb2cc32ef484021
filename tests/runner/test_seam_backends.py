"""The seam on real processes: run.json's verdict and `kary parse` agree on what a log says.

`kary run` runs cells through a backend (the emulator, and real Flux where it
is on PATH) with a template folder whose entrypoint prints tricky KARY lines:
a step with rc 0 but no seconds, tab-separated lines, non-zero rc, a log cut
short before its done line.  For every cell, run.json's state and every row
`kary parse` makes of the log must agree, and a failed step is never a timing.

The stock template is held to experiments.formats.kary_line's writer: every
KARY line a real run prints is `format_kary_line` of what it says.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from unavailable import unavailable

from analysis.tables.parsed_dir import load_parsed
from analysis.tree import parse_tree
from experiments.formats.cell_layout import cell_dir, cell_id
from experiments.formats.kary_line import format_kary_line, kary_records
from experiments.formats.run_record import LOG_NAME, MINICLUSTER_NAME, read_record
from experiments.model.render import ENTRYPOINT_TEMPLATE, MINICLUSTER_TEMPLATE
from experiments.resources import resource_dir

REPO = Path(__file__).resolve().parents[2]
KARY = [sys.executable, "-c", "from experiments.cli import main; main()"]
SIZE = {"size": "1M", "size_bytes": 2**20}


def _step(event: str, blank: str = " ", **result: object) -> list[str]:
    """A step as the template prints it: the legacy EVENT line, then its KARY line."""
    line = format_kary_line({"event": event, **SIZE, **result})
    return [f"EVENT {event}-1M", line.replace("KARY ", f"KARY{blank}", 1)]


def _head(cell: str) -> list[str]:
    meta = {"meta": "cell", "cell": cell, "nodes": 4, "topo": cell.split("/")[1]}
    return [format_kary_line(meta), *_step("generate-blob", seconds=0.01, rc=0)]


# Every rank's cache empty after the drop: the distribution after it is timed cold.
COLD = {"1": 0, "2": 0, "3": 0}


def _done(failed: int) -> list[str]:
    return [format_kary_line({"meta": "done", "failed_steps": failed})]


# Per topology, the log its cell prints.  Every cell has 4 nodes and size 1M.
LOGS = {
    # Clean, but tab-separated: a step is a step whatever blank follows KARY.
    "kary:1": [
        *_head("4/kary-1/0"),
        *_step("create-archive", "\t", seconds=0.02, rc=0),
        format_kary_line(
            {"meta": "cold-cache", "size": "1M", "strategy": "all", "cached_blobs": COLD}
        ),
        *_step("distribute-all-nodes", " \t", seconds=0.03, rc=0),
        *_done(0),
    ],
    # Three steps that are no timing, each for its own reason.
    "kary:2": [
        *_head("4/kary-2/0"),
        *_step("create-archive", seconds=0.02, rc=0),
        *_step("distribute-all-nodes", rc=0),
        *_step("delete-archive-all-nodes", "\t", seconds=0.01, rc=3),
        *_step("clean-all-nodes", seconds=0.01, rc=1, error="rm: cannot remove"),
        *_done(3),
    ],
    # Cut short inside a step: no KARY result for it and no done line.
    "kary:3": [
        *_head("4/kary-3/0"),
        *_step("create-archive", seconds=0.02, rc=0),
        "EVENT distribute-all-nodes-1M",
    ],
}


def _tricky_template(folder: Path) -> Path:
    """The stock MiniCluster template and an entrypoint that prints LOGS[topo]."""
    folder.mkdir()
    shutil.copy(resource_dir("templates") / MINICLUSTER_TEMPLATE, folder)
    branches = []
    for i, (topo, lines) in enumerate(LOGS.items()):
        branches.append(f'{{% {"if" if i == 0 else "elif"} topo == "{topo}" %}}')
        branches += ["{% raw %}", "cat <<'KARY_LOG'", *lines, "KARY_LOG", "{% endraw %}"]
    text = "\n".join(["#!/bin/bash", *branches, "{% endif %}", "exit 0", ""])
    (folder / ENTRYPOINT_TEMPLATE).write_text(text)
    return folder


@pytest.fixture(params=["local", "flux"])
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "flux" and shutil.which("flux") is None:
        unavailable("flux-core's `flux` is not on PATH (see docs/running.md, 'Real Flux')")
    return str(request.param)


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A short TMPDIR: Flux's socket paths must stay short."""
    folder = Path(tempfile.mkdtemp(prefix="ks-", dir="/tmp"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _run(backend: str, scratch: Path, topos: list[str], *extra: str) -> Path:
    data = scratch / "raw"
    env = dict(os.environ, TMPDIR=str(scratch))
    env.pop("FLUX_URI", None)
    args = ["run", "--exact-nodes", "4", "--sizes", "1M", "--backend", backend]
    for topo in topos:
        args += ["--topo", topo]
    done = subprocess.run(
        [*KARY, *args, *extra, "--data-dir", str(data)],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode in (0, 1), done.stderr
    return data


def _statuses(events: pd.DataFrame, topo: str) -> dict[str, str]:
    """event -> parsed status, for the one cell of `topo`."""
    cell = events[events["topo"] == topo]
    return dict(zip(cell["event"], cell["status"], strict=True))


def test_run_json_and_every_parsed_row_agree_on_tricky_kary_lines(
    backend: str, scratch: Path
) -> None:
    data = _run(backend, scratch, list(LOGS), "--template", str(_tricky_template(scratch / "t")))
    parse_tree(data, scratch / "parsed", plots=False)
    parsed = load_parsed(scratch / "parsed")
    events, runs = parsed.events, parsed.runs
    # A failed step is never a timing, nor is any step of a cell that failed; an ok one
    # always is.
    voided = events["status"].str.startswith("void: cell failed: ")
    assert set(events.loc[~voided, "status"]) == {"ok", "failed"}
    assert events.loc[events["status"] != "ok", "time_seconds"].isna().all()
    assert set(events.loc[voided, "run_state"]) == {"failed"}
    assert events.loc[events["status"] == "ok", "time_seconds"].notna().all()
    for topo in LOGS:
        record = read_record(cell_dir(data, cell_id(4, topo, 0)))
        assert record is not None and record.backend == backend
        rows = _statuses(events, topo)
        failed = {f"{event} 1M" for event, status in rows.items() if status == "failed"}
        complete = bool(runs.loc[runs["topo"] == topo, "complete"].iloc[0])
        assert (record.state == "succeeded") == (complete and not failed), (topo, record)
        # Each step the runner counted failed is a failed row; parse finds no other
        # unless the log ends inside a step (which the runner calls unfinished).
        extra = record.model_dump()
        assert set(extra["failed_steps"]) <= failed
        if complete:
            assert set(extra["failed_steps"]) == failed
            assert extra["steps"] == len(rows)

    clean = read_record(data / "4/kary-1/0")
    assert clean is not None and clean.state == "succeeded"
    assert _statuses(events, "kary:1") == {
        "generate-blob": "ok", "create-archive": "ok", "distribute-all-nodes": "ok",
    }  # fmt: skip
    tricky = read_record(data / "4/kary-2/0")
    assert tricky is not None and tricky.state == "failed"
    assert tricky.error == (
        "3 of 5 steps failed: distribute-all-nodes 1M (no time in the KARY line), "
        "delete-archive-all-nodes 1M (rc 3), clean-all-nodes 1M (rc 1)"
    )
    cut = read_record(data / "4/kary-3/0")
    assert cut is not None and cut.state == "failed"
    assert cut.error == "the benchmark did not finish (no KARY done line)"
    void = f"void: cell failed: {cut.error}"
    assert _statuses(events, "kary:3") == {
        "generate-blob": void, "create-archive": void, "distribute-all-nodes": "failed",
    }  # fmt: skip


def test_every_kary_line_the_stock_template_prints_is_the_writers(
    backend: str, scratch: Path
) -> None:
    data = _run(backend, scratch, ["kary:2"], "--strategy", "all,leaves,middle")
    cell = data / "4/kary-2/0"
    record = read_record(cell)
    assert record is not None and record.state == "succeeded", record
    assert (cell / MINICLUSTER_NAME).exists()
    log = (cell / LOG_NAME).read_text()
    # The script's own text follows `SCRIPT entrypoint`; its echo lines are not output.
    output = log.split("\nSCRIPT entrypoint\n", 1)[0]
    lines = [line for line in output.splitlines() if line.startswith("KARY")]
    records = list(kary_records(output))
    assert len(lines) == len(records) > 10 and None not in records
    assert lines == [format_kary_line(r) for r in records if r is not None]
    assert json.loads(lines[-1][len("KARY ") :]) == {"meta": "done", "failed_steps": 0}
