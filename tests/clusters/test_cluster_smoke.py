"""The smoke cell before the bill (issue 32): `kary plan` prices it on its own line, `kary run`
runs it first on a billed cluster (fake cloud CLIs and a fake API server), a failure stops
the sweep before any study cell, `--no-smoke` skips it, and `kary parse` never reads it."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from experiments.backends.kubernetes.api import RetryPolicy
from experiments.cli import app
from experiments.formats.run_record import RunRecord, write_record

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "kubernetes"))
from fake_apiserver import (
    PINNED_VIEW,
    FakeApiServer,
    FakeCluster,
    Scenario,
    pinned_cluster_file,
    write_kubeconfig,
)

runner = CliRunner()
# eks-30.yaml with the operator pinned by digest, as a billed --up needs.
EKS_30 = pinned_cluster_file(Path(__file__).resolve().parents[2] / "clusters" / "eks-30.yaml")
NAME = "kary-topology-30"
CONTEXT = f"arn:aws:eks:us-east-2:123456789012:cluster/{NAME}"
SWEEP = [
    "--exact-nodes", "4", "--topo", "kary:1", "--topo", "kary:2", "--sizes", "1M",
    "--flux-view", PINNED_VIEW,
]  # fmt: skip
STUDY_CELLS = ["4/kary-1/0", "4/kary-2/0"]
# Every size the smoke and the study run, each one timed step: the fake rank 0 prints it
# for whichever cell its MiniCluster carries ({cell}).
GOOD_LOG = (
    'KARY {"meta": "cell", "cell": "{cell}", "flux_version": "0.66.0"}\n'
    'KARY {"event": "distribute-all-nodes", "size": "1M", "size_bytes": 1048576, '
    '"seconds": 1.25, "rc": 0}\n'
    'KARY {"meta": "done", "failed_steps": 0}\n'
)
BAD_LOG = (
    'KARY {"meta": "cell", "cell": "{cell}", "flux_version": "0.66.0"}\n'
    'KARY {"event": "distribute-all-nodes", "size": "16M", "size_bytes": 16777216, '
    '"seconds": 2.0, "rc": 1}\n'
    'KARY {"meta": "done", "failed_steps": 1}\n'
)
SMOKE = "kary/smoke"
# A race takes a distribution as a timing only after the template's cold-cache line.
RACE_LOG = GOOD_LOG.replace(
    'KARY {"event": "distribute-all-nodes"',
    'KARY {"meta": "cold-cache", "size": "1M", "strategy": "all", "cached_blobs": '
    '{"0": 0, "1": 0, "2": 0, "3": 0}}\nKARY {"event": "distribute-all-nodes"',
)


@pytest.fixture(autouse=True)
def _fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = functools.partial(RetryPolicy, backoff_s=0.01, max_backoff_s=0.05)
    monkeypatch.setattr("experiments.backends.kubernetes.backend.RetryPolicy", fast)


@pytest.fixture
def apiserver() -> Iterator[FakeApiServer]:
    with FakeApiServer(FakeCluster(scenario=Scenario(log=GOOD_LOG, delete_s=0.0))) as server:
        write_kubeconfig(Path(os.environ["KUBECONFIG"]), server.url, context=CONTEXT)
        yield server


def _kary(command: str, raw: Path, *extra: str) -> Any:
    return runner.invoke(
        app, [command, "--cluster", str(EKS_30), *SWEEP, "--data-dir", str(raw), *extra]
    )


def _smoke_labelled(server: FakeApiServer) -> list[bool]:
    """Per MiniCluster created, in order: whether it is a smoke cell's."""
    return [SMOKE in (m["metadata"].get("labels") or {}) for m in server.cluster.created]


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_the_plan_prices_the_smoke_cell_on_its_own_line_as_it_prices_cells(
    tmp_path: Path, fake_cloud: Any
) -> None:
    raw = tmp_path / "raw"
    result = _kary("plan", raw, "--strategy", "all,direct")
    assert result.exit_code == 0, result.output
    smoke = [line for line in result.stdout.splitlines() if line.startswith("smoke cell: ")]
    assert len(smoke) == 1, result.stdout
    assert re.fullmatch(
        r"smoke cell: 4 nodes, kary:1 and kary:2, 16M, strategies all,direct, verify on: "
        r".+ \(.+ - .+\), \$(\d+\.\d\d) \(\$\d+\.\d\d - \$\d+\.\d\d\)",
        smoke[0],
    ), smoke[0]
    assert f"kept in {raw / 'smoke'} (never parsed); --no-smoke skips it" in result.stdout
    # The same way as the study's cells: a sweep of exactly those cells costs the same.
    data = json.loads(_kary("plan", raw, "--strategy", "all,direct", "--json").stdout)["smoke"]
    alone = runner.invoke(
        app,
        ["plan", "--cluster", str(EKS_30), "--exact-nodes", "4", "--topo", "kary:1",
         "--topo", "kary:2", "--sizes", "16M", "--strategy", "all,direct", "--verify",
         "--no-smoke", "--data-dir", str(tmp_path / "other"), "--json"],
    )  # fmt: skip
    priced = json.loads(alone.stdout)
    assert data["state"] == "run" and data["cells"] == STUDY_CELLS
    assert data["estimated_cost_usd"] == priced["estimated_cost_usd"] > 0
    assert data["predicted_seconds"] == priced["estimated_seconds"]
    assert json.loads(alone.stdout)["smoke"] == {"state": "none", "reason": "--no-smoke"}
    assert fake_cloud.calls() == []


def test_max_cost_holds_the_smoke_cell_too(tmp_path: Path, fake_cloud: Any) -> None:
    raw = tmp_path / "raw"
    data = json.loads(_kary("plan", raw, "--json").stdout)
    study, smoke = data["estimated_cost_usd_high"], data["smoke"]["estimated_cost_usd_high"]
    between = f"{study + smoke / 2:.2f}"
    assert _kary("plan", raw, "--max-cost", between).exit_code == 2
    assert _kary("plan", raw, "--max-cost", between, "--no-smoke").exit_code == 0


def test_unbilled_backends_plan_no_smoke_cell(tmp_path: Path) -> None:
    args = ["plan", *SWEEP, "--backend", "local", "--data-dir", str(tmp_path)]
    text = runner.invoke(app, args)
    assert text.exit_code == 0, text.output
    assert "smoke" not in text.stdout
    data = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    assert data["smoke"] == {"state": "none", "reason": "not billed"}


def test_a_sweep_file_says_smoke_false_and_a_wrong_value_is_one_line(tmp_path: Path) -> None:
    study = tmp_path / "study.yaml"
    study.write_text("nodes: 4\ntopo: [kary:1]\nsizes: [1M]\nbackend: kubernetes\nsmoke: false\n")
    result = runner.invoke(app, ["plan", str(study), "--data-dir", str(tmp_path / "raw")])
    assert result.exit_code == 0, result.output
    assert "smoke cell: none (--no-smoke)" in result.stdout.splitlines()
    # The flag wins over the file, as every flag does.
    again = runner.invoke(app, ["plan", str(study), "--smoke", "--data-dir", str(tmp_path)])
    assert any(
        line.startswith("smoke cell: 4 nodes, kary:1, 16M") for line in again.stdout.splitlines()
    )
    study.write_text("nodes: 4\ntopo: [kary:1]\nsmoke: 3\n")
    bad = runner.invoke(app, ["plan", str(study)])
    assert bad.exit_code == 2
    assert bad.stderr == f"kary: error: {study}:3: smoke must be true or false, not 3\n"


def test_the_smoke_cell_runs_first_apart_and_a_parse_holds_exactly_the_study(
    tmp_path: Path, fake_cloud: Any, apiserver: FakeApiServer
) -> None:
    raw = tmp_path / "raw"
    result = _kary("run", raw, "--yes")
    assert result.exit_code == 0, result.output
    # One MiniCluster for the smoke cell (nested: one per node count), then the study's.
    assert _smoke_labelled(apiserver) == [True, False]
    smoke = raw / "smoke"
    assert (smoke / ".kary-smoke").is_file()
    for cell in STUDY_CELLS:
        record = json.loads((smoke / cell / "run.json").read_text())
        assert record["state"] == "succeeded" and record["sizes"] == [16 * 2**20]
        assert record["cluster"] == NAME
        assert json.loads((raw / cell / "run.json").read_text())["sizes"] == [2**20]
    assert "kary run: smoke cell passed in " in result.stderr
    # `kary parse` of the tree with smoke cells, and of a copy without: the same rows.
    bare = tmp_path / "bare"
    shutil.copytree(raw, bare, ignore=shutil.ignore_patterns("smoke"))
    rows = {}
    for name, tree in (("with", raw), ("without", bare)):
        out = tmp_path / f"parsed-{name}"
        args = ["parse", "--data", str(tree), "--out", str(out), "--no-plots", "--strict"]
        parsed = runner.invoke(app, args)
        assert parsed.exit_code == 0, parsed.output
        rows[name] = (out / "topologies-events.csv").read_text().splitlines()
    assert rows["with"] == rows["without"]
    assert len(rows["with"]) == 1 + len(STUDY_CELLS)
    # A tree kept one folder down still leaves its smoke cells out (the marker file).
    shutil.copytree(raw, tmp_path / "kept" / "raw")
    out = tmp_path / "parsed-down"
    args = ["parse", "--data", str(tmp_path / "kept"), "--out", str(out), "--no-plots"]
    down = runner.invoke(app, args)
    assert down.exit_code == 0, down.output
    assert len((out / "topologies-events.csv").read_text().splitlines()) == 1 + len(STUDY_CELLS)


def test_a_failed_smoke_cell_stops_the_sweep_with_one_line_before_any_study_cell(
    tmp_path: Path, fake_cloud: Any, apiserver: FakeApiServer
) -> None:
    raw = tmp_path / "raw"
    # One study cell done before: the failed smoke cell must leave it as it was.
    done = raw / STUDY_CELLS[0]
    write_record(
        done,
        RunRecord(cell=STUDY_CELLS[0], nodes=4, topo="kary:1", iteration=0, state="succeeded",
                  backend="kubernetes", cluster=NAME, sizes=[2**20], strategies=["all"]),
    )  # fmt: skip
    (done / "topology-experiment.out").write_text(GOOD_LOG.replace("{cell}", STUDY_CELLS[0]))
    before = _tree(raw)
    apiserver.cluster.scenario = Scenario(log=BAD_LOG, delete_s=0.0)
    result = _kary("run", raw, "--yes")
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if "smoke" in line]
    assert lines[-1].startswith("kary run: the smoke cell failed (4/kary-1/0 failed: "), lines
    assert lines[-1].endswith(
        f"so no study cell started; its record is in {raw / 'smoke'} "
        "(--no-smoke skips the smoke cell)"
    ), lines
    assert "succeeded" not in result.stderr  # no summary of study cells: none ran
    assert _smoke_labelled(apiserver) == [True]  # no study MiniCluster was made
    assert not (raw / STUDY_CELLS[1]).exists() and not (raw / ".replaced").exists()
    assert {k: v for k, v in _tree(raw).items() if not k.startswith("smoke/")} == before
    assert json.loads((raw / "smoke" / STUDY_CELLS[0] / "run.json").read_text())["state"] == (
        "failed"
    )


def test_no_smoke_runs_none(tmp_path: Path, fake_cloud: Any, apiserver: FakeApiServer) -> None:
    raw = tmp_path / "raw"
    result = _kary("run", raw, "--yes", "--no-smoke")
    assert result.exit_code == 0, result.output
    assert _smoke_labelled(apiserver) == [False]
    assert not (raw / "smoke").exists()


def test_a_resumed_sweep_relies_on_the_smoke_cell_that_passed_on_the_same_cluster(
    tmp_path: Path, fake_cloud: Any, apiserver: FakeApiServer
) -> None:
    raw = tmp_path / "raw"
    assert _kary("run", raw, "--yes").exit_code == 0
    shutil.rmtree(raw / STUDY_CELLS[1])  # as if the sweep had stopped before its last cell
    plan = _kary("plan", raw)
    assert (
        f"smoke cell: passed before on {NAME} (4 nodes, kary:1 and kary:2, 16M, strategies "
        f"all, verify on; in {raw / 'smoke'}): not run again (--force runs it again)"
    ) in plan.stdout.splitlines()
    resumed = _kary("run", raw, "--yes")
    assert resumed.exit_code == 0, resumed.output
    assert _smoke_labelled(apiserver) == [True, False, False]  # no second smoke MiniCluster
    shutil.rmtree(raw / STUDY_CELLS[1])
    # A cluster this run creates is new: its smoke cell runs again; so does another image's.
    seed = "ghcr.io/converged-computing/container-chonks:topology-flux-0.66.0"
    for extra in (["--up"], ["--image", seed]):
        if "--image" in extra:  # the study's cells ran another image: a plan would refuse them
            shutil.rmtree(raw / STUDY_CELLS[0])
        again = _kary("plan", raw, *extra)
        assert again.exit_code == 0, again.output
        smoke = [line for line in again.stdout.splitlines() if line.startswith("smoke cell: ")]
        assert smoke[0].startswith("smoke cell: 4 nodes, kary:1 and kary:2, 16M"), smoke


@pytest.mark.parametrize(
    "other", [["--layout", "per-cell"], ["--blob", "zeros"]], ids=["layout", "blob"]
)
def test_a_smoke_pass_excuses_only_a_sweep_of_its_own_identity(
    tmp_path: Path, fake_cloud: Any, apiserver: FakeApiServer, other: list[str]
) -> None:
    # A nested pass says nothing of a per-cell sweep, nor a random-blob pass of a zero-blob
    # one (issue 42, item 5): the smoke cell keys on the cell's identity, not the cluster.
    raw = tmp_path / "raw"
    assert _kary("run", raw, "--yes").exit_code == 0
    record = json.loads((raw / "smoke" / STUDY_CELLS[0] / "run.json").read_text())
    assert (record["identity"]["layout"], record["identity"]["verify"]) == ("nested", True)
    for cell in STUDY_CELLS:  # the study's cells ran the other way: a plan would refuse them
        shutil.rmtree(raw / cell)
    same = _kary("plan", raw)
    assert any(line.startswith("smoke cell: passed before") for line in same.stdout.splitlines())
    again = _kary("plan", raw, *other)
    assert again.exit_code == 0, again.output
    smoke = [line for line in again.stdout.splitlines() if line.startswith("smoke cell: ")]
    assert smoke[0].startswith("smoke cell: 4 nodes, kary:1 and kary:2, 16M"), smoke


def test_a_smoke_record_without_an_identity_is_not_relied_on(
    tmp_path: Path, fake_cloud: Any, apiserver: FakeApiServer
) -> None:
    raw = tmp_path / "raw"
    assert _kary("run", raw, "--yes").exit_code == 0
    shutil.rmtree(raw / STUDY_CELLS[1])
    for cell in STUDY_CELLS:  # as a kary from before smoke cells recorded their identity
        path = raw / "smoke" / cell / "run.json"
        record = json.loads(path.read_text())
        del record["identity"]
        path.write_text(json.dumps(record))
    plan = _kary("plan", raw)
    smoke = [line for line in plan.stdout.splitlines() if line.startswith("smoke cell: ")]
    assert smoke[0].startswith("smoke cell: 4 nodes, kary:1 and kary:2, 16M"), smoke


def test_a_billed_race_runs_the_smoke_cell_before_its_first_block(
    tmp_path: Path, fake_cloud: Any, apiserver: FakeApiServer
) -> None:
    raw = tmp_path / "raw"
    apiserver.cluster.scenario = Scenario(log=RACE_LOG, delete_s=0.0)
    race = ("--yes", "--first-test", "2", "--max-blocks", "2")
    result = _kary("race", raw, *race)
    assert result.exit_code == 0, result.output
    assert "kary race: smoke cell passed" in result.stderr
    # The smoke MiniCluster first, then the race's one, which ran both blocks (nested).
    assert _smoke_labelled(apiserver) == [True, False]
    assert "block 1 (1M)" in result.stderr
    # The answer on stdout, the progress on stderr (issue 60, 6).
    assert result.stdout.strip().splitlines()[-1].startswith("kary race: tie within 5%")
    assert "tie within 5%" not in result.stderr
    assert (raw / "smoke" / STUDY_CELLS[0] / "run.json").is_file()
    # The same command again: decided, and no smoke cell run again.
    again = _kary("race", raw, *race)
    assert again.exit_code == 0, again.output
    assert "already decided" in again.stderr
    assert again.stdout.strip().splitlines()[-1].startswith("kary race: tie within 5%")
    assert len(apiserver.cluster.created) == 2


def test_a_billed_race_whose_smoke_cell_fails_runs_no_block(
    tmp_path: Path, fake_cloud: Any, apiserver: FakeApiServer
) -> None:
    raw = tmp_path / "raw"
    apiserver.cluster.scenario = Scenario(log=BAD_LOG, delete_s=0.0)
    result = _kary("race", raw, "--yes", "--first-test", "2", "--max-blocks", "2")
    assert result.exit_code == 1, result.output
    failed = [line for line in result.stderr.splitlines() if "smoke cell failed" in line]
    assert failed and failed[-1].startswith("kary race: the smoke cell failed (4/kary-1/0")
    assert "so no race block started" in failed[-1]
    assert _smoke_labelled(apiserver) == [True]
    state = json.loads((raw / "race.json").read_text()) if (raw / "race.json").exists() else {}
    assert not state.get("race", {}).get("blocks")
