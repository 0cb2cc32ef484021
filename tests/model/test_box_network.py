"""The box's network terms: fitted across link speeds, they predict speeds and sizes unseen."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from experiments.cli import app
from experiments.errors import UserError
from experiments.estimate.box_network import BoxObservation, fit_box_network
from experiments.estimate.defaults import default_time_model
from experiments.estimate.plan_estimate import with_emulated_links
from experiments.estimate.structure import cell_steps, step_seconds
from experiments.model.links import link_settings
from experiments.model.plan import Cell

MIB = 2**20


def _synthetic(nodes: int, topo: str, mbit: float, truth: tuple[float, ...]) -> BoxObservation:
    blank = BoxObservation(nodes, topo, 64 * MIB, mbit * 1e6 / 8, 0.0)
    seconds = sum(c * f for c, f in zip(truth, blank.features(), strict=True))
    return BoxObservation(nodes, topo, 64 * MIB, mbit * 1e6 / 8, seconds)


def test_features_are_the_busiest_senders_copies_the_depth_and_the_ranks() -> None:
    flat = BoxObservation(16, "kary:15", 64 * MIB, 12.5e6, 1.0).features()
    assert flat[0] == pytest.approx(15 * 64 * MIB / 12.5e6)
    assert flat[1] == pytest.approx(MIB / 12.5e6)  # depth 1
    assert flat[2] == pytest.approx(15 / 16)  # 15 ranks x 1/16 GB
    chain = BoxObservation(16, "kary:1", 64 * MIB, 12.5e6, 1.0, root_bandwidth=125e6).features()
    assert chain[0] == pytest.approx(64 * MIB / 12.5e6)  # rank 1's link, not rank 0's fast one
    assert chain[1] == pytest.approx(15 * MIB / 12.5e6)


def test_a_fit_at_two_speeds_recovers_the_terms_and_predicts_a_third() -> None:
    truth = (1.2, 1.0, 3.0, 0.4)
    seen = [
        _synthetic(n, t, mbit, truth)
        for n, topos in ((8, ("kary:1", "kary:2", "kary:7")), (16, ("kary:1", "kary:4")))
        for t in topos
        for mbit in (50, 100)
    ]
    fit = fit_box_network(seen)
    assert fit.coefficients == pytest.approx(truth, rel=1e-6)
    unseen = _synthetic(16, "kary:15", 200, truth)
    predicted, low, high = fit.predict(unseen)
    assert predicted == pytest.approx(unseen.seconds, rel=1e-6)
    # Noise-free: every ratio is 1, so the band is [1, 1] up to rounding.
    assert (low, high) == pytest.approx((unseen.seconds, unseen.seconds), rel=1e-9)


def test_the_band_is_the_spread_between_sweeps_which_residuals_understate() -> None:
    """Each sweep (node count, link speed) off the model by its own factor, as real ones
    are: within a sweep the fit looks exact, between sweeps it is not, and only the
    between-sweeps band holds a sweep it never saw."""
    truth = (1.2, 1.0, 3.0, 0.4)
    bias = {(8, 50): 0.92, (8, 100): 1.07, (16, 50): 1.04, (16, 100): 0.95}
    seen = [
        BoxObservation(o.nodes, o.topo, o.size_bytes, o.bandwidth, o.seconds * bias[(n, mbit)])
        for (n, mbit) in bias
        for t in ("kary:1", "kary:2", "kary:4")
        for o in [_synthetic(n, t, mbit, truth)]
    ]
    residuals = fit_box_network(seen, interval="residuals")
    between = fit_box_network(seen)
    assert between.interval == "between sweeps" and residuals.interval == "residuals"
    assert between.n == residuals.n == 12
    assert between.high_ratio - between.low_ratio > residuals.high_ratio - residuals.low_ratio
    unseen = _synthetic(12, "kary:2", 75, truth)
    off = BoxObservation(12, "kary:2", 64 * MIB, unseen.bandwidth, unseen.seconds * 0.93)
    _, low, high = between.predict(off)
    assert low <= off.seconds <= high
    # Fewer than three sweeps: nothing to leave out, so the residuals' band, said so.
    two = [o for o in seen if o.nodes == 8]
    assert fit_box_network(two).interval == "residuals"


def test_too_few_distributions_cannot_be_fitted() -> None:
    with pytest.raises(UserError, match="at least 4 distributions, got 1"):
        fit_box_network([_synthetic(4, "kary:1", 50, (1, 1, 1, 1))])


def test_a_model_with_box_terms_prices_a_distribution_from_them() -> None:

    links = link_settings("100Mbit", None)
    model = with_emulated_links(default_time_model("flux", place="box"), links)
    fitted = model.model_copy(update={"box_terms": (1.5, 2.0, 3.0, 0.5)})
    (step,) = [
        s
        for s in cell_steps(Cell(16, "kary:4", 0, (64 * MIB,), ("all",)), False)
        if s.part == "distribute"
    ]
    rate = 0.1e9 / 8
    # kary:4 on 16: rank 0 has 4 children, depth 2, 15 ranks reached.
    expected = 1.5 * 4 * 64 * MIB / rate + 2.0 * 2 * MIB / rate + 3.0 * 15 / 16 + 0.5
    assert step_seconds(step, fitted) == pytest.approx(expected)
    assert step_seconds(step, model) != pytest.approx(expected)


@pytest.mark.usefixtures("flux_box_here")
def test_a_box_plan_fits_its_network_terms_from_box_history() -> None:

    history = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "box-sweeps"
    args = ["plan", "--place", "box", "--exact-nodes", "16", "--topo", "kary:2"]
    args += ["--sizes", "64M", "--link-bandwidth", "100Mbit", "--history", str(history)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert re.search(
        r"box network terms fitted on \d+ box distributions at 50, 75, 100 Mbit/s", result.stdout
    )
    # Without box history the same plan keeps the store-and-forward defaults.
    plain = CliRunner().invoke(app, args[:-2])
    assert "box network terms" not in plain.stdout
