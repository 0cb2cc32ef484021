"""The switch-tree pictures and table."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from headless_chromium import chromium, page_requests

from experiments.network.graph import layout_fabric, render_html, switch_table, write_graph
from experiments.network.model import build_fabric, load_instances


def test_layout_puts_switches_beside_the_middle_of_their_instances(example: Path) -> None:
    fabric = build_fabric(load_instances(example))
    nodes = {n.key: n for n in layout_fabric(fabric)}
    leaf = fabric.switches["nn-b656a4d2bad821df9"]
    rows = [nodes[i].row for i in leaf.instances]
    assert rows == [0.0, 1.0, 2.0, 3.0]
    assert nodes[leaf.name].row == 1.5 and nodes[leaf.name].column == 2
    # Instances without topology sit below the rest, one empty row apart, with no parent.
    assert [
        (nodes[i.instance_id].row, nodes[i.instance_id].parent) for i in fabric.without_topology
    ] == [
        (17.0, None),
        (18.0, None),
    ]


def test_html_is_self_contained_and_shows_every_node(example: Path) -> None:
    instances = load_instances(example)
    fabric = build_fabric(instances)
    page = render_html(fabric, title="hpc7g <cluster>")
    assert "http" not in page  # nothing is loaded from anywhere
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", page)
    assert "<title>hpc7g &lt;cluster&gt;</title>" in page
    assert page.count('<g class="node"') == len(instances) + len(fabric.switches)
    assert page.count('<path class="edge"') == 16 + 8 - 1
    assert "2 instance(s) without network topology (grey)" in page


def test_write_graph_writes_html_png_and_table(example: Path, tmp_path: Path) -> None:
    files = write_graph(load_instances(example), tmp_path / "out")
    assert files.png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert files.html.read_text().startswith("<!DOCTYPE html>")
    with files.table.open() as handle:
        rows = list(csv.DictReader(handle))
    fabric = build_fabric(load_instances(example))
    assert rows == [{k: str(v) for k, v in row.items()} for row in switch_table(fabric)]
    assert rows[0] == {
        "layer": "1",
        "switch": "nn-a84bba07931db9253",
        "parent": "",
        "switches": "2",
        "instances": "16",
    }


def test_clicking_a_switch_dims_everything_off_its_path_in_a_browser(
    example: Path, tmp_path: Path
) -> None:
    """Runs the page's own script in headless Chromium; the page asks for nothing."""
    page = render_html(build_fabric(load_instances(example)))
    click = (
        '<script>document.getElementById("nn-06a0799dc6ebd718b")'
        '.dispatchEvent(new MouseEvent("click", {bubbles: true}));</script></body>'
    )
    html_file = tmp_path / "click.html"
    html_file.write_text(page.replace("</body>", click))
    with chromium(tmp_path) as browser:
        result = browser.run(html_file.as_uri(), "--dump-dom")
    assert page_requests(browser.requests) == []
    # Kept: the layer-1 node, the clicked layer-2 node, its 3 switches and 10 instances.
    assert result.stdout.count('class="node dim"') == 26 - 15
    assert result.stdout.count('class="node"') == 15
