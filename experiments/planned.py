"""A planned sweep: its cells, which still run, what they cost, and how the plan is shown.

`experiments.api.plan()` makes one; `experiments.api.run()` runs it.  Its
`text()` is what `kary plan` prints and `to_json()` what `kary plan --json`
prints; `guard()` is the cluster session and spending cap around the run.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from experiments.estimate.bottleneck import box_bottlenecks
from experiments.estimate.defaults import pending_bound
from experiments.estimate.layouts import LayoutEstimate, layout_estimates
from experiments.estimate.time_model import Estimate
from experiments.execution.ledger import Ledger
from experiments.formats.run_record import BOX, NESTED
from experiments.model.cell_filter import parse_only
from experiments.model.cluster_spec import ClusterSpec
from experiments.model.design_source import design_source
from experiments.model.disk import disk_line
from experiments.model.identity import StudySettings
from experiments.model.places import HOW_TO_GET_FLUX, UNBILLED
from experiments.model.plan import Cell, Plan
from experiments.model.render import RenderOptions
from experiments.model.significance import significance_warning, zero_blobs_warning
from experiments.model.sweep import Sweep
from experiments.model.sweep_check import CheckedSweep, local_disk_warning
from experiments.plan_view import layout_lines, plan_json, plan_text
from experiments.smoke import NO_SMOKE, SmokePlan

__all__ = ["PlannedSweep", "cells_text", "faults_line", "stderr_line"]


@dataclass(frozen=True)
class PlannedSweep:
    """A validated, priced sweep: every cell, which still run (the ledger), and the estimate."""

    sweep: Sweep
    plan: Plan
    ledger: Ledger
    estimate: Estimate
    render: RenderOptions
    # The sweep's flags as the checks left them (model/sweep_check.py).
    checked: CheckedSweep
    # A billed sweep's smoke cell, run before the study's (experiments/smoke.py).
    smoke: SmokePlan = NO_SMOKE
    # What every cell shares that shapes its numbers, recorded as each one's identity.
    settings: StudySettings | None = None

    @property
    def backend(self) -> str:
        return self.plan.spec.backend

    @property
    def cluster(self) -> ClusterSpec | None:
        """The --cluster file's spec, if any."""
        return self.checked.cluster

    @property
    def place(self) -> str | None:
        """Where the flux backend runs the cells (box, test-instance, allocation); else None."""
        return self.checked.place

    @property
    def _cluster_name(self) -> str | None:
        return self.cluster.name if self.cluster else None

    @property
    def billed(self) -> bool:
        return self.backend not in UNBILLED

    def pending_timeout_s(self) -> float:
        """How long a cell's pods may stay Pending: --pending-timeout, else from the plan's
        image pull estimate (estimate/defaults.py pending_bound)."""
        given = self.sweep.pending_timeout
        return given if given is not None else pending_bound(self.estimate.model.image_pull_s)

    def backend_settings(self) -> Any:
        """What the backend this sweep runs on is made with (BackendSettings): the rendering,
        cluster, links, place and layout, and a fresh sweep id that labels what it creates
        (kary/sweep), so one sweep's leftovers can be found."""
        from experiments.backends import BackendSettings
        from experiments.formats.labels import new_sweep_id

        faults = tuple(self.sweep.emulator_faults)
        return BackendSettings(
            render=self.render,
            cluster=self.cluster,
            links=self.checked.links,
            place=self.place,
            layout=self.checked.layout,
            options={
                "sweep_id": new_sweep_id(),
                "allow_shared_nodes": self.sweep.allow_shared_nodes,
                "pending_timeout_s": self.pending_timeout_s(),
                **({"faults": faults} if faults else {}),
            },
        )

    def layouts(self) -> list[LayoutEstimate]:
        """The cells priced per layout: on a cluster, or where --layout nested is asked."""
        if self.backend != "kubernetes" and self.sweep.layout != NESTED:
            return []
        return layout_estimates(self.estimate)

    def cpu_bound_line(self) -> str | None:
        """A warning when box cells would measure this machine's cores, not its links."""
        if self.place != BOX or not self.ledger.to_run:
            return None
        links = self.checked.links
        bound = [
            c for c in self.ledger.to_run if any(b["cpu_bound"] for b in box_bottlenecks(c, links))
        ]
        if not bound:
            return None
        return (
            f"warning: {cells_text(len(bound))} of {len(self.ledger.to_run)} would be CPU-bound in "
            "the box (every broker shares this machine's cores: at 5 s/GB per rank, the CPU is "
            "at least half the links' floor), so they measure the machine as much as the "
            "network; slower --link-bandwidth or fewer nodes make the links the bottleneck"
        )

    def warnings(self) -> list[str]:
        """What `kary plan` and `kary run` warn of before a cell starts: cells the box makes
        CPU-bound, iterations too few for the report's test, a local disk nearly full,
        done cells that ran another benchmark template."""
        found = [
            self.emulator_fallback_line(),
            self.cpu_bound_line(),
            significance_warning(self.plan.cells),
            zero_blobs_warning(self.plan.cells),
            local_disk_warning(self.checked, self.plan.cells),
            self.other_template_line(),
            flat_tree_line(self.plan.cells),
        ]
        return [line for line in found if line]

    def emulator_fallback_line(self) -> str | None:
        """Why the cells run on the emulator when nothing asked for it: no flux-core on
        PATH (a shell other than the one `make demo` set up), and how to get real Flux."""
        sweep = self.sweep
        asked = sweep.backend or sweep.place or sweep.emulator_faults or self.cluster
        if asked or self.backend != "local":
            return None
        box = " (a box of shaped links needs it too)" if self.checked.links.shaped else ""
        return (
            f"note: no flux-core `flux` on PATH, so the cells run on kary's emulator, not "
            f"real Flux{box}; for real Flux, {HOW_TO_GET_FLUX}"
        )

    def other_template_line(self) -> str | None:
        """Done cells whose benchmark template (its hash) is not this plan's: kept, since
        upgrading kary changes the hash (model/identity.py), but said."""
        other = self.ledger.other_template
        if not other:
            return None
        return (
            f"warning: {cells_text(len(other))} of {len(self.ledger.done)} done ran another "
            f"benchmark template (e.g. {other[0].id}): their numbers may not compare with "
            "new cells'; --force runs them again (old results kept aside)"
        )

    def held_to(self) -> Estimate:
        """The figure --max-cost and --max-hours hold the sweep to: the estimate above
        (per-cell), or the chosen layout's where that is dearer."""
        chosen = next((lay for lay in self.layouts() if lay.name == self.checked.layout), None)
        if chosen is None:
            return self.estimate
        estimate = self.estimate
        return dataclasses.replace(
            estimate,
            seconds=max(estimate.seconds, chosen.seconds),
            seconds_low=max(estimate.seconds_low, chosen.seconds_low),
            seconds_high=max(estimate.seconds_high, chosen.seconds_high),
            cost_usd=max(estimate.cost_usd, chosen.cost_usd),
        )

    def as_run(self) -> Estimate:
        """The plan's headline: the estimate in the layout the sweep runs (per-cell's
        figures are the estimate itself; nested's come from its layout estimate)."""
        layouts = self.layouts()
        chosen = next((lay for lay in layouts if lay.name == self.checked.layout), None)
        if chosen is None or chosen is layouts[0]:
            return self.estimate
        return dataclasses.replace(
            self.estimate,
            seconds=chosen.seconds,
            seconds_low=chosen.seconds_low,
            seconds_high=chosen.seconds_high,
            parts=dict(chosen.parts) or self.estimate.parts,
            cost_usd=chosen.cost_usd,
        )

    def text(self, max_cost: float | None = None, max_hours: float | None = None) -> str:
        """The plan as `kary plan` prints it (with what --up/--down will run)."""
        designs = design_source(self.sweep, self.plan.cells).text()
        lines = plan_text(
            self.plan, self.ledger, self.as_run(), self._cluster_name, self.place, designs
        ).splitlines()
        lines += self.smoke.lines()
        disk = disk_line(self.cluster, self.plan.cells, self.checked.layout, self.checked.image)
        if disk is not None:
            lines.append(disk)
        lines += self.warnings()
        if self.sweep.group_size:
            lines.append(
                "note: the time model has no term for the groups' uplinks: where a tree "
                "crosses them more than its links' floor says, cells take longer than planned"
            )
        lines += layout_lines(self.layouts(), self.checked.layout)
        if guarded := self.guarded_line():
            lines.append(guarded)
        lines += self.guard(max_cost, max_hours).plan_lines()
        if self.sweep.emulator_faults:
            lines.append(faults_line(self.sweep.emulator_faults))
        lines += self._sweep_lines()
        return "\n".join(lines) + "\n"

    def _sweep_lines(self) -> list[str]:
        """Where the cells came from: the sweep file (by hash) and the --only filter."""
        lines = []
        if self.sweep.file is not None:
            lines.append(
                f"sweep file: {self.sweep.file.path} (sha256 {self.sweep.file.sha256[:12]})"
            )
        chosen = parse_only(self.sweep.only)
        if chosen is not None:
            lines.append(f"only: {chosen.text}")
        return lines

    def to_json(self, max_cost: float | None = None, max_hours: float | None = None) -> Any:
        """The plan as `kary plan --json` prints it."""
        data = plan_json(self.plan, self.ledger, self.estimate, self._cluster_name)
        data["smoke"] = self.smoke.record()
        data["designs"] = design_source(self.sweep, self.plan.cells).record()
        data["warnings"] = self.warnings()
        data["max_cost_holds_to"] = {
            "usd": round(self.cost_usd_high, 2),
            "what": self.guarded_text(),
        }
        if layouts := self.layouts():
            data["layouts"] = [layout.record() for layout in layouts]
        cluster_lines = self.guard(max_cost, max_hours).plan_lines()
        if cluster_lines:
            data["cluster_lifecycle"] = cluster_lines
        if self.sweep.emulator_faults:
            data["emulator_faults"] = list(self.sweep.emulator_faults)
        if self.sweep.file is not None:
            data["sweep_file"] = {
                "path": str(self.sweep.file.path),
                "sha256": self.sweep.file.sha256,
            }
        chosen = parse_only(self.sweep.only)
        if chosen is not None:
            data["only"] = chosen.text
        return data

    def check_cost(self, max_cost: float | None, max_hours: float | None = None) -> None:
        """Refuse (UserError) when the estimate's high end passes `max_cost` (--max-cost)."""
        guard = self.guard(max_cost, max_hours)
        guard.cap.check_plan(
            self.cost_usd_high, high_end=True, note=self.capacity_note(), what=self.guarded_text()
        )

    def guarded_text(self) -> str:
        """What `cost_usd_high` adds up, as the plan's `--max-cost holds ...` line says it:
        `per-cell's high end $4.51, the dearer layout a nested sweep is held to, + the smoke
        cell's $0.59`."""
        layouts = self.layouts()
        chosen = next((lay for lay in layouts if lay.name == self.checked.layout), None)
        held = self.held_to()
        if chosen is None or chosen is layouts[0]:
            study = f"the estimate's high end ${held.cost_usd_high:,.2f}"
        else:
            dearer = layouts[0].name if held.seconds_high > chosen.seconds_high else chosen.name
            study = f"{dearer}'s high end ${held.cost_usd_high:,.2f}"
            if dearer != chosen.name:
                # A nested group that cannot start runs its cells per-cell instead.
                study += f", the dearer layout a {chosen.name} sweep is held to,"
        if self.smoke.runs:
            study += f" + the smoke cell's ${self.smoke.cost_usd_high:,.2f}"
        return study

    def guarded_line(self) -> str | None:
        """The plan's line for the figure --max-cost holds it to; None when nothing is billed."""
        if self.cost_usd_high <= 0:
            return None
        return f"--max-cost holds this plan to ${self.cost_usd_high:,.2f}: {self.guarded_text()}"

    def capacity_note(self) -> str:
        """On a spot cluster, what the same plan (with its smoke cell) costs on demand:
        `on demand it would be $151.72 ($102.03 - $227.71)`; else ""."""
        held = self.held_to()
        bill = held.bill
        if bill is None or bill.on_demand is None:
            return ""
        hourly = held.hourly_usd - bill.usd_per_hour + bill.on_demand.usd_per_hour
        smoke = self.smoke.estimate if self.smoke.runs else None
        costs = []
        for attribute in ("seconds", "seconds_low", "seconds_high"):
            seconds = getattr(held, attribute) + (getattr(smoke, attribute) if smoke else 0.0)
            costs.append(hourly * seconds / 3600.0)
        point, low, high = costs
        return (
            f"on demand the same plan would be ${point:,.2f} (${low:,.2f} - ${high:,.2f}), "
            f"at ${hourly:.2f}/h"
        )

    @property
    def cost_usd_high(self) -> float:
        """What --max-cost holds the plan to: the high ends of the study's (in the dearer
        layout, held_to) and the smoke cell's."""
        return self.held_to().cost_usd_high + self.smoke.cost_usd_high

    def guard(
        self,
        max_cost: float | None = None,
        max_hours: float | None = None,
        echo: Callable[[str], None] | None = None,
    ) -> Any:
        """The cluster session (--up/--down) and spending cap around this sweep."""
        from experiments.clusters.session import sweep_guard

        return sweep_guard(
            self.cluster,
            self.held_to(),
            up=self.sweep.up,
            down=self.sweep.down,
            max_hours=max_hours,
            max_cost=max_cost,
            echo=echo or stderr_line,
        )


def faults_line(faults: Sequence[str]) -> str:
    return (
        f"emulator faults: {', '.join(faults)} (a testing aid: these cells test the "
        "template, they measure nothing)"
    )


def stderr_line(line: str) -> None:
    """Print one line on stderr at once: kary's notes beside a progress bar."""
    print(line, file=sys.stderr, flush=True)


def cells_text(count: int) -> str:
    return f"{count} cell" if count == 1 else f"{count} cells"


def flat_tree_line(cells: Sequence[Cell]) -> str | None:
    """A note where `kary:K` asks a fan-out past the node count: `kary:99` at 8 nodes is the
    flat tree, as `kary:7` is (issue 60, item 12).  (Two topologies of one tree at one
    node count are refused before: model/sweep_check.py.)"""
    notes = sorted(
        {
            f"{c.topo} at {c.nodes} nodes is the flat tree (every rank a child of rank 0), as "
            f"kary:{c.nodes - 1} is"
            for c in cells
            if c.topo.startswith("kary:") and c.topo[5:].isdigit() and int(c.topo[5:]) > c.nodes - 1
        }
    )
    return "note: " + "; ".join(notes) if notes else None
