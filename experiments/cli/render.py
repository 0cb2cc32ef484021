"""`kary render`: write one cell's minicluster.yaml and entrypoint.sh to read before running."""

from __future__ import annotations

from pathlib import Path

import typer

from experiments.errors import UserError
from experiments.model.plan import Cell
from experiments.model.render import DEFAULT_IMAGE, RenderOptions, render_cell
from experiments.model.validate import image_ref, node_count, parse_size, parse_sizes


def register(app: typer.Typer) -> None:
    @app.command("render")
    def render_command(
        nodes: int = typer.Option(..., "--nodes", help="Number of brokers."),
        topo: str = typer.Option(..., "--topo", help="kary:K, binomial or mincrit[:K]."),
        out: Path = typer.Option(..., "--out", help="Folder to write the two files into."),
        sizes: str = typer.Option("1G", "--sizes", help="Sizes with units, e.g. 512M,2G."),
        strategy: list[str] = typer.Option(["all"], "--strategy", help="all, leaves, middle."),
        iteration: int = typer.Option(0, "--iteration", help="Iteration number (for the cell id)."),
        name: str = typer.Option("flux-sample", "--name", help="MiniCluster name."),
        image: str = typer.Option(DEFAULT_IMAGE, "--image", help="Container image with Flux."),
        verify: bool = typer.Option(False, "--verify/--no-verify", help="sha256 every copy."),
        purge_target_size: str | None = typer.Option(
            None, "--purge-target-size", help="Content cache size per broker, e.g. 16M."
        ),
        template: Path | None = typer.Option(None, "--template", help="Your own template folder."),
    ) -> None:
        """Render one cell so you can read exactly what will run.

        Example:

        \b
            kary render --nodes 30 --topo kary:16 --sizes 512M,2G --out /tmp/cell
        """
        node_count(nodes)
        if iteration < 0:
            raise UserError(f"invalid --iteration {iteration}: must be >= 0")
        strategies = [s.strip() for v in strategy for s in v.split(",") if s.strip()]
        options = RenderOptions(
            name=name,
            image=image_ref(image),
            verify=verify,
            purge_target_size=parse_size(purge_target_size) if purge_target_size else None,
        )
        cell_id = Cell(nodes, topo, iteration, (), ()).id
        rendered = render_cell(
            nodes, topo, parse_sizes(sizes), strategies, cell_id, options, template
        )
        for path in rendered.write(out):
            typer.echo(f"wrote {path}")
        typer.echo(f"template hash {rendered.template_hash}")
