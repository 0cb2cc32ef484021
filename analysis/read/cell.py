"""Parse one cell directory: its run.json, its log, and who it is (nodes, topo, knobs,
iteration).

Identity comes, in order of trust, from run.json, the log's `KARY {"meta": "cell"}`
line, the directory names, and the log's NODES / TOPOLOGY description lines.
Sources that disagree are reported; a cell nobody can identify is skipped.
The Flux knobs a cell set come from run.json, the cell line's `knobs` and the
knob directory; a seed log has none of these and set no knob.
What the cell's blobs held (`random` or `zeros`, formats/blobs.py) comes from
run.json, the cell line's `blob` and the blob directory (`blob-zeros`); a kary
cell none of them names made random blobs (kary made no others before it said),
and a seed-format log without a run.json is `zeros` (SEED_BLOB).

A cell whose run.json says anything but `succeeded` (failed: an overlay that is
not its topology, a restarted container, a lost log; timeout, interrupted,
preempted; still running) gives no timing: each step and ping its log timed is
void with the cell's state and error (`void: cell failed: <error>`), so the
tables, the report, compare and the time model count it and never time it.  A
step that failed in its own right stays failed, with its own reason.  A seed
log has no run.json: its steps are judged by its text alone, as before.

run.json is read by experiments.formats.run_record's one reader.  A record it
refuses (damaged, invalid, or of a newer format than this kary's) is noted as
a warning on that cell and ignored: the cell's log is still parsed and the
cell identified from its other sources, and the rest of the tree is untouched.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from analysis.read.kary_log import ArchiveCounts, parse_kary
from analysis.read.log_text import LogText, decode_log, header_value, overlay_lines
from analysis.read.records import OK, PingStep, Problem, ProblemKind, Step, void_status
from analysis.read.seed_log import parse_legacy
from analysis.read.walk import LOG_NAME, RECORD_NAME, CellDir
from experiments.errors import UserError
from experiments.formats.blobs import BLOB_KINDS, DEFAULT_BLOB, SEED_BLOB
from experiments.formats.cell_layout import (
    NO_KNOBS,
    Knobs,
    blob_of_path,
    knobs_from_labels,
    topo_from_dirname,
)
from experiments.formats.kary_line import has_kary_lines
from experiments.model.topology import overlay_parents, overlay_problem, parse_topology

if TYPE_CHECKING:
    from experiments.formats.run_record import RunRecord

__all__ = ["CellResult", "parse_cell"]

# The one run.json state whose steps are timings (experiments.formats.run_record).
_SUCCEEDED = "succeeded"


@dataclass
class CellResult:
    """Everything one cell contributes: identity, run facts, rows, overlay, problems."""

    cell: CellDir
    nodes: int | None = None
    topo: str | None = None
    iteration: int | None = None
    knobs: Knobs = NO_KNOBS
    blob: str = DEFAULT_BLOB  # what its blobs held (formats/blobs.py)
    record: RunRecord | None = None  # None: no run.json, or one that was ignored
    log_format: str = ""  # "kary", "legacy" or "" (no usable log)
    complete: bool = False  # the log reached its end (end marker or done line)
    steps: list[Step] = field(default_factory=list)
    pings: list[PingStep] = field(default_factory=list)
    overlay: list[str] = field(default_factory=list)
    # The log's archive lines by (size label, strategy): chunks and store growth.
    archives: dict[tuple[str, str], ArchiveCounts] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    # It gave rows (steps or pings): still true once they went into a table and
    # were dropped here (a forked worker sends back rows, not steps).
    measured: bool = False

    @property
    def identified(self) -> bool:
        return self.nodes is not None and self.topo is not None and self.iteration is not None

    def note(self, kind: ProblemKind, reason: str, name: str = LOG_NAME) -> None:
        """Record a problem with the file `name` of this cell ("" for the cell itself)."""
        path = "/".join(part for part in (self.cell.rel, name) if part) or "."
        self.problems.append(Problem(path, kind, reason))


def parse_cell(cell: CellDir) -> CellResult:
    """Read one cell; never raises for damaged input, reports it in `problems`."""
    result = CellResult(cell)
    if cell.has_record:
        result.record = _read_record(result)
    log = _read_log(result) if cell.has_log else None
    meta: dict[str, Any] = {}
    header_nodes = header_topo = None
    if isinstance(log, LogText):
        header_nodes = _int(header_value(log.text, "NODES"))
        header_topo = header_value(log.text, "TOPOLOGY description")
        result.overlay = overlay_lines(log.text)
        meta = _parse_steps(result, log)
    _identify(result, meta, header_nodes, header_topo)
    if result.record is not None and result.record.state != _SUCCEEDED:
        _void_timings(result, result.record)
    if result.identified and result.overlay:
        _check_overlay(result)
    if not result.identified:
        result.steps, result.pings = [], []
        if not any(p.kind == "skipped" for p in result.problems):
            result.note(
                "skipped",
                "cannot tell nodes, topology and iteration from the path or files",
                LOG_NAME if cell.has_log else "",
            )
    elif not cell.has_log:
        state = result.record.state if result.record else None
        error = result.record.error if result.record else None
        why = "no topology-experiment.out" + (f" (run state: {state})" if state else "")
        result.note("skipped", why + (f": {error}" if error else ""), "")
    elif isinstance(log, LogText) and not result.steps and not result.pings:
        result.note("skipped", "no benchmark events in the log")
    result.measured = bool(result.steps or result.pings)
    return result


def _void_timings(result: CellResult, record: RunRecord) -> None:
    """A cell that did not succeed gives no timing: what its log timed is void, and why."""
    reason = f"cell {record.state}" + (f": {_oneline_text(record.error)}" if record.error else "")
    status = void_status(reason)
    result.steps = [
        step._replace(seconds=None, status=status, reason=reason) if step.status == OK else step
        for step in result.steps
    ]
    result.pings = [
        ping._replace(ms=None, status=status, reason=reason) if ping.status == OK else ping
        for ping in result.pings
    ]


def _read_record(result: CellResult) -> RunRecord | None:
    # pydantic is imported with the first run.json: a tree of seed logs has none.
    from experiments.formats.run_record import UnreadableRecord, read_record

    try:
        return read_record(result.cell.path)
    except UnreadableRecord as err:
        result.note("warning", f"run.json ignored: {err.reason}", RECORD_NAME)
        return None


def _read_log(result: CellResult) -> LogText | None:
    try:
        with open(os.path.join(result.cell.dir, LOG_NAME), "rb") as handle:
            data = handle.read()
    except OSError as err:
        result.note("skipped", f"unreadable ({_oneline(err)})")
        return None
    log = decode_log(data)
    if isinstance(log, str):
        result.note("skipped", log)
        return None
    return log


def _parse_steps(result: CellResult, log: LogText) -> dict[str, Any]:
    """Fill steps/pings from the log; returns the KARY cell meta line (or {})."""
    notes: list[tuple[ProblemKind, str]]
    if has_kary_lines(log.text):
        kary = parse_kary(log)
        result.log_format = "kary"
        result.steps, result.pings, notes = kary.steps, kary.pings, kary.notes
        result.archives = kary.archives
        result.complete = kary.done is not None
        if not result.pings and "EVENT flux-ping-" in log.text:
            result.pings = parse_legacy(log).pings
        meta = kary.cell
    else:
        legacy = parse_legacy(log)
        result.log_format = "legacy"
        result.steps, result.pings, notes = legacy.steps, legacy.pings, legacy.notes
        result.complete = log.ended
        meta = {}
    for kind, reason in notes:
        result.note(kind, reason)
    return meta


def _identify(
    result: CellResult, meta: dict[str, Any], header_nodes: int | None, header_topo: str | None
) -> None:
    record, cell = result.record, result.cell
    nodes = [
        ("run.json", record.nodes if record else None),
        ("the KARY cell line", _int(meta.get("nodes"))),
        ("the directory", cell.nodes),
        ("the NODES line", header_nodes),
    ]
    topos = [
        ("run.json", _topo(record.topo) if record else None),
        ("the KARY cell line", _topo(meta.get("topo"))),
        ("the directory", cell.topo),
        ("the TOPOLOGY description", _topo(header_topo)),
    ]
    iterations = [
        ("run.json", record.iteration if record else None),
        ("the directory", cell.iteration),
    ]
    result.nodes = _pick(result, "nodes", nodes)
    result.topo = _pick(result, "topology", topos)
    result.iteration = _pick(result, "iteration", iterations)
    knobs = [
        ("run.json", record.knobs if record else None),
        ("the KARY cell line", _knobs(meta) if meta else None),
        ("the directory", cell.knobs),
    ]
    picked = _pick(result, "knobs", [(n, _KnobsSaid(k) if k else None) for n, k in knobs])
    result.knobs = picked.knobs if picked is not None else NO_KNOBS
    blobs = [
        ("run.json", _blob(record.blob) if record else None),
        ("the KARY cell line", _blob(meta.get("blob"))),
        ("the directory", blob_of_path(cell.rel.split("/")) if cell.rel else None),
    ]
    said = _pick(result, "blob", blobs)
    if said is not None:
        result.blob = said
    elif not cell.has_record and result.log_format == "legacy":
        result.blob = SEED_BLOB  # flux-distribute's own log: its image made zeros
    else:
        result.blob = DEFAULT_BLOB  # kary, before it said: random was all it made


def _pick(result: CellResult, what: str, sources: list[tuple[str, Any]]) -> Any:
    known = [(name, value) for name, value in sources if value is not None]
    if not known:
        return None
    first_name, first = known[0]
    for name, value in known[1:]:
        if value != first:
            result.note("warning", f"{name} says {what} {value}, {first_name} says {first} (used)")
            break
    return first


def _check_overlay(result: CellResult) -> None:
    """Warn when the printed overlay is not the tree the cell claims to have run."""
    assert result.topo is not None and result.nodes is not None
    if not _overlay_matches(tuple(result.overlay), result.topo, result.nodes):
        result.note("warning", f"printed overlay is not {result.topo} on {result.nodes} nodes")


@lru_cache(maxsize=4096)
def _overlay_matches(overlay: tuple[str, ...], topo: str, nodes: int) -> bool:
    """The printed overlay reads and is `topo` on `nodes` ranks.  Cached: the cells of
    one design print the same overlay, and reading it and building the tree it should
    be were a tenth of a seed log's parse."""
    if overlay and overlay_parents(overlay) is None:
        return False
    return overlay_problem(overlay, topo, nodes) is None


@dataclass(frozen=True)
class _KnobsSaid:
    """Knobs as a source says them, printed as a warning words them."""

    knobs: Knobs

    def __str__(self) -> str:
        return self.knobs.text() or "none"


def _knobs(meta: dict[str, Any]) -> Knobs | None:
    labels = meta.get("knobs", {})
    return knobs_from_labels(labels) if isinstance(labels, dict) else None


def _blob(value: Any) -> str | None:
    return value if isinstance(value, str) and value in BLOB_KINDS else None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _topo(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        return str(parse_topology(value.strip()))
    except UserError:
        return topo_from_dirname(value.strip())


def _oneline_text(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _oneline(err: Exception) -> str:
    return str(err).splitlines()[0] if str(err) else type(err).__name__
