"""Reading describe-instance-topology JSON, the switch tree, hostlists and node-name MAPs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.errors import UserError
from experiments.network.hostlist import compress_hostlist, expand_hostlist
from experiments.network.model import (
    Instance,
    build_fabric,
    load_instances,
    parse_instances,
    shared_layers,
)
from experiments.network.names import load_node_names, name_instances, parse_node_names


def test_example_reads_with_unplaced_instances_kept(example: Path) -> None:
    instances = load_instances(example)
    assert len(instances) == 18
    unplaced = [i for i in instances if not i.network_nodes]
    # One has "NetworkNodes": [], the other has no NetworkNodes key at all.
    assert [i.instance_type for i in unplaced] == ["m6i.xlarge", "m6i.xlarge"]
    fabric = build_fabric(instances)
    assert fabric.depth == 3
    assert [len(fabric.layer(n)) for n in (1, 2, 3)] == [1, 2, 5]
    assert sorted(len(s.instances) for s in fabric.layer(3)) == [2, 2, 4, 4, 4]
    assert fabric.without_topology == unplaced


def test_parse_accepts_null_missing_and_bare_lists() -> None:
    data = [
        {"InstanceId": "i-1", "NetworkNodes": None},
        {"InstanceId": "i-2"},
        {"InstanceId": "i-3", "NetworkNodes": ["a", "b", "c"]},
        {"InstanceId": "i-3", "NetworkNodes": ["x"]},
    ]
    instances = parse_instances(data)
    assert [i.instance_id for i in instances] == ["i-1", "i-2", "i-3"]
    assert instances[2].closest == "c" and instances[0].closest is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"Reservations": []}, "expected the JSON of `aws ec2 describe-instance-topology`"),
        ({"Instances": [{"NetworkNodes": []}]}, "Instances[0]: InstanceId is missing"),
        ({"Instances": [{"InstanceId": "i-1", "NetworkNodes": "nn"}]}, "NetworkNodes must be"),
        ({"Instances": ["i-1"]}, "Instances[0]: expected an object"),
    ],
)
def test_parse_refuses_other_shapes(data: object, message: str) -> None:
    with pytest.raises(UserError) as err:
        parse_instances(data, source="t.json")
    assert str(err.value).startswith("t.json: ")
    assert message in str(err.value)


def test_load_reports_unreadable_and_invalid_files(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="^cannot read .*missing.json"):
        load_instances(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(UserError, match=r"bad.json: not JSON \(.* at line 1\)"):
        load_instances(bad)


def test_fabric_refuses_a_node_with_two_parents() -> None:
    instances = [Instance("i-1", ("a", "b", "c")), Instance("i-2", ("z", "b", "d"))]
    with pytest.raises(UserError, match="network node b of i-2 sits at layer 2 under z"):
        build_fabric(instances)


def test_shared_layers_counts_from_the_top() -> None:
    assert shared_layers(("a", "b", "c"), ("a", "b", "c")) == 3
    assert shared_layers(("a", "b", "c"), ("a", "b", "d")) == 2
    assert shared_layers(("a", "b", "c"), ("z", "b", "c")) == 0
    assert shared_layers((), ("a",)) == 0


@pytest.mark.parametrize(
    ("names", "text"),
    [
        ([f"node{n}" for n in (3, 1, 2, 8, 7, 10)], "node[1-3,7-8,10]"),
        (["node09", "node10", "node11", "node01"], "node[01,09-11]"),
        (["gpu5", "login", "node1", "node1"], "gpu5,login,node1"),
        (["i-0abc1", "i-0abc2", "i-0f"], "i-0abc[1-2],i-0f"),
        (["r1n1", "r1n2", "r2n1"], "r1n[1-2],r2n1"),
        ([], ""),
    ],
)
def test_compress_hostlist(names: list[str], text: str) -> None:
    assert compress_hostlist(names) == text
    assert sorted(expand_hostlist(text)) == sorted(set(names))


def test_expand_hostlist_keeps_order_and_padding() -> None:
    assert expand_hostlist("b[3-4] a1\nnode[08-10],x") == [
        "b3", "b4", "a1", "node08", "node09", "node10", "x"
    ]  # fmt: skip
    assert expand_hostlist("n[1-2]-ib") == ["n1-ib", "n2-ib"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("node[1-3", "unbalanced '['"),
        ("node1-3]", "unbalanced ']'"),
        ("node[3-1]", "runs backwards"),
        ("node[a-b]", "bad range 'a-b'"),
        ("n[1]x[2]", "one [...] range per name"),
    ],
)
def test_expand_hostlist_errors(text: str, message: str) -> None:
    with pytest.raises(UserError, match=message.replace("[", r"\[").replace("]", r"\]")):
        expand_hostlist(text)


def test_node_names_from_columns_json_and_kubectl(node_names_file: Path) -> None:
    names = load_node_names(node_names_file)
    assert names["i-0468c6414ce9da201"] == "hpc7g-01"
    assert names["i-02f3a9f889eeaf77e"] == "login2"
    assert parse_node_names('{"i-1": "n1", "i-2": "n2"}') == {"i-1": "n1", "i-2": "n2"}
    kubectl = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "metadata": {"name": "ip-10-0-1-5.ec2.internal"},
                "spec": {"providerID": "aws:///us-east-1a/i-0123456789abcdef0"},
            }
        ],
    }
    assert parse_node_names(json.dumps(kubectl)) == {
        "i-0123456789abcdef0": "ip-10-0-1-5.ec2.internal"
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("i-1 n1 extra\n", "names:1: expected INSTANCE-ID NODE-NAME"),
        ("# nothing\n", "names: names no instance"),
        ('{"i-1": 3}', "names: expected"),
        (
            '{"items": [{"metadata": {"name": "n"}, "spec": {}}]}',
            "node n has no AWS spec.providerID",
        ),
        ("i-1 n1\ni-2 n1\n", "node name n1 is given to i-1 and i-2"),
        ("{oops", "names: not JSON"),
    ],
)
def test_node_names_errors(text: str, message: str) -> None:
    with pytest.raises(UserError) as err:
        parse_node_names(text, source="names")
    assert message in str(err.value)


def test_a_map_selects_and_names() -> None:
    instances = [Instance("i-1"), Instance("i-2"), Instance("i-3")]
    named = name_instances(instances, {"i-3": "c", "i-1": "a"})
    assert [named.name(i) for i in named.instances] == ["a", "c"]
    assert named.left_out == [instances[1]]
    everyone = name_instances(instances, None)
    assert [everyone.name(i) for i in everyone.instances] == ["i-1", "i-2", "i-3"]
