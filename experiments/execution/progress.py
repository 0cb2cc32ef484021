"""How a run shows itself while it goes: cells done / total, the current cell, an ETA.

The runner talks to a `Reporter`; `RichReporter` draws a rich progress bar on
stderr (a plain line per cell when stderr is not a terminal), `SilentReporter`
says nothing (tests, --json).  The ETA is the plan's predicted time for the
cells left, scaled by how the finished cells compared with their prediction.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TextColumn
from rich.text import Text

if TYPE_CHECKING:
    from experiments.execution.summary import CellOutcome
    from experiments.model.plan import Cell

__all__ = ["Reporter", "RichReporter", "SilentReporter", "format_seconds"]

_MARKS = {
    "succeeded": "[green]ok[/]",
    "failed": "[red]FAILED[/]",
    "timeout": "[red]TIMEOUT[/]",
    "interrupted": "[yellow]interrupted[/]",
    "preempted": "[yellow]preempted[/]",
}


def format_seconds(seconds: float) -> str:
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Reporter:
    """Callbacks from the runner; the base class ignores them all."""

    def start(self, cells: list[Cell], predicted: list[float]) -> None:
        pass

    def cell_started(self, index: int, cell: Cell) -> None:
        pass

    def cell_finished(self, index: int, outcome: CellOutcome) -> None:
        pass

    def message(self, text: str) -> None:
        pass

    def stop(self) -> None:
        pass


class SilentReporter(Reporter):
    pass


class _EtaColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        eta = task.fields.get("eta")
        return Text("ETA --:--" if eta is None else f"ETA {format_seconds(eta())}", "cyan")


class RichReporter(Reporter):
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._progress: Progress | None = None
        self._task: Any = None
        self._predicted: list[float] = []
        self._done = 0
        self._actual = 0.0
        self._predicted_done = 0.0
        self._cell_started = 0.0

    def _eta(self) -> float:
        left = sum(self._predicted[self._done :])
        scale = self._actual / self._predicted_done if self._predicted_done > 0 else 1.0
        running = time.monotonic() - self._cell_started if self._cell_started else 0.0
        return max(0.0, left * scale - running)

    def start(self, cells: list[Cell], predicted: list[float]) -> None:
        self._predicted = list(predicted)
        self._progress = Progress(
            TextColumn("{task.fields[current]}"),
            BarColumn(),
            TextColumn("{task.completed:.0f}/{task.total:.0f} cells"),
            _EtaColumn(),
            console=self.console,
            transient=True,
        )
        self._progress.start()
        self._task = self._progress.add_task("run", total=len(cells), current="", eta=self._eta)

    def cell_started(self, index: int, cell: Cell) -> None:
        self._cell_started = time.monotonic()
        if self._progress is not None:
            self._progress.update(self._task, current=f"cell {cell.id}")

    def cell_finished(self, index: int, outcome: CellOutcome) -> None:
        self._done = index + 1
        self._cell_started = 0.0
        if index < len(self._predicted):
            self._predicted_done += self._predicted[index]
            self._actual += outcome.seconds
        mark = _MARKS.get(outcome.state, outcome.state)
        why = f": {escape(outcome.error)}" if outcome.error else ""
        self.message(f"{mark} {escape(outcome.cell.id)} in {outcome.seconds:.1f} s{why}")
        if self._progress is not None:
            self._progress.update(self._task, completed=self._done)

    def message(self, text: str) -> None:
        """Print a line above the bar (rich markup allowed: escape what you did not write).
        Never wrapped: piped, a FAILED line must keep its reason on it for grep."""
        if self._progress is not None:
            self._progress.console.print(text, highlight=False, soft_wrap=True)
        else:
            self.console.print(text, highlight=False, soft_wrap=True)

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
