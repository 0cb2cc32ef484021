"""`kary render`: write one cell's minicluster.yaml and entrypoint.sh to read before running.

Its flags and defaults are `kary run`'s (sweep_options.py), so what it renders is
what a run with the same flags would run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from experiments.cli import sweep_options as o
from experiments.errors import UserError
from experiments.formats.cell_layout import Knobs
from experiments.model.axes import knob_flag
from experiments.model.plan import Cell
from experiments.model.render import RenderOptions, render_cell
from experiments.model.units import parse_sizes
from experiments.model.validate import image_ref, node_count

D = o.DEFAULT


def render(
    nodes: Annotated[int, typer.Option("--exact-nodes", "--nodes", help="Number of brokers.")],
    topo: Annotated[str, typer.Option("--topo", help="kary:K, binomial or mincrit[:K].")],
    out: Annotated[Path, typer.Option("--out", help="Folder to write the two files into.")],
    sizes: o.Sizes = None,
    strategies: o.Strategy = None,
    experiment: o.Experiment = D.experiment,
    iteration: Annotated[
        int, typer.Option("--iteration", help="Iteration number (for the cell id).")
    ] = 0,
    name: o.Name = D.name,
    image: o.Image = D.image,
    verify: o.Verify = None,
    chunksize: o.Chunksize = None,
    mmap: o.Mmap = None,
    purge_target_size: o.PurgeTargetSize = None,
    template: o.Template = None,
) -> None:
    """Render one cell so you can read exactly what will run.

    Sizes default to 1G; --verify defaults to off (a run turns it on where kary runs).
    The Flux knobs (--chunksize, --mmap, --purge-target-size) appear in the
    entrypoint only when given.

    Example:

    \b
        kary render --exact-nodes 30 --topo kary:16 --sizes 512M,2G --out /tmp/cell
        kary render --exact-nodes 8 --topo kary:2 --chunksize 256K --mmap --out /tmp/cell
    """
    node_count(nodes)
    if iteration < 0:
        raise UserError(f"invalid --iteration {iteration}: must be >= 0")
    chosen = [s.strip() for v in strategies or D.strategies for s in v.split(",") if s.strip()]
    options = RenderOptions(name=name, image=image_ref(image), verify=bool(verify))
    knobs = Knobs(
        chunksize=knob_flag("chunksize", chunksize),
        mmap=mmap,
        purge_target_size=knob_flag("purge_target_size", purge_target_size),
    )
    cell_id = Cell(nodes, topo, iteration, (), (), knobs).id
    rendered = render_cell(
        nodes, topo, parse_sizes(sizes or "1G"), chosen, cell_id, options, template, knobs,
        experiment,
    )  # fmt: skip
    for path in rendered.write(out):
        typer.echo(f"wrote {path}")
    typer.echo(f"template hash {rendered.template_hash}")


def register(app: typer.Typer) -> None:
    app.command("render", short_help="Write one cell's files (MiniCluster, entrypoint).")(render)
