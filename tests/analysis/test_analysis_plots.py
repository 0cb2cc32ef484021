"""Plots: one small tree, every expected PNG, failures drawn, stale plots replaced, no
interval where there are no repeats."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
from analysis_samples import kary_log, run_record, write_cell
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from typer.testing import CliRunner

import analysis.plots.figures as plots
from analysis import parse_tree
from experiments.cli import app
from experiments.formats.cell_layout import cell_id

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
    assert result.stdout == (
        "parsed 9 logs in 9 cells: 108 steps (1 failed, 11 void); 1 cell not succeeded "
        f"(1 failed): no timing from it; wrote {out}\n"
    )
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


def test_no_figure_outlives_its_png(
    small_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc
    import weakref

    # A real tree draws dozens of figures: each is dropped once its PNG is written.
    made: list[weakref.ref[Figure]] = []
    new_figure = plots._figure

    def tracked(figsize: tuple[float, float]) -> Figure:
        figure = new_figure(figsize)
        made.append(weakref.ref(figure))
        return figure

    monkeypatch.setattr(plots, "_figure", tracked)
    parsed = parse_tree(small_tree, tmp_path, plots=False).parsed
    plots.write_plots(parsed, tmp_path / "plots", jobs=1)
    gc.collect()
    assert len(made) == 7  # every plot of the small tree
    assert [ref for ref in made if ref() is not None] == []


def test_the_plot_theme_is_seaborns(tmp_path: Path) -> None:
    import matplotlib
    import seaborn as sns

    from analysis.plots.theme import COLORBLIND, THEME, colormap_palette, lut_palette

    with matplotlib.rc_context():
        sns.set_theme(style="whitegrid", context="notebook")
        expected = dict(matplotlib.rcParams)
    with matplotlib.rc_context(THEME):
        actual = dict(matplotlib.rcParams)
    # image.cmap is seaborn's "rocket", which matplotlib knows only once seaborn is
    # imported; no kary plot draws an image.
    expected.pop("image.cmap"), actual.pop("image.cmap")
    assert actual == expected
    assert [matplotlib.colors.to_hex(c) for c in sns.color_palette("colorblind")] == [
        c.lower() for c in COLORBLIND
    ]
    assert colormap_palette("viridis", 12) == list(sns.color_palette("viridis", 12))
    # rocket and mako are kept to 8 bits a channel, which is what gets drawn.
    for name in ("rocket", "mako"):
        for count in range(1, 40):
            expected_hex = [matplotlib.colors.to_hex(c) for c in sns.color_palette(name, count)]
            assert [matplotlib.colors.to_hex(c) for c in lut_palette(name, count)] == expected_hex


_DRAW_IN_CHILD = """
import sys
from pathlib import Path
from analysis import load_parsed
from analysis.plots.figures import start_plots
pending = start_plots(load_parsed(Path(sys.argv[1])), Path(sys.argv[2]), jobs=2)
names = [p.name for p in pending.wait()]
print("forked" if pending._forked is not None else "serial", *names)
"""


def test_forked_plots_are_the_serial_ones_byte_for_byte(small_tree: Path, tmp_path: Path) -> None:
    parsed = parse_tree(small_tree, tmp_path / "parsed", plots=False).parsed
    serial = plots.write_plots(parsed, tmp_path / "serial", jobs=1)
    # A fresh interpreter has one thread, so it may fork (pytest's may not).
    child = subprocess.run(
        [sys.executable, "-c", _DRAW_IN_CHILD, str(tmp_path / "parsed"), str(tmp_path / "forked")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    how, *names = child.stdout.split()
    assert how == "forked"
    assert names == [p.name for p in serial]
    for path in serial:
        assert (tmp_path / "forked" / path.name).read_bytes() == path.read_bytes(), path.name


def _bars(figure: Figure) -> list[np.ndarray]:
    """Every error bar drawn in the figure, as (2, 2) segments."""
    return [
        np.asarray(segment)
        for ax in figure.axes
        for collection in ax.collections
        if isinstance(collection, LineCollection)
        for segment in collection.get_segments()
    ]


def test_seconds_per_gb_draws_no_interval_across_sizes(small_tree: Path, tmp_path: Path) -> None:
    # Two sizes x three iterations: six values that are not six repeats of one thing.
    steps = parse_tree(small_tree, tmp_path, plots=False).parsed.events
    figure = plots._seconds_per_gb(steps, "distribute-all-nodes")
    try:
        assert _bars(figure) == []
        (ax,) = figure.axes
        assert "no interval: sizes are not repeated runs" in ax.get_title()
        assert len(ax.get_lines()) == 1  # one line of medians (4 nodes)
    finally:
        plt.close(figure)


def test_fewer_than_three_runs_draw_no_error_bar(tmp_path: Path) -> None:
    # kary:2 has three runs per size (an interval, 75% coverage); kary:1 has two (none).
    for topo, runs in (("kary:2", 3), ("kary:1", 2)):
        for it in range(runs):
            write_cell(
                tmp_path / "raw",
                cell_id(4, topo, it),
                kary_log(4, topo, it, seconds=1.0 + 0.1 * it),
                run_record(4, topo, it),
            )
    summary = parse_tree(tmp_path / "raw", tmp_path / "out", plots=False).parsed.summary
    figure = plots._time_vs_size(summary, "distribute-all-nodes")
    try:
        bars = _bars(figure)
        # One bar per size of kary:2, none for kary:1, and none of zero length.
        assert len(bars) == 2
        assert all(np.ptp(bar[:, 1]) > 0 for bar in bars)
        assert "bars: its interval, 75% coverage" in figure.get_suptitle()
    finally:
        plt.close(figure)
