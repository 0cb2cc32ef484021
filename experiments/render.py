"""Render one cell into what will run: `minicluster.yaml` and `entrypoint.sh`.

jinja2 with StrictUndefined, so a missing variable fails here rather than as
an empty string inside a shell script on a cluster.  Everything rendered has
been validated first (topology grammar, names, sizes, paths).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from experiments import __version__
from experiments.errors import UserError
from experiments.resources import resource_dir
from experiments.topology import Tree, build_tree, compress_idset
from experiments.validate import dns1123_name, format_size, image_ref, label_value, safe_path

__all__ = [
    "DEFAULT_IMAGE",
    "STRATEGIES",
    "RenderOptions",
    "Rendered",
    "render_cell",
    "strategy_waves",
    "template_hash",
]

# The seed's image: Flux 0.66.0 with bash, coreutils and openssl.
DEFAULT_IMAGE = "ghcr.io/converged-computing/container-chonks:topology-flux-0.66.0"
STRATEGIES = ("all", "leaves", "middle")
MINICLUSTER_TEMPLATE = "minicluster.yaml.j2"
ENTRYPOINT_TEMPLATE = "entrypoint.sh.j2"

# Event names are the seed's, so old and new data line up in one table.
_EVENTS = {
    "all": ("create-archive", "delete-archive-all-nodes", "clean-all-nodes"),
    "leaves": ("create-leaf-nodes", "delete-archive-leaf-nodes", "clean-leaf-nodes"),
    "middle": ("create-middle-nodes", "delete-archive-middle-nodes", "clean-middle-nodes"),
}


@dataclass(frozen=True)
class RenderOptions:
    """Everything about a cell's rendering that is not the cell's identity."""

    name: str = "flux-sample"
    namespace: str = "default"
    image: str = DEFAULT_IMAGE
    pull_always: bool = False
    verify: bool = True
    purge_target_size: int | None = None
    scratch: str = "/tmp/kary"
    extract_dir: str = "/tmp/kary-extract"
    sleep_seconds: int = 0
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Rendered:
    minicluster_yaml: str
    entrypoint_sh: str
    template_hash: str

    def write(self, out_dir: Path) -> list[Path]:
        from experiments.files import write_atomic

        paths = [out_dir / "minicluster.yaml", out_dir / "entrypoint.sh"]
        write_atomic(paths[0], self.minicluster_yaml)
        write_atomic(paths[1], self.entrypoint_sh)
        paths[1].chmod(0o755)
        return paths


def _environment(template_dir: Path) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def template_hash(template_dir: Path | None = None) -> str:
    """sha256 over both templates: which benchmark produced a raw cell."""
    folder = template_dir or resource_dir("templates")
    digest = hashlib.sha256()
    for name in (MINICLUSTER_TEMPLATE, ENTRYPOINT_TEMPLATE):
        digest.update(name.encode() + b"\0" + (folder / name).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def strategy_waves(tree: Tree, strategy: str) -> list[tuple[str, str]]:
    """(event, target idset) per distribution wave of one strategy.

    `leaves` is the deepest level and `middle` the level halfway down, as in the
    seed's experiments; `all` is every rank but 0.
    """
    levels = tree.levels()
    leaves = compress_idset(levels[tree.depth])
    if strategy == "all":
        return [("distribute-all-nodes", "all")]
    if strategy == "leaves":
        return [("distribute-leaf-nodes", leaves)]
    if strategy == "middle":
        if tree.depth < 2:
            raise UserError(
                f"strategy middle needs a tree at least 2 levels deep; "
                f"{tree.topology} on {tree.size} nodes has depth {tree.depth}"
            )
        middle = compress_idset(levels[tree.depth // 2])
        return [("distribute-middle-nodes-0", middle), ("distribute-middle-nodes-1", leaves)]
    raise UserError(f"unknown strategy {strategy!r}: choose from {', '.join(STRATEGIES)}")


def _strategy_context(tree: Tree, strategy: str) -> dict[str, Any]:
    waves = strategy_waves(tree, strategy)  # refuses an unknown strategy
    create, delete, clean = _EVENTS[strategy]
    return {
        "strategy": strategy,
        "archive": f"kary-{strategy}",
        "create_event": create,
        "delete_event": delete,
        "clean_event": clean,
        "waves": [{"event": event, "targets": targets} for event, targets in waves],
    }


def render_cell(
    nodes: int,
    topo: str,
    sizes: list[int],
    strategies: list[str],
    cell_id: str,
    options: RenderOptions | None = None,
    template_dir: Path | None = None,
) -> Rendered:
    """Render the MiniCluster and the benchmark entrypoint for one cell."""
    options = options or RenderOptions()
    if nodes < 2:
        raise UserError(f"a distribution needs at least 2 nodes, got {nodes}")
    if not sizes:
        raise UserError("no sizes to run")
    dns1123_name(options.name)
    dns1123_name(options.namespace, "--namespace")
    image_ref(options.image)
    for path in (options.scratch, options.extract_dir):
        safe_path(path, "scratch path")
    for value in options.labels.values():
        label_value(value)
    tree = build_tree(topo, nodes)
    folder = template_dir or resource_dir("templates")
    env = _environment(folder)
    context = {
        "kary_version": __version__,
        "cell_id": cell_id,
        "nodes": nodes,
        "topo": str(tree.topology),
        "sizes": [{"label": format_size(s), "bytes": s} for s in sizes],
        "strategies": [_strategy_context(tree, s) for s in strategies],
        "verify": options.verify,
        "purge_target_size": options.purge_target_size,
        "scratch": options.scratch,
        "extract_dir": options.extract_dir,
        "sleep_seconds": options.sleep_seconds,
    }
    try:
        entrypoint = env.get_template(ENTRYPOINT_TEMPLATE).render(context)
        entrypoint_path = f"{options.scratch}-entrypoint/entrypoint.sh"
        minicluster = env.get_template(MINICLUSTER_TEMPLATE).render(
            name=options.name,
            namespace=options.namespace,
            labels={"app.kubernetes.io/managed-by": "kary", **options.labels},
            nodes=nodes,
            topo=str(tree.topology),
            image=options.image,
            pull_always=options.pull_always,
            entrypoint=entrypoint,
            entrypoint_dir=str(Path(entrypoint_path).parent),
            entrypoint_path=entrypoint_path,
        )
    except jinja2.TemplateNotFound as err:
        raise UserError(f"template {err.name} not found in {folder}") from None
    except jinja2.UndefinedError as err:
        raise UserError(f"template in {folder} uses an undefined variable: {err.message}") from None
    return Rendered(minicluster, entrypoint, template_hash(folder))
