"""The Backend contract: where a rendered cell runs.

The runner is handed one Backend and calls, in order::

    with backend:                     # up() ... down(), down() also on error / Ctrl-C
        backend.check_cells(cells)    # refuse what cannot run here, before anything starts
        result = backend.run(cell, rendered, timeout)   # once per cell

A backend knows how to start the rendered benchmark (`rendered.entrypoint_sh`
on rank 0 of a Flux instance of `cell.nodes` brokers under `cell.topo`, or
`rendered.minicluster_yaml` on a cluster), wait for it, and hand back rank 0's
log.  It never judges the benchmark (the runner reads the log for that) and
never writes into the raw tree (the runner does, atomically).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from experiments.model.links import LinkSettings

if TYPE_CHECKING:
    from experiments.model.cluster_spec import ClusterSpec
    from experiments.model.plan import Cell
    from experiments.model.render import Rendered, RenderOptions

__all__ = ["Backend", "BackendError", "BackendSettings", "QueuedCell", "RunResult", "by_node_count"]


class BackendError(Exception):
    """The backend itself broke (cannot start, lost its cluster): not a benchmark result.

    Raised from `up()` it stops the run; raised from `run()` the runner records
    the cell as failed with this message and goes on to the next cell.
    """


@dataclass(frozen=True)
class RunResult:
    """What one cell produced.

    - `log`: rank 0's full output (the entrypoint's stdout and stderr), as
      collected; the runner redacts secrets before writing it.  Whatever was
      collected so far, also on failure or timeout.
    - `rc`: the entrypoint's exit status; None when it never finished (timeout,
      lost pod, broker crash the backend noticed first).
    - `timed_out`: the cell hit `timeout` and was stopped.
    - `error`: why the backend could not run the cell to completion, in one
      line (None when the entrypoint ran and exited on its own, whatever rc).
    - `provenance`: facts for run.json, keyed like RunRecord fields where one
      fits (`cluster`, `instance_type`, `image`, `flux_version`), free-form
      otherwise (e.g. `link_bandwidth`).
    - `start_failure`: one word for why the benchmark never started (an image
      that will not pull, pods that cannot be scheduled), None when it started.
      The runner stops a sweep after two cells in a row fail to start alike.
    - `manifest`: the MiniCluster that ran the cell when it is not the one
      rendered for it (the nested layout's, shared by the cells of a node
      count); the runner keeps it as the cell's minicluster.yaml.
    - `preempted`: why the cell lost a node (or a pod) to preemption, in one
      line, else None.  Such a cell is `preempted`: never timed, and run again
      by the next run, like an interrupted one.
    - `stop`: why the run must stop after this cell, in one line (capacity the
      cell lost that did not come back in time), else None.
    - `spans`: seconds the backend spent on named parts of the cell, for
      run.json's `kary_seconds` (entry_stamps.py: `instance_start`,
      `entrypoint`, `instance_stop`); empty where the backend does not say.
    """

    log: str
    rc: int | None
    timed_out: bool = False
    error: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    start_failure: str | None = None
    manifest: str | None = None
    preempted: str | None = None
    stop: str | None = None
    spans: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class QueuedCell:
    """A cell the runner will hand to `run()`, rendered, with its time limit."""

    cell: Cell
    rendered: Rendered
    timeout: float | None


@dataclass(frozen=True)
class BackendSettings:
    """Everything a backend may be configured with; each backend reads what it needs.

    Every value arrives checked (model/sweep_check.py): a backend never parses
    a flag.  `render` is what the cells are rendered with (MiniCluster name,
    namespace, image).  `cluster` is the --cluster file, if any.  `links` are
    the shaped links: the emulator's, or a box's (flux backend), maybe in two
    levels.  `place` is where the flux backend runs a cell (None: where kary
    is).  `layout` is `nested` (one outer instance or MiniCluster per node
    count, each cell a nested instance in it) or `per-cell` (None: the
    backend's default).  `workdir` is where a backend may keep scratch files
    (None: a fresh temporary folder).  `options`: `sweep_id` (labels what a run
    creates), `allow_shared_nodes` and `pending_timeout_s` (kubernetes),
    `faults` (the emulator's, as typed).
    """

    render: RenderOptions | None = None
    cluster: ClusterSpec | None = None
    links: LinkSettings = field(default_factory=LinkSettings)
    place: str | None = None
    layout: str | None = None
    workdir: Path | None = None
    options: dict[str, Any] = field(default_factory=dict)


class Backend(abc.ABC):
    """Runs rendered cells somewhere.  Subclass it; implement `run`, and `up`/`down` if needed.

    Contract:

    - `up()` prepares whatever outlives one cell (a client, a CRD check) and
      raises UserError for a mistake the user can fix (no kubeconfig, no
      operator: say how to fix it) or BackendError otherwise.  `down()` undoes
      it; it must be safe to call twice and after a failed `up()`.
    - `run(cell, rendered, timeout)` runs one cell and blocks until it ends or
      `timeout` seconds pass (None: no limit).  A benchmark that fails is a
      normal return (rc != 0), not an exception.  On timeout it stops the cell
      and returns `timed_out=True`.  Before returning OR raising (including
      KeyboardInterrupt, which the runner also raises for SIGTERM) it removes
      everything it started for the cell: no process, pod or MiniCluster
      survives `run()`.  The one exception is the nested layout's outer
      instance (or MiniCluster), which serves every cell of a node count: it
      goes after that node count's last cell, on any exception out of `run()`,
      and in `down()`.
    - `await_replacements(limit_s)`, after a cell the backend found preempted
      and before the next, waits (bounded) for replacement capacity.
    - `run_order(cells)` may regroup the cells to run (the nested layout runs
      a node count's cells together); `queue(cells)` then tells the backend
      every cell it will be handed, in that order, before the first `run()`.
      After `stay_up()`, `queue` may be called again with more cells (a race's
      next block) and the nested outer instance stays up between them.
    - Construction does no I/O; `from_settings` builds one from BackendSettings.
    """

    name: str = "base"
    # True where cells run in the rendered container image (its reference and
    # digest then belong in run.json); False where the flux on hand runs them.
    uses_image: bool = False

    @classmethod
    def from_settings(cls, settings: BackendSettings) -> Backend:
        """Build the backend from the CLI's settings (override to read them)."""
        return cls()

    def up(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Prepare for a series of cells."""

    def check_cells(self, cells: Sequence[Cell]) -> None:  # noqa: B027 - optional hook
        """After `up()`, before any cell starts: UserError if a cell cannot run here."""

    def run_order(self, cells: Sequence[Cell]) -> list[Cell]:
        """The order to run `cells` in (default: as planned)."""
        return list(cells)

    def queue(self, cells: Sequence[QueuedCell]) -> None:  # noqa: B027 - optional hook
        """Every cell `run()` will be handed, in order (after check_cells)."""

    def stay_up(self) -> None:  # noqa: B027 - optional hook
        """More cells will follow the queued ones (a race's next blocks, queued later): keep
        what serves a node count's cells up until `down()` (the kubernetes backend's nested
        MiniCluster then takes them as they come).  Before `up()`; the default keeps nothing."""

    @abc.abstractmethod
    def run(self, cell: Cell, rendered: Rendered, timeout: float | None) -> RunResult:
        """Run one rendered cell; see the class docstring for the contract."""

    def await_replacements(self, limit_s: float) -> str | None:
        """After a preempted cell, before the next: wait at most `limit_s` seconds for
        the capacity the cell lost to come back.  None when it did (or there is
        nothing to wait for: the default), else why not, in one line."""
        return None

    def down(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Release what `up()` took; idempotent."""

    def __enter__(self) -> Backend:
        self.up()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.down()


def by_node_count(cells: Sequence[Cell]) -> list[Cell]:
    """The cells with each node count's together, node counts in order of first
    appearance and the plan's order within one (iterations stay interleaved)."""
    order = {nodes: rank for rank, nodes in enumerate(dict.fromkeys(c.nodes for c in cells))}
    return sorted(cells, key=lambda cell: order[cell.nodes])
