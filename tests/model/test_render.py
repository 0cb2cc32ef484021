"""Rendering: every entrypoint is valid bash, every MiniCluster valid against the CRD."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml
from strict_schema import crd_schema, validate_strictly

from experiments.errors import UserError
from experiments.formats.cell_layout import NO_KNOBS, Knobs
from experiments.model.render import RenderOptions, render_cell, strategy_waves, template_hash
from experiments.model.topology import build_tree
from experiments.resources import resource_dir

MIB = 2**20
CASES = [
    (2, "kary:1", ["all"]),
    (6, "kary:2", ["all", "leaves", "middle"]),
    (30, "kary:16", ["all"]),
    (16, "binomial", ["leaves", "middle"]),
    (40, "mincrit:3", ["all", "middle"]),
    (9, "kary:0", ["all", "leaves"]),
]


@pytest.mark.parametrize(("nodes", "topo", "strategies"), CASES)
@pytest.mark.parametrize("verify", [True, False])
def test_every_rendered_entrypoint_passes_bash_n(
    tmp_path: Path, nodes: int, topo: str, strategies: list[str], verify: bool
) -> None:
    knobs = (
        Knobs(chunksize=256 * 2**10, mmap=True, purge_target_size=16 * MIB) if verify else NO_KNOBS
    )
    options = RenderOptions(verify=verify)
    rendered = render_cell(nodes, topo, [16 * MIB, 2**30], strategies, "c", options, knobs=knobs)
    script = tmp_path / "entrypoint.sh"
    script.write_text(rendered.entrypoint_sh)
    subprocess.run(["bash", "-n", str(script)], check=True)
    assert ("kary_verify" in rendered.entrypoint_sh.split('echo "MODULE STATS')[1]) is verify


@pytest.mark.parametrize(("nodes", "topo", "strategies"), CASES)
def test_rendered_minicluster_validates_against_the_operator_crd(
    minicluster_crd: Path, nodes: int, topo: str, strategies: list[str]
) -> None:
    options = RenderOptions(labels={"kary/sweep": "s1", "kary/cell": "6.kary-2.0"})
    rendered = render_cell(nodes, topo, [MIB], strategies, "c", options)
    document = yaml.safe_load(rendered.minicluster_yaml)
    validate_strictly(document, crd_schema(minicluster_crd))
    assert document["apiVersion"] == "flux-framework.org/v1alpha2"
    assert document["spec"]["size"] == nodes
    assert document["spec"]["flux"]["topology"] == topo
    assert document["spec"]["logging"]["quiet"] is True
    assert document["metadata"]["labels"]["kary/cell"] == "6.kary-2.0"


def test_a_typo_in_a_field_fails_the_crd_check(minicluster_crd: Path) -> None:
    document = yaml.safe_load(render_cell(4, "kary:2", [MIB], ["all"], "c").minicluster_yaml)
    document["spec"]["size"] = "four"
    with pytest.raises(jsonschema.ValidationError):
        validate_strictly(document, crd_schema(minicluster_crd))


@pytest.mark.parametrize(
    ("where", "field"),
    [
        (("spec", "containers", 0), "comand"),  # a misspelt field
        (("spec",), "topology"),  # a real field, one level too high (it is spec.flux's)
        (("spec", "flux"), "sizes"),  # spec.size's name, in the wrong place
    ],
)
def test_an_unknown_or_misplaced_field_fails_as_strict_validation_would(
    minicluster_crd: Path, where: tuple[str | int, ...], field: str
) -> None:
    document = yaml.safe_load(render_cell(4, "kary:2", [MIB], ["all"], "c").minicluster_yaml)
    schema = crd_schema(minicluster_crd)
    jsonschema.validate(document, schema)
    node = document
    for key in where:
        node = node[key]
    node[field] = "x"
    jsonschema.validate(document, schema)  # the CRD's schema as it is lets it through
    path = ".".join(str(k) for k in where).replace(".0", "[0]") + f".{field}"
    with pytest.raises(jsonschema.ValidationError, match=re.escape(path)):
        validate_strictly(document, schema)


def test_the_minicluster_carries_the_exact_entrypoint() -> None:
    rendered = render_cell(6, "kary:2", [MIB, 3 * MIB], ["all", "middle"], "6/kary-2/0")
    container = yaml.safe_load(rendered.minicluster_yaml)["spec"]["containers"][0]
    pre = container["commands"]["pre"]
    heredoc = pre.split("<<'KARY_ENTRYPOINT_EOF'\n", 1)[1].rsplit("KARY_ENTRYPOINT_EOF", 1)[0]
    assert heredoc == rendered.entrypoint_sh
    assert container["command"] == "/bin/bash /tmp/kary-entrypoint/entrypoint.sh"
    assert container["launcher"] is True


def test_entrypoint_times_each_step_in_design_order() -> None:
    script = render_cell(6, "kary:2", [16 * MIB], ["all"], "c").entrypoint_sh
    steps = re.findall(r"^kary_step (\S+) (\S+) (\d+)", script, flags=re.M)
    assert steps == [
        ("create-archive", "16M", "16777216"),
        ("distribute-all-nodes", "16M", "16777216"),
        ("verify-distribute-all-nodes", "16M", "16777216"),
        ("delete-archive-all-nodes", "16M", "16777216"),
        ("clean-all-nodes", "16M", "16777216"),
    ]
    # The blob is made before the first timed step, from an incompressible source.
    assert script.index('kary_make_blob "$BLOB"') < script.index("kary_step create-archive")
    assert "/dev/zero 2>/dev/null | head" in script and "aes-128-ctr" in script
    assert "--waitcreate" in script


def test_strategies_target_the_seeds_levels() -> None:
    tree = build_tree("kary:2", 6)
    assert strategy_waves(tree, "all") == [("distribute-all-nodes", "all")]
    assert strategy_waves(tree, "leaves") == [("distribute-leaf-nodes", "3-5")]
    assert strategy_waves(tree, "middle") == [
        ("distribute-middle-nodes-0", "1-2"),
        ("distribute-middle-nodes-1", "3-5"),
    ]
    with pytest.raises(UserError, match="at least 2 levels"):
        strategy_waves(build_tree("kary:0", 6), "middle")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (RenderOptions(name="Bad_Name"), "invalid --name"),
        (RenderOptions(image="x; rm -rf /"), "invalid --image"),
        (RenderOptions(scratch="/tmp/$(id)"), "invalid scratch path"),
        (RenderOptions(labels={"kary/cell": "a/b"}), "invalid label"),
    ],
)
def test_unsafe_values_never_reach_a_template(options: RenderOptions, message: str) -> None:
    with pytest.raises(UserError, match=re.escape(message)):
        render_cell(4, "kary:2", [MIB], ["all"], "c", options)


def test_strict_undefined_fails_loudly(tmp_path: Path) -> None:
    for name in ("minicluster.yaml.j2", "entrypoint.sh.j2"):
        (tmp_path / name).write_text((resource_dir("templates") / name).read_text())
    (tmp_path / "entrypoint.sh.j2").write_text("echo {{ no_such_variable }}\n")
    with pytest.raises(UserError, match="undefined variable"):
        render_cell(4, "kary:2", [MIB], ["all"], "c", template_dir=tmp_path)


def test_a_template_edited_between_cells_is_rendered_as_edited(tmp_path: Path) -> None:
    """Compiled templates are kept per folder (template_environment); an edit to a
    --template file between two renders is still what the second one renders."""
    for name in ("minicluster.yaml.j2", "entrypoint.sh.j2"):
        (tmp_path / name).write_text((resource_dir("templates") / name).read_text())
    first = render_cell(4, "kary:2", [MIB], ["all"], "c", template_dir=tmp_path)
    assert "KARY-EDITED" not in first.entrypoint_sh
    edited = tmp_path / "entrypoint.sh.j2"
    edited.write_text(edited.read_text() + "echo KARY-EDITED\n")
    stamp = edited.stat().st_mtime + 1  # a new mtime even on a coarse-grained clock
    os.utime(edited, (stamp, stamp))
    second = render_cell(4, "kary:2", [MIB], ["all"], "c", template_dir=tmp_path)
    assert second.entrypoint_sh.endswith("echo KARY-EDITED\n")


def test_template_hash_changes_with_the_template(tmp_path: Path) -> None:
    for name in ("minicluster.yaml.j2", "entrypoint.sh.j2"):
        (tmp_path / name).write_text((resource_dir("templates") / name).read_text())
    before = template_hash(tmp_path)
    assert before == template_hash(resource_dir("templates"))
    (tmp_path / "entrypoint.sh.j2").write_text("# changed\n")
    assert template_hash(tmp_path) != before


def test_template_hash_changes_with_the_nested_driver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The driver decides a nested cell's journal mode, start bound and disk check: a cell
    # that ran another driver ran another benchmark (issue 42, item 4).
    own = resource_dir("templates")
    for name in ("minicluster.yaml.j2", "entrypoint.sh.j2", "nested_driver.sh.j2"):
        (tmp_path / name).write_text((own / name).read_text())
    before = template_hash()
    monkeypatch.setattr("experiments.model.render.resource_dir", lambda _: tmp_path)
    assert template_hash() == before
    (tmp_path / "nested_driver.sh.j2").write_text("# another journal mode\n")
    assert template_hash() != before


def test_kary_lines_in_the_template_are_json_once_expanded() -> None:
    script = render_cell(4, "kary:2", [MIB], ["all"], "4/kary-2/0").entrypoint_sh
    line = next(x for x in script.splitlines() if '\\"meta\\": \\"cell\\"' in x)
    payload = line.split('echo "KARY ', 1)[1].rsplit('"', 1)[0]
    expanded = re.sub(r"\$\([^)]*\)", "x", payload.replace('\\"', '"'))
    assert json.loads(expanded)["cell"] == "4/kary-2/0"
