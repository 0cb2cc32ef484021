"""The box's pure parts: names, addresses, the broker config, the tc lines."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib

from experiments.box.launch import box_spec
from experiments.box.layout import BoxLayout, new_run_id, owner_of
from experiments.box.shaping import qdisc_commands
from experiments.errors import UserError
from experiments.model.links import link_settings


def test_the_broker_config_lists_every_rank_on_its_own_address() -> None:
    layout = BoxLayout("4242-abcdef", 3, "kary:2", host_prefix="flux-sample")
    config = tomllib.loads(layout.broker_config("/tmp/kary-box-4242-abcdef/curve.cert"))
    assert config["tbon"] == {"topo": "kary:2"}
    assert config["bootstrap"]["curve_cert"] == "/tmp/kary-box-4242-abcdef/curve.cert"
    assert config["bootstrap"]["hosts"] == [
        {
            "host": f"flux-sample-{rank}",
            "bind": f"tcp://198.18.0.{rank + 1}:8050",
            "connect": f"tcp://198.18.0.{rank + 1}:8050",
        }
        for rank in range(3)
    ]


def test_addresses_stay_in_the_benchmarking_range_past_255_ranks() -> None:
    layout = BoxLayout("1-000000", 600, "kary:16")
    assert layout.address(0) == "198.18.0.1"
    assert layout.address(254) == "198.18.0.255"
    assert layout.address(255) == "198.18.1.0"
    assert layout.address(599) == "198.18.2.88"
    assert len({layout.address(r) for r in range(600)}) == 600


def test_names_carry_the_owner_and_only_box_names_have_one() -> None:
    run_id = new_run_id(pid=31337)
    layout = BoxLayout(run_id, 2, "kary:1")
    assert layout.name == f"kary-box-{run_id}"
    assert owner_of(layout.name) == 31337
    assert owner_of(layout.name + "/broker.toml") == 31337
    for other in ("kary-flux-abc", "kary-box-12", "kary-box-12-zzzzzz", "box-1-abcdef", "tmp"):
        assert owner_of(other) is None
    with pytest.raises(ValueError, match="invalid box run id"):
        BoxLayout("../../etc", 2, "kary:1")


def test_fifo_links_are_shaped_with_tbf_and_netem_as_tc_takes_them() -> None:
    links = link_settings("200Mbit", None, "1Gbit", queue="fifo")
    assert links.bandwidth_of(1) == 25e6
    assert links.bandwidth_of(0) == 125e6
    # 200 Mbit/s: a 4 ms bucket is 100 kB, above the 64 KiB floor.
    assert qdisc_commands("eth0", links.bandwidth_of(1), None, links.queue) == [
        "qdisc add dev eth0 root tbf rate 200000000bit burst 100000 latency 50ms"
    ]
    assert qdisc_commands("h3", 1.25e6, 0.0005, "fifo") == [
        "qdisc add dev h3 root handle 1: netem delay 500us",
        "qdisc add dev h3 parent 1:1 handle 10: tbf rate 10000000bit burst 65536 latency 50ms",
    ]
    assert qdisc_commands("eth0", None, None) == []
    assert links.record()["queue"] == "fifo" and "tbf" in links.record()["shaping"]


def test_a_fair_link_gives_each_peer_a_class_and_fifo_of_its_own_under_the_link_rate() -> None:
    links = link_settings("100Mbit", None)
    assert links.queue == "fair" and links.record()["queue"] == "fair"
    peers = [f"198.18.0.{n}" for n in (1, 2, 3)]
    lines = qdisc_commands("eth0", links.bandwidth, None, links.queue, peers)
    assert lines[:2] == [
        "qdisc add dev eth0 root handle 10: htb default 2",
        "class add dev eth0 parent 10: classid 10:1 htb rate 100000000bit ceil 100000000bit "
        "burst 65536 cburst 65536",
    ]
    # Four leaves (three peers, the default): each a quarter guaranteed, the whole link
    # as its ceiling, its own FIFO: two GSO segments (fq_codel's 5 ms at 100 Mbit/s is less).
    leaves = [line for line in lines if line.startswith("class") and "parent 10:1 " in line]
    assert len(leaves) == 4
    assert all("rate 25000000bit ceil 100000000bit" in line for line in leaves)
    fifos = [line for line in lines if "bfifo" in line]
    assert len(fifos) == 4 and all(line.endswith("bfifo limit 132000") for line in fifos)
    # At 10 Gbit/s, 5 ms of the link.
    assert qdisc_commands("eth0", 1.25e9, None, "fair", peers)[3].endswith("limit 6250000")
    # rank 1's address 198.18.0.2: destination (offset 16) low 6 bits 2, its own class.
    assert (
        "filter add dev eth0 parent 10: protocol ip prio 1 u32 match u32 0x00000002 "
        "0x0000003f at 16 flowid 10:12"
    ) in lines
    delayed = qdisc_commands("eth0", links.bandwidth, 0.001, "fair", peers)
    assert delayed[0] == "qdisc add dev eth0 root handle 1: netem delay 1000us"
    assert delayed[1] == "qdisc add dev eth0 parent 1:1 handle 10: htb default 2"


def test_a_fair_link_past_64_peers_shares_its_64_classes() -> None:
    peers = [f"198.18.{n >> 8}.{n & 0xFF}" for n in range(1, 201)]
    lines = qdisc_commands("eth0", 12.5e6, None, "fair", peers)
    assert sum(line.startswith("filter") for line in lines) == 64
    with pytest.raises(UserError, match="--link-queue takes fair or fifo"):
        link_settings("100Mbit", None, queue="fq")
    with pytest.raises(UserError, match="invalid bandwidth"):
        link_settings("fast", None)


def test_a_two_level_network_groups_consecutive_ranks_behind_shaped_uplinks(
    tmp_path: Path,
) -> None:
    links = link_settings("200Mbit", None, None, 3, "50Mbit")
    assert [links.group_of(r) for r in range(7)] == [0, 0, 0, 1, 1, 1, 2]
    spec = box_spec(
        BoxLayout("1-abcdef", 7, "kary:2", "flux-sample"),
        links,
        tmp_path,
        "flux",
        tmp_path / "broker.toml",
        tmp_path / "entrypoint.sh",
        {},
    )
    assert spec.groups == [0, 0, 0, 1, 1, 1, 2]
    # A node's side is its host's queue, fair by whom it sends to; a switch port (the
    # switch's side of a link, a group's uplink) one FIFO.
    assert spec.trunk_qdiscs == qdisc_commands("DEV", 50e6 / 8, None, "fifo")
    assert " at 16 " in spec.node_qdiscs[4][-1]
    assert spec.switch_qdiscs[4] == qdisc_commands("DEV", 25e6, None, "fifo")
    assert links.record()["group_bandwidth_bytes_per_s"] == 50e6 / 8
    one_switch = link_settings("200Mbit", None)
    assert one_switch.group_of(5) is None and "group_size" not in one_switch.record()
