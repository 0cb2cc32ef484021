"""`kary race` on Kubernetes with the nested layout: one MiniCluster for the whole race,
each next block fed to its driver through a ConfigMap (backends/kubernetes/feed.py).

Against the fake API server without Flux: the fake operator's driver frames its
scenario log per cell, the batches fed to it included (the driver's own feed loop
runs on real Flux, on pods in a box, in tests/flux/test_k8s_pods_in_box.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_apiserver import PINNED_VIEW, Scenario, _feed_mounted, _nested_cells
from fast_backend import RACE_LOG, fast_backend
from strict_schema import crd_schema, validate_strictly
from typer.testing import CliRunner

from experiments.cli import app
from experiments.formats.nested_bundle import FEED_KEY, read_feed
from experiments.formats.race_state import read_race


@pytest.fixture
def fast(apiserver: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    apiserver.cluster.scenario = Scenario(log=RACE_LOG)
    fast_backend(monkeypatch, teardown=True)


def _race(raw: Path, *more: str) -> Any:
    return CliRunner().invoke(
        app,
        ["race", "--backend", "kubernetes", "--flux-view", PINNED_VIEW, "--exact-nodes", "4",
         "--topo", "kary:1", "--topo", "kary:2", "--topo", "kary:3", "--sizes", "1M",
         "--first-test", "3", "--max-blocks", "3", "--seed", "3", "--data-dir", str(raw),
         "--yes", "--no-smoke", *more],
    )  # fmt: skip


def test_a_nested_race_runs_every_block_in_one_minicluster_fed_through_a_configmap(
    apiserver: Any, fast: None, tmp_path: Path, minicluster_crd: Path
) -> None:
    cluster = apiserver.cluster
    raw = tmp_path / "raw"
    result = _race(raw)
    assert result.exit_code in (0, 1), result.output
    kept = read_race(raw)
    assert kept is not None
    blocks = [b for b in kept.race["blocks"] if b["times"]]
    assert len(blocks) == 3, kept.race["blocks"]
    # One MiniCluster for the race; its first block baked in, the others fed.
    assert len(cluster.created) == 1, [b["metadata"]["name"] for b in cluster.created]
    body = cluster.created[0]
    feed = _feed_mounted(body)
    assert feed is not None and feed.endswith("-feed")
    assert len(_nested_cells(body)) == 3  # block 0's three topologies
    # The operator names the volume by configMapName and mounts it by its key.
    volume = body["spec"]["containers"][0]["volumes"][feed]
    assert volume["configMapName"] == feed and volume["items"] == {FEED_KEY: FEED_KEY}
    validate_strictly(body, crd_schema(minicluster_crd))
    # The feed was made before its MiniCluster, replaced once per later block, and
    # deleted with it at the race's end.
    made = [(m, p) for m, p, _ in cluster.requests if "configmaps" in p or "miniclusters" in p]
    posts = [p for m, p in made if m == "POST"]
    assert "configmaps" in posts[0] and "miniclusters" in posts[1]
    assert sum(1 for m, p in made if m == "PUT" and "configmaps" in p) == len(blocks) - 1
    assert cluster.configmaps == {} and cluster.miniclusters == {}
    # Every block's cells ran in it and are ordinary succeeded cells.
    for block in blocks:
        for topo in block["times"]:
            folder = raw / "4" / topo.replace(":", "-") / str(block["iteration"])
            record = json.loads((folder / "run.json").read_text())
            assert record["state"] == "succeeded"
            nested_in = record["nested_in"]
            assert nested_in["name"] == body["metadata"]["name"]
            assert nested_in["feed"] == feed


def test_a_batch_reads_back_as_the_driver_runs_it(tmp_path: Path) -> None:
    from experiments.model.render_nested import NestedCell, render_batch

    cells = [
        NestedCell("4/kary-2/1", "kary:2", 90, "echo two\n", (1 << 20,)),
        NestedCell("4/kary-1/1", "kary:1", 90, "echo one\n", (1 << 20,)),
    ]
    number, files = read_feed(render_batch(cells, 2))
    assert number == 2
    assert files["cells.sh"].splitlines() == [
        "kary_nested_cell '4/kary-2/1' 'kary:2' 90 'feed-2/cell-0.sh' 'random' 1048576",
        "kary_nested_cell '4/kary-1/1' 'kary:1' 90 'feed-2/cell-1.sh' 'random' 1048576",
    ]
    assert files["cell-0.sh"] == "echo two\n" and files["cell-1.sh"] == "echo one\n"
    with pytest.raises(ValueError, match="not a kary feed"):
        read_feed("something else\n")


def test_a_nested_race_interrupted_deletes_its_minicluster_and_feed(
    apiserver: Any, fast: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from experiments.backends.kubernetes import nested

    cluster = apiserver.cluster
    real_fed = nested.NestedLayout._fed
    calls = [0]

    def fed_then_interrupted(self: Any, *args: Any) -> bool:
        calls[0] += 1
        if calls[0] == 2:  # the third block's first cell: Ctrl-C
            raise KeyboardInterrupt
        return real_fed(self, *args)

    monkeypatch.setattr(nested.NestedLayout, "_fed", fed_then_interrupted)
    raw = tmp_path / "raw"
    result = _race(raw)
    assert result.exit_code == 130, result.output
    assert len(cluster.created) == 1
    assert cluster.configmaps == {} and cluster.miniclusters == {}
    # The same command resumes it in a new MiniCluster and feed.
    monkeypatch.setattr(nested.NestedLayout, "_fed", real_fed)
    again = _race(raw)
    assert again.exit_code in (0, 1), again.output
    assert len(cluster.created) == 2
    assert cluster.configmaps == {} and cluster.miniclusters == {}


def test_a_race_without_configmap_rights_is_refused_before_anything_is_made(
    apiserver: Any, fast: None, tmp_path: Path
) -> None:
    cluster = apiserver.cluster
    cluster.denied = {"update configmaps"}
    result = _race(tmp_path / "raw")
    assert result.exit_code == 2, result.output
    assert "update configmaps" in result.output and cluster.created == []


def test_a_race_reaps_a_feed_an_interrupted_race_left_and_no_one_elses(
    apiserver: Any, fast: None, tmp_path: Path
) -> None:
    from experiments.backends.kubernetes.feed import FEED_LABEL
    from experiments.backends.kubernetes.minicluster import MANAGED_BY
    from experiments.formats.labels import current_owner

    cluster = apiserver.cluster
    ours = {
        MANAGED_BY[0]: MANAGED_BY[1],
        "kary/owner": current_owner(),
        FEED_LABEL[0]: FEED_LABEL[1],
    }
    for name, labels in (("old-feed", ours), ("someone-elses", {"app": "other"})):
        cluster.configmaps[("default", name)] = {
            "metadata": {"name": name, "namespace": "default", "labels": labels},
            "data": {FEED_KEY: "kary-feed 0\n"},
        }
    raw = tmp_path / "raw"
    result = _race(raw)
    assert result.exit_code in (0, 1), result.output
    assert set(cluster.configmaps) == {("default", "someone-elses")}
    # Said once, in the run.json of the first cell after up().
    reaped = [json.loads(p.read_text()).get("reaped_leftovers") for p in raw.glob("4/*/0/run.json")]
    assert sorted(reaped, key=str) == [None, None, ["old-feed"]]


def _feed_loop_script(tmp_path: Path) -> str:
    """The rendered driver with each cell's run replaced by a line saying what it ran:
    its feed loop as it is, with no Flux needed."""
    from experiments.model.render_nested import Feed, NestedCell, render_nested

    base = {
        "kind": "MiniCluster",
        "metadata": {"name": "mc"},
        "spec": {"size": 2, "flux": {}, "containers": [{"command": "/bin/bash /k/entry.sh"}]},
    }
    cell = NestedCell("2/kary-1/0", "kary:1", 60, "true\n", (1 << 20,))
    driver = render_nested(base, 2, [cell], feed=Feed("mc-feed", poll_s=0.05, idle_s=1)).driver_sh
    stub = 'kary_nested_cell() { echo "RAN $1 $4"; }\n'
    # The stub after the driver's own definition, before its first call.
    head, calls = driver.split("\nkary_nested_cell '", 1)
    return head + "\n" + stub + "kary_nested_cell '" + calls


def test_the_drivers_feed_loop_runs_each_batch_once_then_stops_when_none_comes(
    tmp_path: Path,
) -> None:
    import subprocess

    from experiments.formats.nested_frame import split_frames
    from experiments.model.render_nested import NestedCell, render_batch

    script = tmp_path / "driver.sh"
    script.write_text(_feed_loop_script(tmp_path))
    feed = tmp_path / "feed"
    feed.mkdir()
    cells = [NestedCell(f"2/kary-2/{i}", "kary:2", 60, "true\n", (1 << 20,)) for i in (1, 2)]
    (feed / FEED_KEY).write_text(render_batch(cells, 1))
    env = {"PATH": "/usr/bin:/bin", "KARY_FEED": str(feed)}
    done = subprocess.run(
        ["bash", str(script)], env=env, capture_output=True, text=True, timeout=30
    )
    ran = [line for line in done.stdout.splitlines() if line.startswith("RAN ")]
    # The baked cell, then batch 1's two, each once though the feed stayed there.
    assert ran == [
        "RAN 2/kary-1/0 cell-0.sh",
        "RAN 2/kary-2/1 feed-1/cell-0.sh",
        "RAN 2/kary-2/2 feed-1/cell-1.sh",
    ], done.stdout + done.stderr
    frames = split_frames(done.stdout)
    assert frames.finished and frames.finished_why == "no batch of cells came for 1 s"
    assert (tmp_path / "feed-1" / "cell-1.sh").read_text() == "true\n"


def test_a_batch_that_will_not_unpack_ends_the_driver_with_its_reason(tmp_path: Path) -> None:
    import subprocess

    from experiments.backends.kubernetes.nested_group import frames_lost
    from experiments.formats.nested_frame import split_frames

    script = tmp_path / "driver.sh"
    script.write_text(_feed_loop_script(tmp_path))
    feed = tmp_path / "feed"
    feed.mkdir()
    (feed / FEED_KEY).write_text("kary-feed 1\nnot base64 at all!\n")
    done = subprocess.run(
        ["bash", str(script)],
        env={"PATH": "/usr/bin:/bin", "KARY_FEED": str(feed)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    frames = split_frames(done.stdout)
    assert frames.finished_why == "batch 1 of the feed would not unpack", done.stdout
    # kary, awaiting a fed cell the driver never began, says why the group broke.
    why = frames_lost(frames, ("2/kary-1/0", "2/kary-2/1"), "2/kary-2/1")
    assert why == (
        "the nested driver finished before cell 2/kary-2/1 began: "
        "batch 1 of the feed would not unpack"
    )
