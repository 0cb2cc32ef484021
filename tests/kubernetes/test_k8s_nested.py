"""The nested layout on Kubernetes against the fake API server (no Flux: the fake's
operator frames its scenario log per cell, as the driver would; the driver itself
runs on real Flux in tests/flux/test_k8s_nested_flux.py and below on a fake flux)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from fake_apiserver import PINNED_VIEW, Scenario, _nested_cells
from fast_backend import fast_backend
from strict_schema import crd_schema, validate_strictly
from typer.testing import CliRunner

from experiments.backends.base import BackendError, QueuedCell
from experiments.backends.kubernetes.nested_group import lines_lost
from experiments.backends.kubernetes.objects import rank_zero
from experiments.backends.kubernetes.pod_watch import StartLimits
from experiments.cli import app
from experiments.formats.labels import current_owner
from experiments.formats.nested_frame import (
    driver_began,
    format_frame,
    frame_sequence,
    split_frames,
)
from experiments.initial_exit import NO_JOB_CLEANUP, NO_JOB_CLEANUP_ENV
from experiments.model.log_budget import cell_log_bytes
from experiments.model.plan import Cell
from experiments.model.render import RenderOptions, render_cell
from experiments.model.render_nested import NestedCell, render_nested

TOPOS = ["--topo", "kary:1", "--topo", "kary:2", "--topo", "kary:3"]
# A cell's log as its entrypoint prints it: `{cell}` becomes the cell's id.
STEP_LOG = (
    'KARY {"meta": "cell", "cell": "{cell}", "flux_version": "0.88.0"}\n'
    "hello from rank 0\n"
    'KARY {"event": "distribute-all-nodes", "size": "1M", "size_bytes": 1048576, '
    '"seconds": 1.25, "rc": 0}\n'
    'KARY {"meta": "done", "failed_steps": 0}\n'
)


@pytest.fixture
def fast(apiserver: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cells that succeed; the CLI's backend with short backoffs, pod looks and log reads."""
    apiserver.cluster.scenario = Scenario(log=STEP_LOG)
    fast_backend(monkeypatch)


def _run(raw: Path, *args: str) -> Any:
    # The layouts are under test here, not the smoke cell a billed sweep runs first.
    args = (*args, "--sizes", "1M", "--data-dir", str(raw), "--yes", "--no-smoke")
    return CliRunner().invoke(
        app, ["run", "--backend", "kubernetes", "--flux-view", PINNED_VIEW, *args]
    )


def _records(raw: Path) -> dict[str, dict[str, Any]]:
    return {
        str(p.parent.relative_to(raw)): json.loads(p.read_text()) for p in raw.glob("**/run.json")
    }


def test_kubernetes_runs_a_node_counts_cells_in_one_minicluster_by_default(
    apiserver: Any, fast: None, tmp_path: Path
) -> None:
    raw = tmp_path / "raw"
    result = _run(raw, "--exact-nodes", "4", *TOPOS)
    assert result.exit_code == 0, result.output
    created = apiserver.cluster.created
    assert len(created) == 1 and apiserver.cluster.miniclusters == {}
    body = created[0]
    assert "topology" not in body["spec"]["flux"]  # the operator's default; cells set theirs
    labels = body["metadata"]["labels"]
    assert labels["kary/layout"] == "nested" and "kary/cell" not in labels
    # Labelled as every MiniCluster kary makes, so a crashed run's is reaped at up().
    assert labels["kary/owner"] == current_owner() and labels["kary/sweep"]
    assert _nested_cells(body) == ["4/kary-1/0", "4/kary-2/0", "4/kary-3/0"]
    records = _records(raw)
    assert {r["state"] for r in records.values()} == {"succeeded"}
    assert sorted(r["nested_in"]["cell_index"] for r in records.values()) == [0, 1, 2]
    assert {r["layout"] for r in records.values()} == {"nested"}
    # Resume: every cell is done, so nothing is created.
    again = _run(raw, "--exact-nodes", "4", *TOPOS)
    assert again.exit_code == 0, again.output
    assert len(apiserver.cluster.created) == 1


def test_a_node_counts_cells_split_where_their_log_would_pass_the_rotation_budget(
    apiserver: Any, fast: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Room for two cells' logs in a group (issue 44, item 1): three cells of a node
    count make two MiniClusters, in plan order, so rank 0's log never passes the
    kubelet's rotation size under kary."""
    two = 2 * cell_log_bytes("distribute", 4, 1, 1)
    monkeypatch.setattr("experiments.backends.kubernetes.nested_group.group_budget", lambda: two)
    raw = tmp_path / "raw"
    result = _run(raw, "--exact-nodes", "4", *TOPOS)
    assert result.exit_code == 0, result.output
    groups = [_nested_cells(body) for body in apiserver.cluster.created]
    assert groups == [["4/kary-1/0", "4/kary-2/0"], ["4/kary-3/0"]]
    assert {r["state"] for r in _records(raw).values()} == {"succeeded"}


def test_per_cell_stays_behind_a_flag(apiserver: Any, fast: None, tmp_path: Path) -> None:
    result = _run(tmp_path / "raw", "--exact-nodes", "4", *TOPOS, "--layout", "per-cell")
    assert result.exit_code == 0, result.output
    assert len(apiserver.cluster.created) == 3
    assert {r["layout"] for r in _records(tmp_path / "raw").values()} == {"per-cell"}


def test_node_counts_run_together_across_iterations_one_minicluster_each(
    apiserver: Any, fast: None, tmp_path: Path
) -> None:
    raw = tmp_path / "raw"
    result = _run(raw, "--max-nodes", "5", "--iters", "2")  # designs of 4 and of 5 nodes
    assert result.exit_code == 0, result.output
    groups = [_nested_cells(body) for body in apiserver.cluster.created]
    counts = [{cell.split("/")[0] for cell in group} for group in groups]
    assert counts == [{"4"}, {"5"}]  # one MiniCluster per node count, each made once
    for group in groups:  # a count's cells in plan order: iteration 0's, then 1's
        iterations = [cell.rsplit("/", 1)[1] for cell in group]
        assert iterations == sorted(iterations) and set(iterations) == {"0", "1"}
    assert len(_records(raw)) == sum(len(g) for g in groups) == 10


def test_a_driver_that_dies_fails_its_cell_and_the_next_cell_gets_a_new_minicluster(
    apiserver: Any, fast: None, tmp_path: Path
) -> None:
    apiserver.cluster.scenario = Scenario(log=STEP_LOG, run_s=0.3, nested_cells_done=1)
    raw = tmp_path / "raw"
    result = _run(raw, "--exact-nodes", "4", *TOPOS)
    assert result.exit_code == 1, result.output
    records = _records(raw)
    assert records["4/kary-1/0"]["state"] == "succeeded"
    failed = records["4/kary-2/0"]
    assert failed["state"] == "failed"
    assert "ended before cell 4/kary-2/0 did" in failed["error"]
    assert failed["diagnostics"]["pods"]
    # The next cell ran in a MiniCluster of its own, made for the cells still to run.
    assert len(apiserver.cluster.created) == 2
    assert _nested_cells(apiserver.cluster.created[1]) == ["4/kary-3/0"]
    assert apiserver.cluster.miniclusters == {}
    # Rank 0's log was followed, not read whole each time: stamped, and after the first
    # read of a group only its last stretch (sinceSeconds).
    reads = [q for m, p, q in apiserver.cluster.requests if p.endswith("/log")]
    assert reads and all(q.get("timestamps") == "true" for q in reads)
    assert any("sinceSeconds" in q for q in reads)


def test_a_hung_driver_times_its_cell_out_and_the_minicluster_is_deleted(
    apiserver: Any, make_backend: Any
) -> None:
    apiserver.cluster.scenario = Scenario(log=STEP_LOG, outcome="never", nested_cells_done=0)
    cells = [Cell(4, f"kary:{k}", 0, (2**20,), ("all",)) for k in (1, 2)]
    queued = [
        QueuedCell(c, render_cell(4, c.topo, [2**20], ["all"], c.id, RenderOptions()), 1.0)
        for c in cells
    ]
    with make_backend(layout="nested", log_every_s=0.05, nested_grace_s=0.5) as backend:
        backend.queue(queued)
        result = backend.run(cells[0], queued[0].rendered, 1.0)
        assert apiserver.cluster.miniclusters == {}
    assert result.timed_out and result.rc is None
    assert "did not end within 1 s (+0.5 s)" in str(result.error)
    assert "hello from rank 0" in result.log  # what the cell printed so far is kept


def _one_nested_cell(make_backend: Any, limit: float, **settings: Any) -> Any:
    cell = Cell(4, "kary:1", 0, (2**20,), ("all",))
    rendered = render_cell(4, cell.topo, [2**20], ["all"], cell.id, RenderOptions())
    with make_backend(layout="nested", log_every_s=0.05, nested_grace_s=0.5, **settings) as backend:
        backend.queue([QueuedCell(cell, rendered, limit)])
        return backend.run(cell, rendered, limit)


def test_a_cells_clock_starts_at_its_job_frame_not_at_the_groups_creation(
    apiserver: Any, make_backend: Any
) -> None:
    """The first cell of a group waits for its pods (image pulls) before its job starts:
    that wait is not the cell's time, so a 1 s cell whose job starts 2.5 s in is fine."""
    apiserver.cluster.scenario = Scenario(log=STEP_LOG, run_s=4.0, first_job_after_s=2.5)
    result = _one_nested_cell(make_backend, 1.0)
    assert (result.rc, result.error, result.timed_out) == (0, None, False)


def test_a_nested_cell_whose_brokers_never_join_is_a_start_failure(
    apiserver: Any, make_backend: Any
) -> None:
    """Checked for every cell, not only a group's first: its job started and its
    benchmark never began within join_s.  The job starts 1.5 s in, well past join_s
    after the pods run: the group's own look must not blame the MiniCluster's brokers
    then, since its driver has framed the cell (under load the job frame once came
    after join_s, and kary said the MiniCluster's brokers never joined)."""
    apiserver.cluster.scenario = Scenario(
        log="waiting for brokers\n", outcome="never", nested_cells_done=0, first_job_after_s=1.5
    )
    result = _one_nested_cell(
        make_backend, 30.0, start_limits=StartLimits(check_every_s=0.05, join_s=0.5)
    )
    assert result.start_failure == "brokers-never-joined", result.error
    assert "never began: some nested broker never joined" in str(result.error)


def test_rank_zero_is_the_newest_index_zero_pod_not_the_first_by_name() -> None:
    def pod(name: str, created: str) -> dict[str, Any]:
        labels = {"batch.kubernetes.io/job-completion-index": "0", "job-name": "mc"}
        return {"metadata": {"name": name, "creationTimestamp": created, "labels": labels}}

    old, new = pod("mc-0-zz9", "2026-11-26T10:00:00Z"), pod("mc-0-aa1", "2026-11-26T11:00:00Z")
    assert rank_zero([new, old], "mc") is new and rank_zero([old, new], "mc") is new


def test_a_sweep_stopped_between_cells_deletes_its_minicluster_on_down(
    apiserver: Any, make_backend: Any
) -> None:
    """A spending cap (or any stop before a node count's last cell) ends in down()."""
    apiserver.cluster.scenario = Scenario(log=STEP_LOG, outcome="never")
    cells = [Cell(4, f"kary:{k}", 0, (2**20,), ("all",)) for k in (1, 2)]
    queued = [
        QueuedCell(c, render_cell(4, c.topo, [2**20], ["all"], c.id, RenderOptions()), 30.0)
        for c in cells
    ]
    backend = make_backend(layout="nested", log_every_s=0.05)
    backend.up()
    backend.queue(queued)
    first = backend.run(cells[0], queued[0].rendered, 30.0)
    assert (first.rc, first.error) == (0, None)
    assert len(apiserver.cluster.miniclusters) == 1  # kept for the node count's next cell
    backend.down()
    assert apiserver.cluster.miniclusters == {}


def test_someone_elses_minicluster_of_the_nested_name_is_left_alone(
    apiserver: Any, make_backend: Any, cell: Cell, rendered: Any
) -> None:
    apiserver.cluster.miniclusters["flux-sample-n4"] = {"metadata": {"name": "flux-sample-n4"}}
    with make_backend(layout="nested") as backend, pytest.raises(BackendError) as caught:
        backend.run(cell, rendered, 10)
    assert "flux-sample-n4 that kary did not create" in str(caught.value)
    assert "flux-sample-n4" in apiserver.cluster.miniclusters


def test_the_nested_minicluster_validates_against_the_crd(minicluster_crd: Path) -> None:
    rendered = [
        render_cell(30, f"kary:{k}", [2**30 * i for i in range(1, 11)], ["all"], f"30/kary-{k}/0")
        for k in range(1, 17)
    ]
    nested = render_nested(
        yaml.safe_load(rendered[0].minicluster_yaml),
        30,
        [
            NestedCell(f"30/kary-{k + 1}/0", f"kary:{k + 1}", 600, r.entrypoint_sh)
            for k, r in enumerate(rendered)
        ],
    )
    validate_strictly(nested.body, crd_schema(minicluster_crd))
    assert yaml.safe_load(nested.yaml) == nested.body
    # A cell's own instance skips rc1's job cleanup; the outer one, whose jobs are the
    # cells, keeps it (the cell's MiniCluster it was made from had the switch).
    base = yaml.safe_load(rendered[0].minicluster_yaml)["spec"]["containers"][0]
    assert base["environment"] == dict(NO_JOB_CLEANUP_ENV)
    assert "environment" not in nested.body["spec"]["containers"][0]
    base["environment"]["USERS_OWN"] = "kept"  # a user's template's own variable stays
    mine = yaml.safe_load(rendered[0].minicluster_yaml)
    mine["spec"]["containers"][0] = base
    again = render_nested(mine, 30, [NestedCell("30/kary-1/0", "kary:1", 600, "echo\n")])
    assert again.body["spec"]["containers"][0]["environment"] == {"USERS_OWN": "kept"}
    # flux-distribute's 16 topologies x 10 sizes: 409 KB of entrypoints, packed far under 1 MiB.
    assert sum(len(r.entrypoint_sh) for r in rendered) > 400_000
    assert len(nested.yaml) < 40_000


# A fake `flux` for the driver: kary:3 cannot be submitted, kary:2's job fails,
# kary:4's job never starts (a rank drained), `flux batch` warns on stderr and
# prints the id on stdout; every call is logged to $FAKE_CALLS.
_FAKE_FLUX = """#!/bin/bash
echo "$*" >>"$FAKE_CALLS"
case "$1 $2" in
  "version "*) echo "commands:    		${FAKE_VERSION:-0.88.0}" ;;
  "exec -r") shift 3; "$@" ;;
  "batch "*) [[ "$*" == *tbon.topo=kary:3* ]] && { echo "no resources" >&2; exit 1; }
     echo "flux-batch: warning: a warning on stderr" >&2
     case "$*" in *=kary:2*) echo f2 ;; *=kary:4*) echo f4 ;; *) echo f1 ;; esac ;;
  "job attach") echo "out of $3"; [ "$3" = f2 ] && exit 7; exit 0 ;;
  "job wait-event") [ "$5 $6" = "f4 start" ] && exit 1; exit 0 ;;
  "resource status") printf 'STATE    NNODES RANKS\\navail         3 0-2\\ndrained       1 3\\n' ;;
  "cancel "*) ;;
  "jobs -no") [ "$3" = "{result} {nodelist}" ] &&
     { [ "$4" = f2 ] && echo "FAILED x[0-3]" || echo "COMPLETED x[0-3]"; } ;;
esac
"""


def _run_driver(tmp_path: Path, cells: list[NestedCell], **env_extra: str) -> str:
    """The rendered driver run on the fake flux above; its stdout."""
    fake = tmp_path / "bin" / "flux"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(_FAKE_FLUX)
    fake.chmod(0o755)
    base = render_cell(4, "kary:1", [2**20], ["all"], "4/kary-1/0").minicluster_yaml
    nested = render_nested(
        yaml.safe_load(base),
        4,
        cells,
        start_timeout_s=5,
        disk_margin_bytes=0,
        eviction_free_percent=0,
    )
    (tmp_path / "driver.sh").write_text(nested.driver_sh)
    for k in range(len(cells)):
        (tmp_path / f"cell-{k}.sh").write_text("echo hi\n")
    env = dict(
        os.environ,
        PATH=f"{fake.parent}:{os.environ['PATH']}",
        KARY_BLOB_CACHE=str(tmp_path / "blobs"),
        KARY_NESTED_STATE=str(tmp_path / "state"),
        FAKE_CALLS=str(tmp_path / "calls"),
        **env_extra,
    )
    return subprocess.run(
        ["bash", str(tmp_path / "driver.sh")], capture_output=True, text=True, env=env, check=True
    ).stdout


def test_the_driver_frames_each_cell_as_the_reader_expects(tmp_path: Path) -> None:
    """The driver on a fake `flux`: its frame lines are format_frame's, byte for byte,
    the job id is `flux batch`'s stdout alone, a failed job keeps the driver going, a
    job that cannot be submitted says why, and one that never starts is cancelled
    with `flux resource status` in its frame."""
    cells = [NestedCell(f"4/kary-{k}/0", f"kary:{k}", 60, "echo hi\n") for k in (1, 2, 3, 4)]
    out = _run_driver(tmp_path, cells)
    lines = out.splitlines()
    assert lines[0] == format_frame("begin", "4/kary-1/0", seq=1)
    assert lines[1] == format_frame("job", "4/kary-1/0", seq=2, jobid="f1", flux_version="0.88.0")
    assert lines[-1] == format_frame("finished", seq=12)
    # Frames numbered 1, 2, ... over the driver's life: a gap would say frames were lost.
    assert [frame_sequence(line) for line in lines if "KARY-NESTED" in line] == list(range(1, 13))
    frames = split_frames(out)
    assert list(frames.cells) == [c.cell_id for c in cells] and frames.finished
    first, second, third, fourth = frames.cells.values()
    assert first.text == "out of f1\n" and first.end is not None
    # The job's lines, counted as they passed: the log holds them all.
    assert first.end["lines"] == 1 and first.printed == 1 and first.lines_lost == 0
    assert {k: first.end[k] for k in ("rc", "result", "hosts")} == {
        "rc": 0,
        "result": "COMPLETED",
        "hosts": "x[0-3]",
    }
    assert second.end is not None and (second.end["rc"], second.end["result"]) == (7, "FAILED")
    assert third.end is not None and third.end["rc"] is None
    assert third.end["error"] == "flux batch: no resources"
    assert fourth.end is not None and fourth.end["kind"] == "not-started"
    assert fourth.jobid == "f4" and fourth.text == ""  # never attached: nothing ran
    assert "did not start within 5 s" in fourth.end["error"]
    assert "drained 1 3" in fourth.end["error"]
    calls = (tmp_path / "calls").read_text().splitlines()
    assert "cancel f4" in calls and "cancel f1" not in calls
    # Each cell's job had a statedir made beforehand (kept: WAL, NORMAL) and a TMPDIR of
    # its own, and nothing of either is left once the cell ended, whatever its end.
    batches = [c for c in calls if c.startswith("batch ")]
    assert all("-Sstatedir=" in b and "--env=TMPDIR=" in b for b in batches)
    assert list((tmp_path / "state").iterdir()) == []
    # And none runs the job cleanup of flux-core's rc1 at its stop: it runs no job.
    assert all(f"--env={NO_JOB_CLEANUP}" in b for b in batches)


def test_the_driver_checks_rank_zeros_disk_and_flux_version_before_a_cell(
    tmp_path: Path,
) -> None:
    """A cell whose blobs and content store do not fit rank 0's free disk, and a mincrit
    cell on a Flux older than 0.75, end as start failures without a job."""
    huge = 1 << 60  # more than any disk this machine has
    cells = [
        NestedCell("4/kary-1/0", "kary:1", 60, "echo hi\n", (huge,)),
        NestedCell("4/mincrit/0", "mincrit", 60, "echo hi\n", (2**20,)),
        NestedCell("4/kary-5/0", "kary:5", 60, "echo hi\n", (2**20,)),
    ]
    out = _run_driver(tmp_path, cells, FAKE_VERSION="0.74.0")
    frames = split_frames(out)
    disk, mincrit, fine = frames.cells.values()
    assert disk.end is not None and disk.end["kind"] == "disk" and disk.jobid is None
    assert disk.end["need_bytes"] == 2 * huge and disk.end["free_bytes"] < huge
    assert mincrit.end is not None and mincrit.end["kind"] == "flux-version"
    assert "needs flux-core 0.75.0 or later; this instance has 0.74.0" in mincrit.end["error"]
    assert fine.end is not None and fine.end["rc"] == 0
    calls = (tmp_path / "calls").read_text()
    assert calls.count("batch ") == 1  # only the cell that fits was submitted


def test_split_frames_keeps_a_running_cell_and_ignores_what_is_not_a_frame() -> None:
    log = "\n".join(
        [
            "operator banner",
            format_frame("begin", "a"),
            "KARY-NESTED {not json",
            format_frame("end", "a", rc=0, result="TIMEOUT"),
            format_frame("begin", "b"),
            "partial output",
        ]
    )
    frames = split_frames(log + "\n")
    assert frames.cells["a"].timed_out and frames.cells["a"].text == "KARY-NESTED {not json\n"
    assert not frames.cells["b"].ended and frames.cells["b"].text == "partial output\n"
    assert not frames.finished


def test_only_a_framed_cell_shows_a_nested_groups_brokers_joined() -> None:
    """The group's own look (pod_watch) takes a driver's frame, and nothing else, as
    proof that its MiniCluster's brokers joined: broker noise or a broken frame is not."""
    assert not driver_began("")
    assert not driver_began("broker: quorum not reached\nKARY-NESTED {not json\n")
    assert driver_began("operator banner\n" + format_frame("begin", "4/kary-1/0") + "\n")


def test_a_cell_whose_log_lacks_lines_its_end_frame_counts_says_how_many() -> None:
    """A rotation with no frame among the lines it took: the frames follow on, and only
    the count in the end frame shows the cell's log is not whole (issue 44, item 1)."""
    log = "\n".join(
        [
            format_frame("begin", "a", seq=1),
            "before the job: the driver's, not counted",
            format_frame("job", "a", seq=2, jobid="f1"),
            "KARY one",
            format_frame("end", "a", seq=3, rc=0, result="COMPLETED", lines=3),
            format_frame("begin", "b", seq=4),
            format_frame("job", "b", seq=5, jobid="f2"),
            "KARY one",
            format_frame("end", "b", seq=6, rc=0, result="COMPLETED", lines=1),
        ]
    )
    frames = split_frames(log + "\n")
    assert frames.cells["a"].lines_lost == 2 and frames.cells["b"].lines_lost == 0
    assert lines_lost(frames.cells["a"]) == (
        "rank 0's log lacks 2 of the 3 lines cell a's job printed: the kubelet rotated "
        "the log past lines kary had not read"
    )
    assert lines_lost(frames.cells["b"]) is None


def test_a_cell_ended_at_its_status_loses_only_the_kills_lines() -> None:
    # What flux-core 0.88 printed when the driver killed a nested job at its status.
    noise = [
        "flux-module-python-exec.py: flux_module_finalize: module status (FINALIZING): Broken pipe",
        "flux-job: task(s) Killed",
    ]
    body = ['KARY {"meta": "done", "failed_steps": 0}', "flux-job: task(s) Killed!"]

    def frames(**end: object) -> str:
        lines = [format_frame("begin", "4/kary-2/0", 1), format_frame("job", "4/kary-2/0", 2)]
        lines += [*body, *noise, format_frame("end", "4/kary-2/0", 3, rc=0, lines=4, **end)]
        return "\n".join(lines) + "\n"

    killed = split_frames(frames(ended_at_status=True)).cells["4/kary-2/0"]
    assert killed.output == "\n".join(body) + "\n"  # a line that only looks alike stays
    assert killed.lines_lost == 0  # the count covers what the job printed, kill included
    waited = split_frames(frames()).cells["4/kary-2/0"]
    assert waited.output == waited.text == "\n".join([*body, *noise]) + "\n"
