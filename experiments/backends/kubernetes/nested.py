"""The nested layout on Kubernetes: one MiniCluster per node count, each cell nested in it.

The runner hands the backend its cells in run order (`queue`), a node count's
together.  At the first cell of a node count, `NestedLayout` creates one
MiniCluster (model/render_nested) whose rank 0 runs the nested driver over
every queued cell of that node count (as many as keep its log under half the
kubelet's rotation size, model/log_budget; the rest get the next one): each
cell a `flux batch` over all pods
with the cell's own entrypoint and tbon.topo, framed in rank 0's log by
KARY-NESTED lines (formats/nested_frame).  `run(cell)` then waits until the
log shows the cell's end frame and hands back the cell's part of the log, so
each cell still gets its own raw directory, run.json, KARY log and state.

A race holds its group (`held`, Backend.stay_up): after its queued cells the
MiniCluster stays up, and the next block's cells, queued later, are fed to its
driver through a ConfigMap (feed.py, nested_making.py) when it has delivered
every cell it had and its log budget holds them; otherwise (a block voided
before its end left cells the driver still runs, or a full log) a new group
takes them.

What can go wrong, and what happens:

- a cell fails: its frame says so (rc, Flux's result); the driver goes on;
- a cell outruns its limit: Flux ends the nested job (`--time-limit`), the
  frame says TIMEOUT, the cell is `timeout` and the driver goes on.  Should
  the driver itself hang, kary gives up `grace_s` after the limit: the cell
  is timed out and the MiniCluster deleted; the next cell starts a new one
  for the cells still to run;
- the pods cannot start (pod_watch) or the Job ends before the cell's
  end frame (a broker died): the cell fails with the reason and the
  MiniCluster is deleted; the next cell starts a new one;
- Ctrl-C / SIGTERM / any error out of `run()`: the MiniCluster is deleted,
  which ends the running nested job with its pods;
- after the node count's last cell, or in `down()`: the MiniCluster is deleted;
- the driver's own start failures (a job not started within its bound, a disk
  too full for the cell, a Flux too old for mincrit) end the cell as a start
  failure of that kind: the runner stops after the same kind twice;
- a pod of the group replaced, a container restarted (the operator's Jobs
  restart `OnFailure`, and a restarted rank 0 reruns the driver from its first
  cell) or rank 0's log rotated past frames kary had not read: the cell fails
  with the reason and the group is broken (deleted; the next cell starts a new
  one);
- rank 0's log rotated (the kubelet does at `containerLogMaxSize`): routine;
  the group goes on when its numbered frames follow on (log_follow), and a cell
  whose end frame counts more lines than the log kept fails, not timed;
- a rank's node died (Flux lost the rank; the API may show its pod Running for
  minutes yet): the cell fails with the ranks, and kary waits (bounded,
  recorded) for their replacement pods before the next cell starts a new
  group (node_lost);
- a cell's nested job started but its entrypoint printed nothing within
  `join_s`: some nested broker never joined; the cell is a start failure;
- a rank lost its node to preemption (pod_watch, preemption: the node deleted,
  the pod's DisruptionTarget condition, a Spot node cordoned), seen while the
  cell runs or when it ended without its result: the cell is `preempted` (never
  timed; the next run runs it again) and the group is broken.

A cell's clock starts at its job frame, not at the group's creation: the
first cell's limit does not pay for pulling images.  The log is followed
every `log_every_s` (log_follow: only the new lines; no exec, no stream to
keep alive for hours).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubernetes.client.exceptions import ApiException

from experiments.backends.base import QueuedCell, RunResult
from experiments.backends.kubernetes.api import ApiUnavailable
from experiments.backends.kubernetes.collect import (
    CellCheck,
    cell_problems,
    diagnostics,
    pod_facts,
)
from experiments.backends.kubernetes.context import ClusterContext
from experiments.backends.kubernetes.feed import delete_feed
from experiments.backends.kubernetes.group_health import GroupBroken, Look, look_at
from experiments.backends.kubernetes.job_watch import wait_for_job
from experiments.backends.kubernetes.minicluster import (
    NotOurs,
    delete_minicluster,
    job_pods,
)
from experiments.backends.kubernetes.nested_group import (
    CellEnded,
    CellOverdue,
    Group,
    cell_ended,
    cell_text,
    fitting_log_budget,
    frames_lost,
    lines_lost,
    unfinished_error,
    within_log_budget,
)
from experiments.backends.kubernetes.nested_making import create_group, feed_group, new_group
from experiments.backends.kubernetes.node_lost import (
    NODE_LOST_WAIT_S,
    await_replacement,
    lost_ranks,
    node_lost,
)
from experiments.backends.kubernetes.objects import rank_zero
from experiments.backends.kubernetes.pod_watch import PodEvicted, StartFailure
from experiments.backends.kubernetes.preemption import Preempted, preempted_result
from experiments.formats.kary_line import meta_record
from experiments.formats.nested_frame import CellFrame, split_frames
from experiments.model.render_nested import (
    FEED_DELAY_S,
    START_TIMEOUT_S,
)

if TYPE_CHECKING:
    from experiments.model.plan import Cell
    from experiments.model.render import Rendered

__all__ = ["NestedLayout"]


@dataclass
class NestedLayout:
    """Runs queued cells as nested instances, a MiniCluster per node count (module doc)."""

    cluster: ClusterContext
    log_every_s: float = 10.0
    grace_s: float = 120.0
    replacement_s: float = NODE_LOST_WAIT_S
    queued: list[QueuedCell] = field(default_factory=list)
    group: Group | None = None
    # A race: the group stays up after its queued cells, and the next ones (the next
    # block's, queued later) are fed to its driver (feed.py) rather than a new group.
    held: bool = False
    # How long the kubelet may take to project an updated ConfigMap: a fed cell's start
    # may wait that too.
    feed_delay_s: float = FEED_DELAY_S

    def run(
        self, cell: Cell, rendered: Rendered, timeout: float | None, facts: dict[str, Any]
    ) -> RunResult:
        """Run one queued cell (or, not queued, a group of its own); see the module doc."""
        cluster = self.cluster
        limit = timeout if timeout is not None else cluster.default_timeout_s
        try:
            group = self._group_for(cell, rendered, limit)
            result, broken = self._wait(group, cell, limit, dict(facts))
        except BaseException:
            self.end()  # Ctrl-C, or an API that broke: nothing outlives the cell
            raise
        group.delivered.append(cell.id)
        # A group that broke is not trusted with its next cell: that one starts a new one.
        # A held group waits for more cells (a race's next block) until end().
        if broken or (cell.id == group.cell_ids[-1] and not self.held):
            cleanup = self.end()
            if cleanup:
                result.provenance["cleanup"] = cleanup
        return result

    def end(self) -> str | None:
        """Delete the current group's MiniCluster (if any); what would not go, else None."""
        cluster = self.cluster
        group, self.group = self.group, None
        if group is None:
            return None
        notes = [delete_minicluster(cluster.api, cluster.namespace, group.name, cluster.teardown)]
        if group.feed is not None:  # after its MiniCluster: no pod waits on it then
            notes.append(delete_feed(cluster.api, cluster.namespace, group.feed))
        return "; ".join(note for note in notes if note) or None

    # -- the group a cell runs in --------------------------------------------------

    def _group_for(self, cell: Cell, rendered: Rendered, limit: float) -> Group:
        group = self.group
        if group is not None and cell.id in group.cell_ids and cell.id not in group.delivered:
            return group
        if group is not None and self._fed(group, cell, rendered, limit):
            return group
        self.end()
        cells = self._still_to_run(cell, rendered, limit)
        # From the first create request on, the MiniCluster may exist: end() deletes it.
        self.group = new_group(self.cluster, cells, rendered, limit, self.held)
        try:
            create_group(self.cluster, self.group)
        except NotOurs:
            self.group = None  # someone else's of that name: never delete it
            raise
        return self.group

    def _fed(self, group: Group, cell: Cell, rendered: Rendered, limit: float) -> bool:
        """Whether `cell` (and the queued cells of its node count after it, as many as the
        group's log budget still holds) went to the held group's driver as its next batch;
        False when it cannot take them (not held, another node count, cells of its own
        still to run, or a log already full): they start a new group."""
        if (
            not self.held
            or group.feed is None
            or group.nodes != cell.nodes
            or set(group.cell_ids) != set(group.delivered)
        ):
            return False
        cells = fitting_log_budget(self._still_to_run(cell, rendered, limit), group.log_bytes)
        if cells:
            feed_group(self.cluster, group, cells, limit)
        return bool(cells)

    def _still_to_run(self, cell: Cell, rendered: Rendered, limit: float) -> list[QueuedCell]:
        """This cell and the queued cells of its node count after it, in order, as many as
        keep the group's log under its rotation budget."""
        ids = [q.cell.id for q in self.queued]
        if cell.id not in ids:
            return [QueuedCell(cell, rendered, limit)]
        following = self.queued[ids.index(cell.id) :]
        same: list[QueuedCell] = []
        for queued in following:
            if queued.cell.nodes != cell.nodes:
                break
            same.append(queued)
        return within_log_budget(same)

    # -- one cell -------------------------------------------------------------------

    def _wait(
        self, group: Group, cell: Cell, limit: float, provenance: dict[str, Any]
    ) -> tuple[RunResult, bool]:
        """The cell's result, and whether its MiniCluster broke (no end frame came)."""
        cluster = self.cluster
        next_look = [0.0]
        job_seen: list[float] = []  # when kary first saw the cell's job frame
        joined = [False]
        # Until its job frame, a cell waits for the driver's start bound and, first in its
        # group, for the pods (whose own watch bounds that): its clock starts at the frame.
        startup = START_TIMEOUT_S + self.grace_s
        if not group.delivered:
            startup += cluster.limits.pending_s + cluster.limits.join_s
        if cell.id in group.fed:
            startup += self.feed_delay_s  # the kubelet projects the feed in its own time

        def look() -> None:
            group.pods.check()
            now = time.monotonic()
            if now < next_look[0]:
                return
            next_look[0] = now + self.log_every_s
            try:
                seen = self._rank_zero(group)
            except (ApiException, ApiUnavailable):
                return  # a side look: the Job watch reports an API that keeps failing
            group.pods.remember(seen.pods)
            frames = split_frames(seen.log)
            lost = frames_lost(frames, group.cell_ids, cell.id)
            if lost is not None:
                raise GroupBroken(lost)
            if cell_ended(frames, cell.id) or frames.finished:
                raise CellEnded(seen)
            if seen.broken is not None:
                raise GroupBroken(seen.broken)
            if seen.log_error is not None:
                return
            frame = frames.cells.get(cell.id)
            if frame is None or frame.jobid is None:
                return
            if not job_seen:
                job_seen.append(now)
            if now > job_seen[0] + limit + self.grace_s:
                raise CellOverdue(seen)
            if joined[0] or meta_record(frame.text, "cell") is not None:
                joined[0] = True
            elif now - job_seen[0] >= cluster.limits.join_s:
                raise StartFailure(
                    "brokers-never-joined",
                    f"the nested job of cell {cell.id} started {cluster.limits.join_s:g} s "
                    "ago and its benchmark never began: some nested broker never joined",
                )

        outcome: tuple[str, str] | StartFailure | str | None
        seen: Look | None = None
        try:
            outcome = wait_for_job(
                cluster.api,
                cluster.namespace,
                group.name,
                time.monotonic() + startup + limit + self.grace_s,
                start_timeout_s=cluster.job_start_timeout_s,
                window_s=cluster.window_s,
                policy=cluster.policy,
                sleep=cluster.sleep,
                check=look,
                check_every_s=min(cluster.limits.check_every_s, self.log_every_s),
            )
        except CellEnded as ended:
            outcome, seen = "ended", ended.seen
        except CellOverdue as overdue:
            outcome, seen = None, overdue.seen
        except StartFailure as failure:
            outcome = failure
        except Preempted:
            # Seen before the cell's end frame was read, maybe: _result looks again and
            # delivers a cell that ended; else the cell is preempted.
            outcome = "a rank lost its node"
        except (GroupBroken, PodEvicted) as broken:  # an evicted pod breaks the group
            return self._broken(group, cell, str(broken), provenance), True
        try:
            return self._result(group, cell, limit, outcome, provenance, seen)
        except GroupBroken as broken:
            return self._broken(group, cell, str(broken), provenance), True

    def _rank_zero(self, group: Group) -> Look:
        look, group.follower = look_at(self.cluster, group.name, group.identity, group.follower)
        return look

    def _broken(self, group: Group, cell: Cell, why: str, provenance: dict[str, Any]) -> RunResult:
        """The cell failed because its group broke under it (why), with what it printed;
        preempted when a rank lost its node (a replaced pod is how that often shows)."""
        lost = group.pods.preemption()
        if lost is not None:
            return self._preempted(group, cell, lost, provenance)
        text = cell_text(group, cell)
        provenance.update(
            {"minicluster": group.name, "layout": "nested", "nested_in": group.record(cell.id)}
        )
        error = f"MiniCluster {group.name} broke during cell {cell.id}: {why}"
        result = RunResult(text, None, False, error, provenance, None, group.manifest.yaml)
        try:
            pods = job_pods(self.cluster.api, self.cluster.namespace, group.name)
        except (ApiException, ApiUnavailable):
            return result
        return self._failed(result, group.name, pods)

    def _preempted(
        self, group: Group, cell: Cell, lost: Preempted, provenance: dict[str, Any]
    ) -> RunResult:
        """The cell lost a node to preemption: never timed, run again by the next run."""
        cluster = self.cluster
        text = cell_text(group, cell)
        provenance.update(
            {"minicluster": group.name, "layout": "nested", "nested_in": group.record(cell.id)}
        )
        try:
            pods = job_pods(cluster.api, cluster.namespace, group.name)
        except (ApiException, ApiUnavailable):
            pods = []
        pod0 = rank_zero(pods, group.name)
        seen = group.pods.loss.seen
        provenance.update(pod_facts(cluster.api, pods, pod0, text, cluster.nodes, group.name, seen))
        result = RunResult(text, None, False, str(lost), provenance, None, group.manifest.yaml)
        return preempted_result(self._failed(result, group.name, pods), lost)

    def _result(
        self,
        group: Group,
        cell: Cell,
        limit: float,
        outcome: tuple[str, str] | StartFailure | str | None,
        provenance: dict[str, Any],
        seen: Look | None,
    ) -> tuple[RunResult, bool]:
        """`seen`: the look that found the cell's end, else None (look again now)."""
        cluster = self.cluster
        name = group.name
        seen = seen or self._rank_zero(group)
        pods, log, log_error = seen.pods, seen.log, seen.log_error
        provenance.update(
            pod_facts(cluster.api, pods, seen.pod0, log, cluster.nodes, name, group.pods.loss.seen)
        )
        provenance.update(
            {"minicluster": name, "layout": "nested", "nested_in": group.record(cell.id)}
        )
        frames = split_frames(log)
        frame = frames.cells.get(cell.id) or CellFrame(cell.id)
        broke = frames_lost(frames, group.cell_ids, cell.id) or seen.broken
        if frame.end is None and broke is not None:
            return self._broken(group, cell, broke, provenance), True
        text = frame.output
        # A cell that ended without its result may have lost a node: pods and nodes as
        # pod_facts just listed them.
        lost = None if frame.ended else group.pods.loss.find(pods, cluster.nodes)
        if lost is not None:
            return self._preempted(group, cell, lost, provenance), True
        if isinstance(outcome, StartFailure):
            provenance["start_failure"] = outcome.kind
            failed = RunResult(
                text, None, False, str(outcome), provenance, outcome.kind, group.manifest.yaml
            )
            return self._failed(failed, name, pods), True
        if frame.end is None:
            error, timed_out = unfinished_error(
                cell.id, name, limit, self.grace_s, outcome, log_error
            )
            result = RunResult(text, None, timed_out, error, provenance, None, group.manifest.yaml)
            return self._failed(result, name, pods), True
        end = frame.end
        provenance["flux"] = {
            "brokers": cell.nodes,
            "wall_seconds": end.get("seconds"),
            "result": end.get("result"),
            "ended_at_status": end.get("ended_at_status") is True,  # killed then: FAILED
        }
        provenance.update({"jobid": frame.jobid, "hosts": end.get("hosts") or None})
        rc = end.get("rc") if isinstance(end.get("rc"), int) else None
        errors = []
        # The driver's own start failures (not started in time, no disk, old Flux) say
        # their kind: the runner stops a sweep after the same kind twice in a row.
        kind = end.get("kind") if isinstance(end.get("kind"), str) else None
        if end.get("error"):
            errors.append(f"the nested job of cell {cell.id} could not start: {end['error']}")
        if frame.timed_out:
            errors.append(f"timed out after {limit:g} s (Flux ended the nested job)")
            rc = None
        errors += cell_problems(
            text, pods, name, CellCheck(cell.id, cluster.limits.allow_shared_nodes), provenance
        )
        lost_lines = lines_lost(frame)
        if lost_lines is not None:
            errors.append(lost_lines)
        if seen.broken is not None and (errors or rc):
            errors.append(f"MiniCluster {name} broke during cell {cell.id}: {seen.broken}")
        if kind:
            provenance["start_failure"] = kind
        result = RunResult(
            text,
            rc,
            frame.timed_out,
            "; ".join(errors) or None,
            provenance,
            kind,
            group.manifest.yaml,
        )
        # A cell that ended is delivered even when the group broke just after it.
        broken = seen.broken is not None
        if not (result.error or rc):
            return result, broken
        # Its nested job failed: a broker whose node went fails it too.
        lost = group.pods.loss.find(pods, cluster.nodes)
        if lost is not None:
            return self._preempted(group, cell, lost, provenance), True
        ranks = lost_ranks(end)
        if ranks:  # its node died: not the next cells' start failures (node_lost)
            waited = await_replacement(cluster, name, group.identity, ranks, self.replacement_s)
            return self._failed(node_lost(result, name, cell.id, waited), name, pods), True
        return self._failed(result, name, pods), broken

    def _failed(self, result: RunResult, name: str, pods: list[dict[str, Any]]) -> RunResult:
        """The result with the pods' states and recent events, so a failure explains itself."""
        cluster = self.cluster
        result.provenance["diagnostics"] = diagnostics(cluster.api, cluster.namespace, name, pods)
        return result
