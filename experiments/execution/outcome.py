"""Judge one cell from what its backend returned: succeeded, failed, timeout or
preempted, and why.

A cell succeeded only when the entrypoint exited 0, the log holds at least
one timed step, every `KARY {"event": ...}` step is a timing (rc 0 and a valid
time, as experiments.formats.kary_line reads it for `kary parse` too), and the log ends
with `KARY {"meta": "done", "failed_steps": 0}`, and the overlay Flux printed
(`flux overlay status`) is the tree of the topology the cell names.  Anything else is a failure
with a one-line reason: a failure is never recorded as a timing.  A void step
(a failed precondition: the template also exits non-zero) is named in the
reason apart from the failed ones.  A cell the backend found preempted (it lost a
node) is `preempted` whatever its log says: what it printed before is not a
timing of the cell, so none of its steps is counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from experiments.backends.base import RunResult
from experiments.formats.kary_line import kary_records, step_problem, step_void
from experiments.formats.log_sections import overlay_lines
from experiments.model.topology import overlay_problem

__all__ = ["LogSummary", "Verdict", "judge", "overlay_mismatch", "summarize_log"]

_SHOWN_STEPS = 3


@dataclass(frozen=True)
class LogSummary:
    """What the KARY lines of a log say."""

    steps: list[dict[str, Any]] = field(default_factory=list)
    done: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [s for s in self.steps if step_void(s) is None and step_problem(s) is not None]

    @property
    def void(self) -> list[dict[str, Any]]:
        return [s for s in self.steps if step_void(s) is not None]

    @property
    def step_seconds(self) -> float:
        """Sum of the timed steps (generate-blob included: it is work the cell did)."""
        return sum(float(s.get("seconds") or 0.0) for s in self.steps)


@dataclass(frozen=True)
class Verdict:
    state: str  # succeeded | failed | timeout | preempted
    error: str | None
    log: LogSummary


def summarize_log(log: str) -> LogSummary:
    steps: list[dict[str, Any]] = []
    done = meta = None
    for item in kary_records(log):
        if item is None:
            continue
        if "event" in item:
            steps.append(item)
        elif item.get("meta") == "done":
            done = item
        elif item.get("meta") == "cell":
            meta = item
    return LogSummary(steps, done, meta)


def overlay_mismatch(log: str, meta: dict[str, Any] | None) -> str | None:
    """Why the tree Flux built for the cell is not the topology its meta line names
    (a cell on another tree times another topology), else None."""
    topo, nodes = (meta or {}).get("topo"), (meta or {}).get("nodes")
    if not isinstance(topo, str) or not isinstance(nodes, int):
        return None
    return overlay_problem(overlay_lines(log), topo, nodes)


def _step_name(step: dict[str, Any]) -> str:
    return f"{step.get('event')} {step.get('size', step.get('size_bytes', ''))}".strip()


def _why(step: dict[str, Any]) -> str:
    rc = step.get("rc")
    return f"rc {rc}" if isinstance(rc, int) and rc != 0 else str(step_problem(step))


def judge(result: RunResult) -> Verdict:
    if result.preempted:
        return Verdict("preempted", result.preempted, LogSummary())
    summary = summarize_log(result.log)
    reasons: list[str] = []
    failed = summary.failed
    if failed:
        shown = ", ".join(f"{_step_name(s)} ({_why(s)})" for s in failed[:_SHOWN_STEPS])
        more = f" and {len(failed) - _SHOWN_STEPS} more" if len(failed) > _SHOWN_STEPS else ""
        reasons.append(f"{len(failed)} of {len(summary.steps)} steps failed: {shown}{more}")
    void = summary.void
    if void:
        shown = ", ".join(f"{_step_name(s)} ({step_void(s)})" for s in void[:_SHOWN_STEPS])
        more = f" and {len(void) - _SHOWN_STEPS} more" if len(void) > _SHOWN_STEPS else ""
        reasons.append(f"{len(void)} of {len(summary.steps)} steps void: {shown}{more}")
    if result.timed_out:
        reasons.insert(0, result.error or "timed out")
        return Verdict("timeout", "; ".join(reasons), summary)
    if result.error:
        reasons.append(result.error)
    if not summary.steps:
        reasons.append("the log has no KARY step lines")
    elif summary.done is None:
        reasons.append("the benchmark did not finish (no KARY done line)")
    elif summary.done.get("failed_steps") not in (0, None) and not failed:
        reasons.append(f"the benchmark counted {summary.done.get('failed_steps')} failed steps")
    if summary.done is not None and summary.done.get("failed_preconditions") not in (0, None):
        count = summary.done.get("failed_preconditions")
        reasons.append(f"the benchmark counted {count} failed precondition(s)")
    mismatch = overlay_mismatch(result.log, summary.meta)
    if mismatch is not None:
        reasons.append(mismatch)
    if result.rc is None:
        if not result.error:
            reasons.append("the entrypoint's exit status is unknown")
    elif result.rc != 0:
        reasons.append(f"the entrypoint exited with {result.rc}")
    if reasons:
        return Verdict("failed", "; ".join(reasons), summary)
    return Verdict("succeeded", None, summary)
