"""Execute a plan's cells through a Backend and keep the raw tree honest.

Per cell, in data/raw/<nodes>/<topo>/<iteration>/:

1. anything already there is moved (never deleted) under
   `<data-dir>/.replaced/<timestamp>/<cell id>/`;
2. `minicluster.yaml` and `run.json` (state `running`) are written;
3. the backend runs the rendered cell;
4. `topology-experiment.out` (secrets redacted) and the final `run.json`
   (`succeeded`, `failed`, `timeout`, `interrupted` or `preempted`, with the
   reason) are written.  A preempted cell (it lost a node) keeps no log, as an
   interrupted one: nothing it printed is a timing of the cell.

After a preempted cell, before the next, the run waits for the backend to get
its capacity back (`after_preemption`, bounded by the caller) and stops, with
the cells left, if it does not come.

Every file is written atomically, so a crash leaves a cell whose run.json says
`running` or `interrupted`, which the next run repeats.  Ctrl-C and SIGTERM
stop the current cell, mark it `interrupted`, tear the backend down and end
the run (exit code 130 from the CLI).
"""

from __future__ import annotations

import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from experiments.backends.base import Backend, BackendError, QueuedCell, RunResult
from experiments.errors import UserError
from experiments.execution.ledger import Ledger, read_ledger
from experiments.execution.outcome import judge
from experiments.execution.progress import Reporter, SilentReporter
from experiments.execution.summary import CellOutcome, RunSummary
from experiments.files import write_atomic
from experiments.formats.kary_line import content_store
from experiments.formats.run_record import (
    LOG_NAME,
    MINICLUSTER_NAME,
    KarySpans,
    RunRecord,
    now_iso,
    write_record,
)
from experiments.model.identity import StudySettings
from experiments.model.plan import Cell, Plan
from experiments.model.render import Rendered, RenderOptions, image_provenance, render_cell
from experiments.redact import redact
from experiments.version import kary_commit

__all__ = ["REPLACED_DIR", "CellOutcome", "RunSummary", "default_timeout", "run_plan"]

REPLACED_DIR = ".replaced"


def default_timeout(predicted_seconds: float) -> float:
    """A per-cell limit generous enough for noise, small enough that a hang ends."""
    return max(300.0, 4.0 * predicted_seconds)


@contextmanager
def _signals_interrupt() -> Iterator[list[str]]:
    """SIGTERM (and SIGHUP) raise KeyboardInterrupt, as Ctrl-C does; yields which one came.

    A signal kary was started with ignored stays ignored: under `nohup` (SIGHUP) or
    as a background job of a script (SIGINT, which Python then leaves ignored too)
    the user asked that closing the terminal or Ctrl-C there not stop the run.
    SIGTERM always stops it, cleanly.
    """
    which: list[str] = []
    if threading.current_thread() is not threading.main_thread():
        yield which
        return

    def interrupt(signum: int, _frame: Any) -> None:
        which.append(signal.Signals(signum).name)
        raise KeyboardInterrupt

    caught = [signal.SIGTERM]
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        caught.append(signal.SIGHUP)
    previous = {s: signal.signal(s, interrupt) for s in caught}
    try:
        yield which
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextmanager
def _shielded() -> Iterator[None]:
    """Hold further Ctrl-C / SIGTERM while an interrupted cell is recorded and torn down."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    names = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in names}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _set_aside(cell_dir: Path, replaced_root: Path, cell: Cell) -> None:
    """Move an earlier attempt out of the way; results are never deleted."""
    if not cell_dir.is_dir() or not any(cell_dir.iterdir()):
        return
    target = replaced_root / cell.id
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        shutil.move(str(cell_dir), str(target))
    except OSError as err:
        raise UserError(f"cannot move {cell_dir} aside to {target}: {err}") from None


class _Runner:
    def __init__(
        self,
        plan: Plan,
        backend: Backend,
        render: RenderOptions,
        template_dir: Path | None,
        timeouts: list[float | None],
        seed: int | None,
        cluster: str | None,
        instance_type: str | None,
        settings: StudySettings | None,
    ) -> None:
        self.plan = plan
        self.settings = settings
        self.backend = backend
        self.render = render
        self.template_dir = template_dir
        self.timeouts = timeouts
        self.seed = seed
        self.cluster = cluster
        self.instance_type = instance_type
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        self.replaced_root = Path(plan.spec.data_dir) / REPLACED_DIR / stamp
        self._rendered: dict[str, Rendered] = {}
        # Seconds each cell's rendering took (it happens once, maybe before the cell runs).
        self._render_seconds: dict[str, float] = {}

    def base_record(self, cell: Cell, template_hash: str, timeout: float | None) -> RunRecord:
        return RunRecord.model_validate(
            {
                "cell": cell.id,
                "nodes": cell.nodes,
                "topo": cell.topo,
                "iteration": cell.iteration,
                "state": "running",
                "started": now_iso(),
                "backend": self.backend.name,
                "cluster": self.cluster,
                "instance_type": self.instance_type,
                **(image_provenance(self.render) if self.backend.uses_image else {"image": None}),
                "template_hash": template_hash,
                "kary_commit": kary_commit(),
                "sizes": list(cell.sizes),
                "strategies": list(cell.strategies),
                "blob": cell.blob,
                "seed": self.seed,
                "timeout_seconds": timeout,
                **self.plan.record_fields(cell),
                # Written at the start, so an interrupted cell says where it ran too.
                **self._identity_fields(cell),
            }
        )

    def _identity_fields(self, cell: Cell) -> dict[str, Any]:
        """The cell's identity (model/identity.py) and its place, for run.json."""
        if self.settings is None:
            return {}
        place = {"place": self.settings.place} if self.settings.place else {}
        return {**place, "identity": self.settings.identity(cell)}

    def rendered(self, cell: Cell) -> Rendered:
        """The cell's MiniCluster and entrypoint, rendered once."""
        if cell.id not in self._rendered:
            started = time.monotonic()
            self._rendered[cell.id] = render_cell(
                cell.nodes,
                cell.topo,
                list(cell.sizes),
                list(cell.strategies),
                cell.id,
                self.render,
                self.template_dir,
                knobs=cell.knobs,
                experiment=cell.experiment,
                blob=cell.blob,
            )
            self._render_seconds[cell.id] = time.monotonic() - started
        return self._rendered[cell.id]

    def run_cell(self, index: int, cell: Cell) -> CellOutcome:
        cell_dir = cell.raw_dir(self.plan.spec.data_dir)
        rendered = self.rendered(cell)
        timeout = self.timeouts[index]
        prepared = time.monotonic()
        _set_aside(cell_dir, self.replaced_root, cell)
        record = self.base_record(cell, rendered.template_hash, timeout)
        write_atomic(cell_dir / MINICLUSTER_NAME, rendered.minicluster_yaml)
        write_record(cell_dir, record)
        started = time.monotonic()
        spans = KarySpans(self._render_seconds.get(cell.id, 0.0), started - prepared)
        try:
            result = self.backend.run(cell, rendered, timeout)
        except BackendError as err:
            result = RunResult(log="", rc=None, error=f"{self.backend.name} backend: {err}")
        except KeyboardInterrupt:
            with _shielded():
                self.finish(cell_dir, record, "interrupted", "interrupted (Ctrl-C or SIGTERM)")
            raise
        seconds = time.monotonic() - started
        verdict = judge(result)
        judged = time.monotonic()
        if result.log and verdict.state != "preempted":
            write_atomic(cell_dir / LOG_NAME, redact(result.log))
        if result.manifest:
            write_atomic(cell_dir / MINICLUSTER_NAME, redact(result.manifest))
        spans.backend, spans.judge = seconds, judged - started - seconds
        spans.record = time.monotonic() - judged
        extras: dict[str, Any] = {
            "wall_seconds": round(seconds, 3),
            "step_seconds": round(verdict.log.step_seconds, 3),
            "steps": len(verdict.log.steps),
            "failed_steps": [
                f"{s.get('event')} {s.get('size', '')}".strip() for s in verdict.log.failed
            ],
            "rc": result.rc,
            "kary_seconds": spans.as_record(result.spans),
        }
        for key, value in result.provenance.items():
            extras[key] = value
        if verdict.log.meta and verdict.log.meta.get("flux_version"):
            extras.setdefault("flux_version", verdict.log.meta["flux_version"])
        store = content_store(verdict.log.meta)
        if store is not None:
            extras.setdefault("content_store", store)
        self.finish(cell_dir, record, verdict.state, verdict.error, extras)
        return CellOutcome(
            cell,
            verdict.state,
            seconds,
            verdict.error,
            verdict.log.step_seconds,
            result.start_failure,
            result.stop,
        )

    def finish(
        self,
        cell_dir: Path,
        record: RunRecord,
        state: str,
        error: str | None,
        extras: dict[str, Any] | None = None,
    ) -> None:
        data = record.model_dump()
        data.update(extras or {})
        data.update({"state": state, "error": error, "finished": now_iso()})
        write_record(cell_dir, RunRecord.model_validate(data))


def _run_cells(
    runner: _Runner,
    cells: list[Cell],
    summary: RunSummary,
    reporter: Reporter,
    before_cell: Callable[[int, Cell], str | None] | None,
    signals: list[str],
    after_preemption: Callable[[Cell], str | None] | None = None,
) -> None:
    last_start_failure = None
    for index, cell in enumerate(cells):
        reason = before_cell(index, cell) if before_cell else None
        if reason:
            summary.stopped_because = reason
            return
        reporter.cell_started(index, cell)
        cell_started = time.monotonic()
        try:
            outcome = runner.run_cell(index, cell)
        except KeyboardInterrupt:
            summary.interrupted = True
            how = signals[-1] if signals else "SIGINT"
            outcome = CellOutcome(
                cell, "interrupted", time.monotonic() - cell_started, f"interrupted by {how}"
            )
        summary.outcomes.append(outcome)
        reporter.cell_finished(index, outcome)
        if summary.interrupted:
            return
        if outcome.stop and index < len(cells) - 1:
            summary.stopped_because = outcome.stop
            return
        # A lost node comes back (or not) before the next cell: else it would start short.
        if outcome.state == "preempted" and index < len(cells) - 1 and after_preemption:
            reason = after_preemption(cell)
            if reason:
                summary.stopped_because = reason
                return
        # The same start failure twice in a row will not heal by paying for a third cell.
        if outcome.start_failure and outcome.start_failure == last_start_failure:
            summary.stopped_because = (
                f"two cells in a row could not start ({outcome.start_failure}); the last: "
                f"{cell.id}: fix that before running more cells"
            )
            return
        last_start_failure = outcome.start_failure


def run_plan(
    plan: Plan,
    backend: Backend,
    render: RenderOptions,
    *,
    ledger: Ledger | None = None,
    template_dir: Path | None = None,
    timeout: float | None = None,
    predicted: Mapping[str, float] | None = None,
    reporter: Reporter | None = None,
    cluster: str | None = None,
    instance_type: str | None = None,
    before_cell: Callable[[int, Cell], str | None] | None = None,
    settings: StudySettings | None = None,
    after_preemption: Callable[[Cell], str | None] | None = None,
) -> RunSummary:
    """Run the plan's cells that `ledger` says are to run, in order, on `backend`.

    `ledger` defaults to the raw tree as it is now (read_ledger: done cells are
    skipped, failed ones too).  The backend is brought up and down here.
    `timeout` is per cell; None gives each cell `default_timeout` of its
    predicted seconds (`predicted`, by cell id).  `before_cell` may return a
    reason to stop before a cell starts (a spending cap); `after_preemption`, called
    after a preempted cell when cells are left, waits for the capacity it lost and
    may return a reason to stop (it did not come back in time).  `settings` (the plan's
    StudySettings) is recorded as each cell's identity, so a later plan can tell
    whether the cell ran as it would run it.  Ctrl-C / SIGTERM end
    the run with `interrupted` set; the caller exits 130.
    """
    reporter = reporter or SilentReporter()
    if ledger is None:
        ledger = read_ledger(plan.cells, plan.spec.data_dir)
    cells = backend.run_order(ledger.to_run)
    seconds = [(predicted or {}).get(cell.id, 0.0) for cell in cells]
    timeouts: list[float | None] = [
        timeout if timeout is not None else default_timeout(s) for s in seconds
    ]
    summary = RunSummary(skipped_done=len(ledger.done), skipped_failed=len(ledger.failed))
    runner = _Runner(
        plan,
        backend,
        render,
        template_dir,
        timeouts,
        plan.spec.seed,
        cluster,
        instance_type,
        settings,
    )
    started = time.monotonic()
    reporter.start(cells, seconds)
    try:
        with _signals_interrupt() as which:
            try:
                backend.up()
                try:
                    backend.check_cells(cells)
                    backend.queue(
                        [
                            QueuedCell(cell, runner.rendered(cell), limit)
                            for cell, limit in zip(cells, timeouts, strict=True)
                        ]
                    )
                    _run_cells(
                        runner, cells, summary, reporter, before_cell, which, after_preemption
                    )
                finally:
                    with _shielded():
                        backend.down()
            except KeyboardInterrupt:
                # Between cells, or while the backend came up.
                summary.interrupted = True
    finally:
        reporter.stop()
    summary.not_started = len(cells) - len(summary.outcomes)
    summary.wall_seconds = time.monotonic() - started
    return summary
