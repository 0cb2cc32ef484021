"""Plots: one small tree, every expected PNG, failures drawn, stale plots replaced."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from analysis import parse_tree
from experiments.cli import app

runner = CliRunner()
PNG = b"\x89PNG\r\n\x1a\n"


def test_parse_draws_every_plot_of_a_small_tree(small_tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "parsed"
    (out / "plots").mkdir(parents=True)
    (out / "plots" / "time-vs-size-old-event.png").write_bytes(PNG)
    (out / "plots" / "mine.png").write_bytes(PNG)
    result = runner.invoke(app, ["parse", "--data", str(small_tree), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert result.stdout == f"parsed 9 logs in 9 cells: 108 steps (1 failed); wrote {out}\n"
    plots = sorted(p.name for p in (out / "plots").iterdir())
    assert plots == [
        "failures.png",
        "mine.png",  # not ours: left alone
        "seconds-per-gb-distribute-all-nodes.png",
        "time-vs-size-clean-all-nodes.png",
        "time-vs-size-create-archive.png",
        "time-vs-size-delete-archive-all-nodes.png",
        "time-vs-size-distribute-all-nodes.png",
        "time-vs-size-verify-distribute-all-nodes.png",
    ]
    for name in plots:
        data = (out / "plots" / name).read_bytes()
        assert data.startswith(PNG)
        assert name == "mine.png" or len(data) > 10_000


def test_ping_plot(flux_distribute: Path, tmp_path: Path) -> None:
    import matplotlib

    result = parse_tree(flux_distribute / "raw-ping-kind", tmp_path)
    assert matplotlib.get_backend().lower() == "agg"
    assert [p.name for p in result.written if p.suffix == ".png"] == ["ping-latency-vs-hops.png"]


def test_figures_are_closed_one_by_one(small_tree: Path, tmp_path: Path) -> None:
    import matplotlib
    import matplotlib.pyplot as plt

    # A real tree draws dozens of figures; holding them all open warns (an error here).
    with matplotlib.rc_context({"figure.max_open_warning": 2}):
        parse_tree(small_tree, tmp_path)
    assert plt.get_fignums() == []
