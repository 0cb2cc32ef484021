"""A distribution whose copy failed verification is a failed distribution, not a timing.

The template times `distribute-<wave>` and then, with verify on,
`verify-distribute-<wave>`: sha256 of the extracted file on every target rank
against rank 0's. When the verify step fails (or the log ends inside it), the
copy that was timed is wrong or unknown, so the distribution gets status
failed, no time, and a reason naming the ranks when the verify output does.
"""

from __future__ import annotations

import re

from analysis.read.records import FAILED, OK, Step, is_void
from experiments.formats.events import VERIFY_PREFIX

__all__ = ["fail_unverified", "verify_detail"]

# flux exec's report per exit status (`[1-2]: Exit 1`, `3: Exit 1`, `[4]: Killed`)
# and its per-rank errors (`flux-exec: Error: rank 5: ...`).
_EXIT_LINE = re.compile(
    r"^(?:flux-exec: )?\[?(?P<ids>[0-9][0-9,\-]*)\]?: "
    r"(?:Exit [1-9][0-9]*|Killed|Terminated|Aborted|Segmentation fault|Bus error)",
    re.M,
)
_RANK_ERROR = re.compile(r"^flux-exec: Error: rank (?P<rank>[0-9]+):", re.M)
# What kary_verify in templates/entrypoint.sh.j2 prints on a bad copy.
_MISMATCH = re.compile(r"^kary-verify: .*: (?P<what>sha256 mismatch or unreadable)\s*$", re.M)


def verify_detail(block: str, reason: str) -> str:
    """Why a verify step failed, from its output: `on rank 3: sha256 mismatch ...`."""
    ranks = _ranks(block)
    mismatch = _MISMATCH.search(block)
    what = mismatch.group("what") if mismatch else reason
    if not ranks:
        return f"(ranks unknown): {what}"
    word = "rank" if len(ranks) == 1 else "ranks"
    return f"on {word} {_idset(ranks)}: {what}"


def fail_unverified(steps: list[Step], details: dict[tuple[str, str], str]) -> list[Step]:
    """Steps with each distribution whose verify failed turned into a failed step.

    `details` maps (verify event, size label) to `verify_detail`'s words; a
    failed verify without an entry (a truncated log) says "ranks unknown".
    """
    failed_verify = {
        (s.event[len(VERIFY_PREFIX) :], s.size_label): s
        for s in steps
        if s.event.startswith(VERIFY_PREFIX) and s.status == FAILED
    }
    if not failed_verify:
        return steps
    out = []
    for step in steps:
        verify = failed_verify.get((step.event, step.size_label))
        # A distribution that failed on its own keeps its own, more basic reason;
        # a void one whose copy is also wrong is failed: a bad copy outranks a void.
        if verify is not None and (step.status == OK or is_void(step.status)):
            detail = details.get((verify.event, verify.size_label))
            if detail is None:
                detail = f"(ranks unknown): {verify.reason}"
            step = step._replace(seconds=None, status=FAILED, reason=f"verify failed {detail}")
        out.append(step)
    return out


def _ranks(block: str) -> set[int]:
    ranks: set[int] = set()
    for match in _EXIT_LINE.finditer(block):
        ranks |= _parse_idset(match.group("ids"))
    ranks |= {int(m.group("rank")) for m in _RANK_ERROR.finditer(block)}
    return ranks


def _parse_idset(text: str) -> set[int]:
    ranks: set[int] = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        if low.isdigit() and (not high or high.isdigit()):
            ranks.update(range(int(low), int(high or low) + 1))
    return ranks


def _idset(ranks: set[int]) -> str:
    """{1, 2, 5} -> `1-2,5` (flux's idset notation)."""
    ordered = sorted(ranks)
    runs: list[str] = []
    start = prev = ordered[0]
    for rank in [*ordered[1:], None]:
        if rank is not None and rank == prev + 1:
            prev = rank
            continue
        runs.append(str(start) if start == prev else f"{start}-{prev}")
        if rank is not None:
            start = prev = rank
    return ",".join(runs)
