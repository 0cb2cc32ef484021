"""What a run did: each cell's outcome and the summary `kary run` prints and returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from experiments.model.plan import Cell

__all__ = ["CellOutcome", "RunSummary"]


@dataclass(frozen=True)
class CellOutcome:
    cell: Cell
    state: str
    seconds: float
    error: str | None = None
    step_seconds: float = 0.0
    # Why the benchmark never started, in one word (RunResult.start_failure).
    start_failure: str | None = None
    # Why the run stops after this cell (RunResult.stop).
    stop: str | None = None

    @property
    def overhead_seconds(self) -> float:
        """Wall time not spent in a timed step: start-up, teardown, bookkeeping."""
        return max(0.0, self.seconds - self.step_seconds)


@dataclass
class RunSummary:
    outcomes: list[CellOutcome] = field(default_factory=list)
    skipped_done: int = 0
    skipped_failed: int = 0
    not_started: int = 0
    wall_seconds: float = 0.0
    interrupted: bool = False
    stopped_because: str | None = None

    def count(self, state: str) -> int:
        return sum(1 for o in self.outcomes if o.state == state)

    @property
    def cells_left(self) -> int:
        """The cells the same run resumes: never started, interrupted or preempted."""
        return self.not_started + self.count("interrupted") + self.count("preempted")

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 130
        bad = self.count("failed") + self.count("timeout") + self.count("preempted")
        return 1 if bad or self.stopped_because else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "succeeded": self.count("succeeded"),
            "failed": self.count("failed"),
            "timeout": self.count("timeout"),
            "interrupted": self.count("interrupted"),
            "preempted": self.count("preempted"),
            "skipped": {"done": self.skipped_done, "failed": self.skipped_failed},
            "not_started": self.not_started,
            "wall_seconds": round(self.wall_seconds, 3),
            "stopped_because": self.stopped_because,
            "cells_left": self.cells_left,
            "cells": [
                {
                    "cell": o.cell.id,
                    "state": o.state,
                    "seconds": round(o.seconds, 3),
                    "step_seconds": round(o.step_seconds, 3),
                    "error": o.error,
                }
                for o in self.outcomes
            ],
        }

    def text(self) -> str:
        parts = [
            f"{self.count('succeeded')} succeeded",
            f"{self.count('failed')} failed",
        ]
        for state in ("timeout", "interrupted", "preempted"):
            if self.count(state):
                parts.append(f"{self.count(state)} {'timed out' if state == 'timeout' else state}")
        skipped = self.skipped_done + self.skipped_failed
        detail = []
        if self.skipped_done:
            detail.append(f"{self.skipped_done} done before")
        if self.skipped_failed:
            detail.append(f"{self.skipped_failed} failed before: --rerun-failed to retry")
        parts.append(f"{skipped} skipped" + (f" ({'; '.join(detail)})" if detail else ""))
        if self.not_started:
            parts.append(f"{self.not_started} not started")
        lines = [f"{', '.join(parts)}; wall time {self.wall_seconds:.1f} s"]
        for outcome in self.outcomes:
            if outcome.state != "succeeded":
                lines.append(f"  {outcome.cell.id}: {outcome.state}: {outcome.error}")
        if self.stopped_because:
            lines.append(f"stopped: {self.stopped_because}")
        if self.cells_left:
            left = self.cells_left
            lines.append(
                f"kary run ... resumes: {left} cell{'' if left == 1 else 's'} left "
                "(run the same command again)"
            )
        return "\n".join(lines) + "\n"
