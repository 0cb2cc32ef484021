"""A cell's identity: everything that shapes its numbers, as planned and as run.json says.

A raw tree's cell is done for a plan only when it ran as the plan would run
it.  Its path already says its nodes, topology, links, Flux knobs and
iteration (formats/cell_layout.py); the rest of what changes a timing is
here: the sizes and strategies it timed, the experiment, the backend and
where it ran (place, layout), its links in canonical units, the image and
flux view a cluster ran, whether every copy was verified, what its blobs held
(formats/blobs.py), the cluster and its instance type, the emulator's faults
and whether ranks could share a node.  The runner writes the planned identity
into each cell's run.json (`identity`); the ledger compares it before a done
cell is skipped, and a difference stops the plan with one line (see
`identity_problem`).

The Flux version a cell ran is known only once it ran (RAN_FIELDS): it is part
of the identity as run (RUN_IDENTITY_FIELDS), which `kary compare` holds two
trees to, and never part of a plan.

The benchmark template is not part of it: upgrading kary changes the
template's hash, and refusing every resumed study for that would hide the
real differences among the noise.  `other_template` names such cells so the
plan can say so.

A record written before kary recorded `identity` is compared on the fields
its top level has (sizes, strategies, experiment, backend, image, cluster,
instance type), and its blobs were random (kary made no other kind before it
recorded `blob`); what it never recorded is not guessed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from experiments.errors import UserError
from experiments.formats.blobs import DEFAULT_BLOB
from experiments.formats.cell_layout import format_size, network_from_dirname
from experiments.formats.run_record import RunRecord
from experiments.model.links import LINK_QUEUES, QUEUE_BEFORE_LINK_QUEUES, LinkSettings
from experiments.model.plan import Cell

__all__ = [
    "IDENTITY_FIELDS",
    "RAN_FIELDS",
    "RUN_IDENTITY_FIELDS",
    "StudySettings",
    "identity_differences",
    "identity_problem",
    "recorded_identity",
]

# In the order a difference is named.
IDENTITY_FIELDS = (
    "experiment",
    "sizes",
    "strategies",
    "backend",
    "place",
    "layout",
    "links",
    "link_queue",
    "image",
    "flux_view",
    "verify",
    "blob",
    "cluster",
    "instance_type",
    "emulator_faults",
    "shared_nodes",
)
# What shapes a cell's numbers that only its run can tell: the Flux version it ran
# (the log's cell line, run.json's flux_version).  Never planned, so the ledger cannot
# hold a plan to it; `kary compare` holds two trees to it (RUN_IDENTITY_FIELDS).
RAN_FIELDS = ("flux_version",)
# The identity of a cell as it ran: the planned fields and those only a run tells.
RUN_IDENTITY_FIELDS = (*IDENTITY_FIELDS, *RAN_FIELDS)
# What a record from before `identity` still says, at its top level.
_LEGACY_FIELDS = (
    "experiment",
    "sizes",
    "strategies",
    "backend",
    "image",
    "cluster",
    "instance_type",
)


@dataclass(frozen=True)
class StudySettings:
    """What every cell of one plan shares that shapes its numbers (see the module doc).

    `image` and `flux_view` are None where no container runs (the cell ran the
    Flux on PATH, or the emulator); `place` None off the flux backend.
    """

    backend: str
    place: str | None = None
    layout: str = "per-cell"
    links: LinkSettings = field(default_factory=LinkSettings)
    image: str | None = None
    flux_view: str | None = None
    verify: bool = True
    cluster: str | None = None
    instance_type: str | None = None
    emulator_faults: tuple[str, ...] = ()
    shared_nodes: bool = False

    def identity(self, cell: Cell) -> dict[str, Any]:
        """The cell's identity as run.json's `identity` holds it (JSON values)."""
        return {
            "experiment": cell.experiment,
            "sizes": list(cell.sizes),
            "strategies": list(cell.strategies),
            "backend": self.backend,
            "place": self.place,
            "layout": self.layout,
            "links": self.links.dirname(),
            "link_queue": self.links.queue
            if self.place == "box" and self.links.rate_shaped
            else None,
            "image": self.image,
            "flux_view": self.flux_view,
            "verify": self.verify,
            "blob": cell.blob,
            "cluster": self.cluster,
            "instance_type": self.instance_type,
            "emulator_faults": list(self.emulator_faults),
            "shared_nodes": self.shared_nodes,
        }


def recorded_identity(record: RunRecord) -> dict[str, Any]:
    """What the record says the cell was: its `identity`, else its legacy top-level fields."""
    extra = record.model_extra or {}
    stored = extra.get("identity")
    if isinstance(stored, dict):
        found = {name: stored[name] for name in IDENTITY_FIELDS if name in stored}
        if "link_queue" not in stored and stored.get("place") == "box":
            rates = network_from_dirname(str(stored.get("links") or "")) or {}
            if {"bw", "rootbw", "groupbw"} & set(rates):
                found["link_queue"] = QUEUE_BEFORE_LINK_QUEUES
        return found
    legacy = record.model_dump()
    legacy["experiment"] = extra.get("experiment") or "distribute"
    # An empty or missing field was not recorded: nothing to hold the plan to.
    stated = {name: legacy[name] for name in _LEGACY_FIELDS if legacy.get(name) not in (None, [])}
    return stated | {"blob": record.blob or DEFAULT_BLOB}


def identity_differences(planned: Mapping[str, Any], recorded: Mapping[str, Any]) -> list[str]:
    """`sizes 16M, planned 32M` for each field the record states and the plan differs in."""
    return [
        f"{name.replace('_', ' ')} {_text(name, recorded[name])}, "
        f"planned {_text(name, planned.get(name))}"
        for name in IDENTITY_FIELDS
        if name in recorded and _canonical(recorded[name]) != _canonical(planned.get(name))
    ]


def identity_problem(
    differing: Sequence[tuple[str, list[str]]], recorded: int, data_dir: object
) -> UserError:
    """One line for recorded cells the plan would run otherwise: the first cell's
    differences, and how many of the `recorded` cells it would skip differ."""
    cell, differences = differing[0]
    others = (
        f" (and {len(differing) - 1} more of {recorded} recorded cells)"
        if len(differing) > 1
        else ""
    )
    return UserError(
        f"{data_dir}/{cell} ran with {'; '.join(differences)}{others}: this plan would mix "
        f"them; {_remedy(differences)}use another --data-dir, or --force to run them again "
        "(old results kept aside)"
    )


def _remedy(differences: Sequence[str]) -> str:
    """What most likely makes the plan match, when one difference says it."""
    said = " ".join(differences)
    if f"backend flux, planned {_text('backend', 'local')}" in said:
        # Real Flux made them and this shell has no `flux`: the emulator was planned.
        return (
            "put flux-core's `flux` on PATH to add to them (after `make demo`: "
            "`source .venv/bin/activate`), or "
        )
    for queue in LINK_QUEUES:
        if f"link queue {queue}, planned" in said:
            return f"--link-queue {queue} adds to them, or "
    return ""


def _canonical(value: Any) -> Any:
    """Lists compare as lists; an empty list, None and False are the same unset."""
    if isinstance(value, (list, tuple)):
        return list(value) or None
    return None if value is False or value == "" else value


# How an unset field is said: a place is the flux backend's, a queue a shaped rate's.
_UNSET = {
    "links": "unshaped",
    "emulator_faults": "none",
    "place": "no place (not real Flux here)",
    "link_queue": "none (no shaped rate)",
}


def _text(name: str, value: Any) -> str:
    if value is None or value == [] or value == "":
        return _UNSET.get(name, "none")
    if name == "backend" and value == "local":
        return "local (kary's emulator)"
    if name == "sizes" and isinstance(value, list):
        return ",".join(format_size(int(v)) for v in value)
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list):
        return ",".join(map(str, value))
    return str(value)
