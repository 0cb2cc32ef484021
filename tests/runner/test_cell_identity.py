"""A done cell is done only when it ran as the plan would run it (model/identity.py).

The runner records each cell's identity in run.json; the ledger compares it
with the plan's before a cell is skipped, and every field of it counts.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from fake_backend import FakeBackend
from typer.testing import CliRunner

from experiments.backends import RunResult
from experiments.cli import app
from experiments.errors import UserError
from experiments.execution.ledger import read_ledger
from experiments.execution.runner import run_plan
from experiments.formats.run_record import RunRecord, read_record, write_record
from experiments.model.identity import IDENTITY_FIELDS, StudySettings
from experiments.model.links import link_settings
from experiments.model.plan import Cell, ExperimentSpec, Plan, plan_experiment
from experiments.model.render import Rendered, RenderOptions

MIB = 2**20
BASE = StudySettings(backend="flux", place="test-instance", layout="per-cell")


def _plan(data_dir: Path, sizes: tuple[int, ...] = (16 * MIB,)) -> Plan:
    spec = ExperimentSpec(exact_nodes=4, topos=["kary:2"], sizes=list(sizes), data_dir=data_dir)
    return plan_experiment(spec)


def _ran(tmp_path: Path, settings: StudySettings = BASE) -> Plan:
    """One cell run by the runner (a fake backend) with `settings` recorded."""
    plan = _plan(tmp_path)
    summary = run_plan(plan, FakeBackend(), RenderOptions(), settings=settings)
    assert summary.count("succeeded") == 1
    return plan


# One change per identity field: the plan differs from the run in that field alone.
CHANGES: dict[str, object] = {
    "sizes": (32 * MIB,),
    "strategies": ("binomial",),
    # A cell's blob kind has its own directory; a record that says otherwise is held to it.
    "blob": "zeros",
    "backend": dataclasses.replace(BASE, backend="local", place=None),
    "place": dataclasses.replace(BASE, place="box"),
    "layout": dataclasses.replace(BASE, layout="nested"),
    "links": dataclasses.replace(BASE, links=link_settings("100Mbit", None)),
    "image": dataclasses.replace(BASE, image="ghcr.io/x/flux:1"),
    "flux_view": dataclasses.replace(BASE, flux_view="ghcr.io/x/view:1"),
    "verify": dataclasses.replace(BASE, verify=False),
    "cluster": dataclasses.replace(BASE, cluster="eks-6"),
    "instance_type": dataclasses.replace(BASE, instance_type="c5a.4xlarge"),
    "emulator_faults": dataclasses.replace(BASE, emulator_faults=("stall:1",)),
    "shared_nodes": dataclasses.replace(BASE, shared_nodes=True),
}


def test_every_identity_field_has_a_change_below() -> None:
    # experiment is held by the ledger's own check (one raw tree, one experiment); the
    # link queue, which only a box with a shaped rate has, by its own test below.
    assert set(CHANGES) == set(IDENTITY_FIELDS) - {"experiment", "link_queue"}


@pytest.mark.parametrize("field", sorted(CHANGES))
def test_a_done_cell_that_differs_in_one_field_stops_the_plan(tmp_path: Path, field: str) -> None:
    plan = _ran(tmp_path)
    # The same plan as run skips the cell.
    assert [c.id for c in read_ledger(plan.cells, tmp_path, settings=BASE).done] == ["4/kary-2/0"]
    change = CHANGES[field]
    cells: list[Cell] = plan.cells
    settings = BASE
    if isinstance(change, StudySettings):
        settings = change
    elif field == "blob":
        # A blob kind has its own directory: only a record moved or edited by hand differs.
        cell_dir = plan.cells[0].raw_dir(tmp_path)
        record = read_record(cell_dir)
        assert record is not None and record.model_extra is not None
        record.model_extra["identity"]["blob"] = change
        write_record(cell_dir, record)
    else:
        cells = [dataclasses.replace(c, **{field: change}) for c in cells]  # type: ignore[arg-type]
    with pytest.raises(UserError) as raised:
        read_ledger(cells, tmp_path, settings=settings)
    message = str(raised.value)
    assert "\n" not in message
    assert f"ran with {field.replace('_', ' ')} " in message
    assert "--force" in message and "--data-dir" in message
    # --force runs it again (the runner keeps the old results aside).
    assert read_ledger(cells, tmp_path, force=True, settings=settings).to_run == cells


def test_the_message_names_what_differs_as_a_person_reads_it(tmp_path: Path) -> None:
    plan = _ran(tmp_path)
    other = [dataclasses.replace(c, sizes=(32 * MIB, 64 * MIB)) for c in plan.cells]
    with pytest.raises(UserError, match=r"ran with sizes 16M, planned 32M,64M: this plan"):
        read_ledger(other, tmp_path, settings=BASE)
    links = dataclasses.replace(BASE, links=link_settings("100Mbit", "5ms"))
    with pytest.raises(UserError, match=r"links unshaped, planned bw-100Mbit_lat-5ms"):
        read_ledger(plan.cells, tmp_path, settings=links)


def test_a_cell_that_runs_again_anyway_is_not_held_to_the_plan(tmp_path: Path) -> None:
    """Interrupted cells run again (set aside first); a failed one only with --rerun-failed."""
    plan = _plan(tmp_path)
    changed = dataclasses.replace(BASE, place="box")
    record_dir = plan.cells[0].raw_dir(tmp_path)
    for state, rerun, refused in [
        ("interrupted", False, False),
        ("failed", False, True),
        ("failed", True, False),
    ]:
        record = RunRecord(
            cell=plan.cells[0].id,
            nodes=4,
            topo="kary:2",
            iteration=0,
            backend="flux",
            state=state,  # type: ignore[arg-type]
            identity=BASE.identity(plan.cells[0]),  # type: ignore[call-arg]
        )
        write_record(record_dir, record)
        if refused:
            with pytest.raises(UserError, match="ran with place test-instance, planned box"):
                read_ledger(plan.cells, tmp_path, settings=changed, rerun_failed=rerun)
        else:
            ledger = read_ledger(plan.cells, tmp_path, settings=changed, rerun_failed=rerun)
            assert ledger.to_run == plan.cells


def test_a_record_from_before_identity_is_held_to_what_it_says(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    cell = plan.cells[0]
    legacy = RunRecord(
        cell=cell.id,
        nodes=4,
        topo="kary:2",
        iteration=0,
        backend="flux",
        state="succeeded",
        sizes=[16 * MIB],
        strategies=["all"],
    )
    write_record(cell.raw_dir(tmp_path), legacy)
    # What it never recorded (its place) is not guessed ...
    assert read_ledger(plan.cells, tmp_path, settings=BASE).done == plan.cells
    # ... what it did record is compared.
    bigger = [dataclasses.replace(cell, sizes=(32 * MIB,))]
    with pytest.raises(UserError, match="ran with sizes 16M, planned 32M"):
        read_ledger(bigger, tmp_path, settings=BASE)


def test_an_interrupted_cell_says_where_it_ran(tmp_path: Path) -> None:
    def stop(cell: Cell, rendered: Rendered, timeout: float | None) -> RunResult:
        raise KeyboardInterrupt

    plan = _plan(tmp_path)
    summary = run_plan(plan, FakeBackend(handler=stop), RenderOptions(), settings=BASE)
    assert summary.interrupted
    record = read_record(plan.cells[0].raw_dir(tmp_path))
    assert record is not None and record.state == "interrupted"
    extra = record.model_extra or {}
    assert extra["place"] == "test-instance"
    assert extra["identity"]["place"] == "test-instance"


def test_a_changed_study_is_refused_and_other_links_get_their_own_cells(tmp_path: Path) -> None:
    """The issue's commands: the emulator, one cell, then the same with other sizes or links."""
    data = tmp_path / "d"
    base = [
        "--backend",
        "local",
        "--exact-nodes",
        "4",
        "--topo",
        "kary:2",
        "--iters",
        "1",
        "--data-dir",
        str(data),
    ]
    runner = CliRunner()
    first = runner.invoke(app, ["run", *base, "--sizes", "16M", "--yes"])
    assert first.exit_code == 0, first.output
    changed = runner.invoke(app, ["plan", *base, "--sizes", "32M"])
    assert changed.exit_code == 2
    assert "ran with sizes 16M, planned 32M" in changed.output
    rerun = runner.invoke(app, ["run", *base, "--sizes", "32M", "--yes"])
    assert rerun.exit_code == 2 and "nothing to run" not in rerun.output
    slower = runner.invoke(app, ["plan", *base, "--sizes", "16M", "--link-bandwidth", "100Mbit"])
    assert slower.exit_code == 0, slower.output
    assert "1 cell to run, 0 already done" in slower.output
    assert "4/kary-2/bw-100Mbit/0" in slower.output
    same = runner.invoke(app, ["plan", *base, "--sizes", "16M"])
    assert same.exit_code == 0 and "0 cells to run, 1 already done" in same.output


def test_done_cells_of_another_template_are_kept_and_said(tmp_path: Path) -> None:
    plan = _ran(tmp_path)
    record = read_record(plan.cells[0].raw_dir(tmp_path))
    assert record is not None and record.template_hash
    ledger = read_ledger(plan.cells, tmp_path, settings=BASE, template_hash=record.template_hash)
    assert ledger.other_template == []
    other = read_ledger(plan.cells, tmp_path, settings=BASE, template_hash="0123456789abcdef")
    assert other.done == plan.cells and other.other_template == plan.cells
    # The plan says so in one line.
    runner = CliRunner()
    data = tmp_path / "d"
    args = ["--backend", "local", "--exact-nodes", "2", "--topo", "kary:1", "--sizes", "1M"]
    assert runner.invoke(app, ["run", *args, "--data-dir", str(data)]).exit_code == 0
    cell_dir = data / "2/kary-1/0"
    ran = read_record(cell_dir)
    assert ran is not None
    write_record(cell_dir, ran.model_copy(update={"template_hash": "0123456789abcdef"}))
    planned = runner.invoke(app, ["plan", *args, "--data-dir", str(data)])
    assert planned.exit_code == 0, planned.output
    assert (
        "warning: 1 cell of 1 done ran another benchmark template (e.g. 2/kary-1/0)"
        in planned.output
    )


BOX_FAIR = StudySettings(backend="flux", place="box", links=link_settings("100Mbit", None))
BOX_FIFO = dataclasses.replace(BOX_FAIR, links=link_settings("100Mbit", None, queue="fifo"))


def test_a_box_cell_is_held_to_its_link_queue_and_says_how_to_add_to_it(tmp_path: Path) -> None:
    assert BOX_FAIR.identity(_plan(tmp_path).cells[0])["link_queue"] == "fair"
    # No shaped rate, or not a box: no queue to hold a cell to.
    assert BASE.identity(_plan(tmp_path).cells[0])["link_queue"] is None
    plan = _ran(tmp_path, BOX_FIFO)
    with pytest.raises(UserError) as raised:
        read_ledger(plan.cells, tmp_path, settings=BOX_FAIR)
    message = str(raised.value)
    assert "ran with link queue fifo, planned fair" in message
    assert "--link-queue fifo adds to them" in message
    assert read_ledger(plan.cells, tmp_path, settings=BOX_FIFO).done == plan.cells


def test_a_box_record_from_before_link_queues_was_one_fifo(tmp_path: Path) -> None:
    plan = _ran(tmp_path, BOX_FAIR)
    cell_dir = plan.cells[0].raw_dir(tmp_path)
    record = read_record(cell_dir)
    assert record is not None and record.model_extra is not None
    del record.model_extra["identity"]["link_queue"]
    write_record(cell_dir, record)
    with pytest.raises(UserError, match="ran with link queue fifo, planned fair"):
        read_ledger(plan.cells, tmp_path, settings=BOX_FAIR)
    assert read_ledger(plan.cells, tmp_path, settings=BOX_FIFO).done == plan.cells


def test_real_flux_cells_planned_on_the_emulator_say_what_unset_means_and_the_remedy(
    tmp_path: Path,
) -> None:
    """Issue 60, item 3: after `make demo`, a shell without `flux` plans the emulator."""
    plan = _ran(tmp_path)
    with pytest.raises(UserError) as raised:
        read_ledger(plan.cells, tmp_path, settings=CHANGES["backend"])  # type: ignore[arg-type]
    message = str(raised.value)
    assert "backend flux, planned local (kary's emulator)" in message
    assert "place test-instance, planned no place (not real Flux here)" in message
    assert "planned none" not in message
    assert "`source .venv/bin/activate`" in message
