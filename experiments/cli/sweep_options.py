"""The sweep flags `kary plan`, `kary run` and `kary render` share, declared once.

Each is a type alias a command uses as a parameter annotation; the defaults are
the Python API's (`experiments.model.sweep.Sweep`), so the command line and a notebook
can never disagree on them.  flux-distribute's runner names are kept (--data,
--exact-nodes, --max-nodes, --min-size, --max-size, --topo, --iters, --data-dir).

`kary plan` and `kary run` also take a sweep file (SweepFile); the flags given
on the command line override it, exactly as `Sweep.from_file(path, **flags)`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from experiments.cli.only_option import Only as Only  # shared with `kary parse`
from experiments.errors import UserError
from experiments.model.sweep import Sweep, load_sweep
from experiments.model.units import SIZE_UNITS_TEXT

__all__ = ["sweep_from_flags"]

DEFAULT = Sweep()

Designs = Annotated[
    Path | None,
    typer.Option("--designs", help="Design file (default: the shipped designs/kary-designs.json)."),
]
# The design file's old name: accepted, and pointed to its new one (parse's --data is the
# raw tree, and one flag name meant two things).
DesignsOldName = Annotated[Path | None, typer.Option("--data", hidden=True)]
ExactNodes = Annotated[
    int | None, typer.Option("--exact-nodes", help="Run the designs for exactly N nodes.")
]
MaxNodes = Annotated[
    int | None, typer.Option("--max-nodes", help="Run every design with at most N nodes.")
]
MinSize = Annotated[
    int | None,
    typer.Option(
        "--min-size",
        help="Smallest size, in whole GiB (2^30 bytes), with --max-size: every GiB between "
        "(flux-distribute's own flags).",
    ),
]
MaxSize = Annotated[
    int | None, typer.Option("--max-size", help="Largest size, in whole GiB (2^30 bytes).")
]
Sizes = Annotated[
    str | None,
    typer.Option(
        "--sizes",
        help=f"Sizes, e.g. 512M,2G (default: per backend).  {SIZE_UNITS_TEXT}.",
    ),
]
Topo = Annotated[
    list[str] | None,
    typer.Option(
        "--topo",
        metavar="<topo>",
        help="Topology to run (repeatable, or a comma list); needs --exact-nodes.",
    ),
]
Iters = Annotated[int, typer.Option("--iters", help="Iterations per design.")]
Strategy = Annotated[
    list[str] | None,
    typer.Option(
        "--strategy",
        metavar="<strategy>",
        help="all, leaves, middle, or direct (HTTP from rank 0, no tree); repeatable or a "
        "comma list.",
    ),
]
Experiment = Annotated[
    str,
    typer.Option(
        "--experiment",
        metavar="<experiment>",
        help="distribute (the strategies), or ping: flux ping from rank 0 to every rank, "
        "broker and kvs, with no payload and with each size as --pad (flux-distribute's ping "
        "variant).",
    ),
]
DataDir = Annotated[Path, typer.Option("--data-dir", help="Raw tree to write cells into.")]
Name = Annotated[str, typer.Option("--name", help="MiniCluster name (hosts are NAME-rank).")]
Backend = Annotated[
    str | None,
    typer.Option(
        "--backend",
        help="flux (real flux-core: here, or nested in a Flux allocation), local (emulated "
        "Flux here) or kubernetes.  Default: flux when `flux` is on PATH, else local.",
    ),
]
Cluster = Annotated[
    Path | None,
    typer.Option("--cluster", help="Cluster file (clusters/*.yaml) to run on and price."),
]
History = Annotated[
    Path | None, typer.Option("--history", help="Parsed results to calibrate the time model.")
]
Template = Annotated[
    Path | None, typer.Option("--template", help="Folder with your own templates.")
]
Image = Annotated[str, typer.Option("--image", help="Container image with Flux.")]
FluxView = Annotated[
    str | None,
    typer.Option(
        "--flux-view",
        metavar="REF@sha256:DIGEST",
        help="The Flux Operator's flux view the pods take Flux from (default: the image's, "
        "ubuntu's flux-view-ubuntu:tag-noble); a billed run needs it pinned by digest.",
    ),
]
Verify = Annotated[
    bool | None,
    typer.Option("--verify/--no-verify", help="sha256 every copy (default: on locally)."),
]
Smoke = Annotated[
    bool,
    typer.Option(
        "--smoke/--no-smoke",
        help="On a billed cluster, first run one small cell (fewest nodes, two topologies, "
        "16M, verify on) and stop if it fails; kept in the raw tree's smoke/, never parsed.",
    ),
]
Blob = Annotated[
    str | None,
    typer.Option(
        "--blob",
        metavar="<kind>",
        help="What each size's blob holds: random (distinct bytes, the default: the tree "
        "moves the whole size) or zeros (flux-distribute's blobs: one distinct chunk, so a "
        "distribution times each rank's disk writes; for comparing with published numbers).",
    ),
]
SweepFile = Annotated[
    Path | None,
    typer.Argument(
        metavar="SWEEP_FILE",
        help="A study as YAML (matrix, zip, sizes, ...; see docs/formats.md, Sweep files); "
        "flags given here override it.",
        show_default=False,
    ),
]
Chunksize = Annotated[
    str | None,
    typer.Option(
        "--chunksize",
        metavar="<size>",
        help="flux archive create --chunksize: largest content blob, e.g. 256K (Flux: 1M; "
        "units as --sizes).",
    ),
]
Mmap = Annotated[
    bool | None,
    typer.Option(
        "--mmap/--no-mmap",
        help="flux archive create --mmap: rank 0 maps the blob instead of copying it.",
        show_default=False,
    ),
]
PurgeTargetSize = Annotated[
    str | None,
    typer.Option(
        "--purge-target-size",
        metavar="<size>",
        help="Content cache per broker (flux module reload content), e.g. 64M (Flux: 16M; "
        "units as --sizes).",
    ),
]
Order = Annotated[str, typer.Option("--order", help="given, or random (shuffled per iteration).")]
Seed = Annotated[
    int | None, typer.Option("--seed", help="Seed for --order random (recorded either way).")
]
RerunFailed = Annotated[
    bool, typer.Option("--rerun-failed", help="Run cells that failed before again.")
]
Force = Annotated[
    bool, typer.Option("--force", help="Run every cell again (old results kept aside).")
]
Up = Annotated[bool, typer.Option("--up", help="Create the --cluster first.")]
Down = Annotated[
    bool, typer.Option("--down", help="Delete the --cluster at the end, also on error or Ctrl-C.")
]
LinkBandwidth = Annotated[
    str | None,
    typer.Option(
        "--link-bandwidth",
        help="Each node's link, both ways, e.g. 200Mbit: real Flux in a box when flux-core is "
        "on PATH (--place box), else the emulator; the plan's time model uses it too.",
    ),
]
LinkLatency = Annotated[
    str | None,
    typer.Option(
        "--link-latency",
        help="One-way latency of each node's link, e.g. 200us (a box needs the kernel's netem).",
    ),
]
RootLinkBandwidth = Annotated[
    str | None,
    typer.Option(
        "--root-link-bandwidth",
        help="Rank 0's link when it differs from --link-bandwidth (box only), e.g. 1Gbit.",
    ),
]
GroupSize = Annotated[
    int | None,
    typer.Option(
        "--group-size",
        help="Box only: nodes per group (ranks 0..N-1, N..2N-1, ...), each group behind a "
        "switch of its own whose uplink is --group-link-bandwidth: a two-level network.",
    ),
]
GroupLinkBandwidth = Annotated[
    str | None,
    typer.Option(
        "--group-link-bandwidth",
        help="Box only: each group's uplink to the core switch (both directions), e.g. 100Mbit.",
    ),
]
LinkQueue = Annotated[
    str | None,
    typer.Option(
        "--link-queue",
        metavar="fair|fifo",
        help="Box only: how a shaped link queues what waits: fair (default; a queue per "
        "peer, served in turn, as a real host's fq_codel and a cloud NIC do) or fifo (one "
        "drop-tail queue, as kary's box had before; wide fan-outs starve connections).",
    ),
]
Place = Annotated[
    str | None,
    typer.Option(
        "--place",
        metavar="<place>",
        help="Where real Flux runs a cell (--backend flux): box (brokers in network "
        "namespaces of their own over shaped links), test-instance (flux start --test-size) "
        "or allocation (nested in FLUX_URI's instance).  Default: box when links are "
        "shaped, else allocation inside Flux, else test-instance.",
    ),
]
Layout = Annotated[
    str | None,
    typer.Option(
        "--layout",
        metavar="<layout>",
        help="nested: one MiniCluster (here: one test instance) per node count, each cell a "
        "nested Flux instance in it; per-cell: one per cell, as flux-distribute's sweeps ran.  "
        "Default: nested on kubernetes, per-cell elsewhere.",
    ),
]
AllowSharedNodes = Annotated[
    bool,
    typer.Option(
        "--allow-shared-nodes",
        help="Kubernetes: time a cell even when two of its ranks landed on one node "
        "(recorded in run.json).  Default: such a cell fails before it is timed.",
    ),
]
PendingTimeout = Annotated[
    float | None,
    typer.Option(
        "--pending-timeout",
        metavar="SECONDS",
        help="Kubernetes: fail a cell whose pods are still Pending this long after its "
        "MiniCluster was made.  Default: 600 s plus twice the plan's image pull estimate.",
    ),
]
MaxCost = Annotated[
    float | None,
    typer.Option(
        "--max-cost",
        help="Dollars: refuse a plan estimated above it; stop before a cell that would pass it.",
    ),
]
MaxHours = Annotated[
    float | None,
    typer.Option(
        "--max-hours", help="With --up: the cluster's lease (default: the plan x 1.5 + 1 h)."
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")]


def sweep_from_flags(flags: dict[str, Any], ctx: typer.Context | None = None) -> Sweep:
    """A command's sweep flags (named as Sweep's fields; unset lists as None) -> Sweep.

    With a sweep file (`flags["sweep_file"]`), only the flags given on the
    command line (`ctx` says which) are laid over the file; the others keep
    the file's values.
    """
    old = flags.get("designs_old_name")
    if old is not None:
        if flags.get("designs") is not None:
            raise UserError("--data is the old name of --designs: give one")
        typer.echo(
            f"kary: --data {old} is the design file's old flag: say --designs {old}", err=True
        )
        flags = {**flags, "designs": old}
    fields = {name: value for name, value in flags.items() if name in Sweep.__dataclass_fields__}
    for name in ("topos", "strategies", "emulator_faults"):
        if fields.get(name) is None:
            fields.pop(name, None)
    path = flags.get("sweep_file")
    if path is None:
        return Sweep(**fields)
    given = {name: value for name, value in fields.items() if _given(ctx, name)}
    if old is not None:
        given["designs"] = old
    return load_sweep(path).override(**given)


def _given(ctx: typer.Context | None, name: str) -> bool:
    """The flag was typed (or came from the environment), not left at its default."""
    source = ctx.get_parameter_source(name) if ctx is not None else None
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")
