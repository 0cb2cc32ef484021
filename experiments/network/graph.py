"""Pictures of the switch tree: a self-contained interactive HTML page, a PNG, and a table.

The HTML page is one file with inline SVG and a few lines of inline JavaScript:
it loads nothing from the network, so it opens offline and can be mailed or
archived with the data. (pyvis, even with cdn_resources="in_line", still links
Bootstrap from a CDN, and d3graph adds a remote script by default; a page this
small is simpler to own than to patch.)

Layout, shared by both pictures: layers run left to right (layer 1, layer 2,
layer 3, instances), instances one per row grouped under their switches, and
each switch sits level with the middle of what is under it.
"""

from __future__ import annotations

import csv
import html
import io
from dataclasses import dataclass
from pathlib import Path

from experiments.files import write_atomic
from experiments.network.model import Fabric, Instance, build_fabric

__all__ = [
    "GraphFiles",
    "LayoutNode",
    "layout_fabric",
    "render_html",
    "render_png",
    "switch_table",
    "switch_table_csv",
    "write_graph",
]

# Layer 1, 2, 3 (and deeper, if EC2 ever adds layers), then instances and the unplaced.
_LAYER_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#8c564b"]
_INSTANCE_COLOUR = "#9467bd"
_UNPLACED_COLOUR = "#7f7f7f"


@dataclass(frozen=True)
class LayoutNode:
    """One drawn node: a switch (layer >= 1) or an instance (layer 0; unplaced if no topology)."""

    key: str
    label: str
    detail: str
    layer: int
    column: int
    row: float
    parent: str | None
    colour: str


def _colour(layer: int) -> str:
    return _LAYER_COLOURS[(layer - 1) % len(_LAYER_COLOURS)]


def layout_fabric(fabric: Fabric, names: dict[str, str] | None = None) -> list[LayoutNode]:
    """Place every switch and instance: column = layer (instances last), row = leaf order."""
    names = names or {}
    by_id = {i.instance_id: i for i in fabric.instances}
    depth = fabric.depth
    nodes: list[LayoutNode] = []
    next_row = [0]

    def describe(inst: Instance) -> str:
        parts = [inst.instance_id, inst.instance_type, inst.group_name, inst.availability_zone]
        return " | ".join(p for p in parts if p)

    def place(switch_name: str) -> float:
        switch = fabric.switches[switch_name]
        rows = [place(child) for child in switch.switches]
        for instance_id in switch.instances:
            inst = by_id[instance_id]
            row = float(next_row[0])
            next_row[0] += 1
            nodes.append(
                LayoutNode(
                    key=instance_id,
                    label=names.get(instance_id, instance_id),
                    detail=describe(inst),
                    layer=0,
                    column=depth,
                    row=row,
                    parent=switch_name,
                    colour=_INSTANCE_COLOUR,
                )
            )
            rows.append(row)
        row = sum(rows) / len(rows)
        nodes.append(
            LayoutNode(
                key=switch_name,
                label=switch_name,
                detail=f"layer {switch.layer}: {len(switch.below)} instances below",
                layer=switch.layer,
                column=switch.layer - 1,
                row=row,
                parent=switch.parent,
                colour=_colour(switch.layer),
            )
        )
        return row

    for root in fabric.roots:
        place(root)
    leaves = next_row[0]
    for offset, inst in enumerate(fabric.without_topology):
        nodes.append(
            LayoutNode(
                key=inst.instance_id,
                label=names.get(inst.instance_id, inst.instance_id),
                detail=describe(inst) + " | no network topology",
                layer=0,
                column=depth,
                row=float(leaves + 1 + offset),
                parent=None,
                colour=_UNPLACED_COLOUR,
            )
        )
    return nodes


def _legend(fabric: Fabric) -> list[tuple[str, str]]:
    items = [(f"layer {n}", _colour(n)) for n in range(1, fabric.depth + 1)]
    items.append(("instance", _INSTANCE_COLOUR))
    if fabric.without_topology:
        items.append(("no topology", _UNPLACED_COLOUR))
    return items


def switch_table(fabric: Fabric) -> list[dict[str, str | int]]:
    """One row per switch, by layer then name: how many instances are below it."""
    rows: list[dict[str, str | int]] = []
    for layer in range(1, fabric.depth + 1):
        for switch in sorted(fabric.layer(layer), key=lambda s: s.name):
            rows.append(
                {
                    "layer": layer,
                    "switch": switch.name,
                    "parent": switch.parent or "",
                    "switches": len(switch.switches),
                    "instances": len(switch.below),
                }
            )
    return rows


def switch_table_csv(fabric: Fabric) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(
        out, fieldnames=["layer", "switch", "parent", "switches", "instances"], lineterminator="\n"
    )
    writer.writeheader()
    writer.writerows(switch_table(fabric))
    return out.getvalue()


_X_STEP, _Y_STEP, _MARGIN = 230, 22, 20

_SCRIPT = """
(function () {
  var svg = document.getElementById('fabric');
  var nodes = Array.prototype.slice.call(svg.querySelectorAll('g.node'));
  var edges = Array.prototype.slice.call(svg.querySelectorAll('path.edge'));
  var parentOf = {}, kids = {};
  nodes.forEach(function (n) {
    var p = n.getAttribute('data-parent');
    parentOf[n.id] = p;
    if (p) { (kids[p] = kids[p] || []).push(n.id); }
  });
  function mark(keep) {
    nodes.forEach(function (n) { n.classList.toggle('dim', keep !== null && !keep[n.id]); });
    edges.forEach(function (e) {
      var from = e.getAttribute('data-from'), to = e.getAttribute('data-to');
      var on = keep === null || (keep[from] && keep[to]);
      e.classList.toggle('dim', !on);
    });
  }
  function family(id) {
    var keep = {}, p = id, stack = [id];
    while (p) { keep[p] = true; p = parentOf[p]; }
    while (stack.length) {
      var c = stack.pop();
      keep[c] = true;
      (kids[c] || []).forEach(function (k) { stack.push(k); });
    }
    return keep;
  }
  nodes.forEach(function (n) {
    n.addEventListener('click', function (ev) { ev.stopPropagation(); mark(family(n.id)); });
  });
  svg.addEventListener('click', function () { mark(null); });
  document.getElementById('find').addEventListener('input', function (ev) {
    var text = ev.target.value.trim().toLowerCase();
    if (!text) { mark(null); return; }
    var keep = {};
    nodes.forEach(function (n) {
      if (n.textContent.toLowerCase().indexOf(text) >= 0) {
        var p = n.id;
        while (p) { keep[p] = true; p = parentOf[p]; }
      }
    });
    mark(keep);
  });
  var box = svg.viewBox.baseVal, drag = null;
  svg.addEventListener('wheel', function (ev) {
    ev.preventDefault();
    var k = ev.deltaY > 0 ? 1.15 : 1 / 1.15, r = svg.getBoundingClientRect();
    var mx = box.x + (ev.clientX - r.left) / r.width * box.width;
    var my = box.y + (ev.clientY - r.top) / r.height * box.height;
    box.x = mx - (mx - box.x) * k; box.y = my - (my - box.y) * k;
    box.width *= k; box.height *= k;
  }, { passive: false });
  svg.addEventListener('mousedown', function (ev) { drag = [ev.clientX, ev.clientY]; });
  window.addEventListener('mouseup', function () { drag = null; });
  window.addEventListener('mousemove', function (ev) {
    if (!drag) { return; }
    var r = svg.getBoundingClientRect();
    box.x -= (ev.clientX - drag[0]) * box.width / r.width;
    box.y -= (ev.clientY - drag[1]) * box.height / r.height;
    drag = [ev.clientX, ev.clientY];
  });
})();
"""

_STYLE = """
body { font-family: sans-serif; margin: 1em; }
svg { border: 1px solid #ccc; width: 100%; height: 75vh; cursor: grab; background: #fff; }
g.node { cursor: pointer; }
g.node text { font-size: 12px; dominant-baseline: middle;
              paint-order: stroke; stroke: #fff; stroke-width: 4px; stroke-linejoin: round; }
path.edge { fill: none; stroke: #999; stroke-width: 1.2; }
.dim { opacity: 0.15; }
table { border-collapse: collapse; margin-top: 1em; font-size: 13px; }
td, th { border: 1px solid #ccc; padding: 2px 8px; text-align: left; }
td.n { text-align: right; }
.legend span { display: inline-block; margin-right: 1.2em; }
.legend i { display: inline-block; width: 0.9em; height: 0.9em; border-radius: 50%;
            margin-right: 0.3em; vertical-align: middle; }
"""


def render_html(fabric: Fabric, names: dict[str, str] | None = None, title: str = "") -> str:
    """One self-contained page: legend, search box, zoomable SVG tree and the switch table."""
    nodes = layout_fabric(fabric, names)
    where = {n.key: n for n in nodes}

    def xy(node: LayoutNode) -> tuple[float, float]:
        return _MARGIN + node.column * _X_STEP, _MARGIN + node.row * _Y_STEP

    width = _MARGIN * 2 + fabric.depth * _X_STEP + 200
    height = _MARGIN * 2 + (max((n.row for n in nodes), default=0) + 1) * _Y_STEP
    svg: list[str] = []
    for node in nodes:
        if node.parent is None:
            continue
        (x1, y1), (x2, y2) = xy(where[node.parent]), xy(node)
        mid = (x1 + x2) / 2
        svg.append(
            f'<path class="edge" data-from="{html.escape(node.parent)}" '
            f'data-to="{html.escape(node.key)}" '
            f'd="M{x1:.1f},{y1:.1f} C{mid:.1f},{y1:.1f} {mid:.1f},{y2:.1f} {x2:.1f},{y2:.1f}"/>'
        )
    for node in nodes:
        x, y = xy(node)
        parent = f' data-parent="{html.escape(node.parent)}"' if node.parent else ""
        svg.append(
            f'<g class="node" id="{html.escape(node.key)}"{parent}>'
            f"<title>{html.escape(node.detail)}</title>"
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="{node.colour}"/>'
            f'<text x="{x + 9:.1f}" y="{y:.1f}">{html.escape(node.label)}</text></g>'
        )
    legend = "".join(
        f'<span><i style="background:{colour}"></i>{html.escape(text)}</span>'
        for text, colour in _legend(fabric)
    )
    table = "".join(
        "<tr>"
        + "".join(
            f'<td class="n">{v}</td>' if isinstance(v, int) else f"<td>{html.escape(v)}</td>"
            for v in row.values()
        )
        + "</tr>"
        for row in switch_table(fabric)
    )
    unplaced = fabric.without_topology
    note = (
        f"<p>{len(unplaced)} instance(s) without network topology (grey): "
        + html.escape(", ".join(f"{i.instance_id} ({i.instance_type})" for i in unplaced))
        + "</p>"
        if unplaced
        else ""
    )
    heading = html.escape(title or "EC2 instance topology")
    summary = (
        f"{len(fabric.instances)} instances, {len(fabric.switches)} network nodes, "
        f"{fabric.depth} layers"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{heading}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        f"<h1>{heading}</h1>\n<p>{summary}. Click a node to show its path and what is "
        "below it; click the background to clear; scroll to zoom, drag to pan.</p>\n"
        f'<p class="legend">{legend} <input id="find" placeholder="find instance or switch"></p>\n'
        f'<svg id="fabric" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'data-nodes="{len(nodes)}">\n'
        + "\n".join(svg)
        + "\n</svg>\n"
        + note
        + "\n<table>\n<tr><th>layer</th><th>switch</th><th>parent</th><th>switches</th>"
        "<th>instances</th></tr>\n"
        + table
        + "\n</table>\n"
        + f"<script>{_SCRIPT}</script>\n</body>\n</html>\n"
    )


def render_png(fabric: Fabric, names: dict[str, str] | None = None, title: str = "") -> bytes:
    """The same layout drawn with matplotlib (no display needed); labels up to 150 rows."""
    from matplotlib import patheffects
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    nodes = layout_fabric(fabric, names)
    where = {n.key: n for n in nodes}
    rows = max((n.row for n in nodes), default=0) + 1
    labelled = rows <= 150
    fig = Figure(figsize=(3 + 2.6 * (fabric.depth + 1), min(60.0, max(4.0, 0.25 * rows))))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for node in nodes:
        if node.parent is not None:
            parent = where[node.parent]
            ax.plot(
                [parent.column, node.column], [parent.row, node.row], color="#999", lw=0.8, zorder=1
            )
    for text, colour in _legend(fabric):
        group = [n for n in nodes if n.colour == colour]
        ax.scatter(
            [n.column for n in group], [n.row for n in group], s=40, c=colour, label=text, zorder=2
        )
    if labelled:
        halo = [patheffects.withStroke(linewidth=3, foreground="white")]
        for node in nodes:
            ax.annotate(
                node.label,
                (node.column, node.row),
                xytext=(6, 0),
                textcoords="offset points",
                va="center",
                fontsize=7,
                path_effects=halo,
                zorder=3,
            )
    ax.invert_yaxis()
    ax.set_xlim(-0.3, fabric.depth + 1.2)
    ax.set_xticks(range(fabric.depth + 1))
    ax.set_xticklabels([f"layer {n}" for n in range(1, fabric.depth + 1)] + ["instances"])
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False, fontsize=8)
    ax.set_title(title or "EC2 instance topology")
    fig.tight_layout()
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=100, metadata={"Software": None})
    return out.getvalue()


@dataclass(frozen=True)
class GraphFiles:
    html: Path
    png: Path
    table: Path


def write_graph(
    instances: list[Instance], out_dir: Path, names: dict[str, str] | None = None, title: str = ""
) -> GraphFiles:
    """Write topology.html, topology.png and switches.csv into `out_dir`."""
    fabric = build_fabric(instances)
    out_dir = Path(out_dir)
    files = GraphFiles(
        html=out_dir / "topology.html",
        png=out_dir / "topology.png",
        table=out_dir / "switches.csv",
    )
    write_atomic(files.html, render_html(fabric, names, title))
    write_atomic(files.png, render_png(fabric, names, title))
    write_atomic(files.table, switch_table_csv(fabric))
    return files
